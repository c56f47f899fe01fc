# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""What vllm_server reads on a host before it plans (stdlib only, Python 3.8+): pure, no I/O.

The module jetson.specdec.vllm_host_info reads the files and runs ``systemctl --version``; these
functions turn what it read into its result: the service account and the role's marker
(launch/host_checks.py decides on them), systemd (booted, and its version for ProtectClock=), and the
config.json of local target and draft models (launch/compat.py compares them).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re


def systemd_version(text):
    """The version number of ``systemctl --version``'s first line ("systemd 252 (252.22-1~deb12u1)"), or None."""
    first = (text or "").strip().splitlines()[:1]
    match = re.match(r"systemd\s+(\d+)", first[0]) if first else None
    return int(match.group(1)) if match else None


def account(name, pw_uid, marker):
    """The service account: whether passwd has it, its uid, whether the role's marker says the role created it."""
    exists = pw_uid is not None
    return {"name": name, "exists": exists, "uid": pw_uid if exists else None, "created_by_role": bool(exists and marker)}


def local_model_paths(paths):
    """The local directories among the target and draft (absolute paths; a hub id has no config.json here)."""
    out = []
    for path in paths or []:
        if isinstance(path, str) and path.startswith("/") and path not in out:
            out.append(path)
    return out


def model_config(path, text):
    """(config, warning): a config.json's content (text or bytes) as a dict, or why it is left out of the comparison."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, "%s/config.json is not JSON (%s): the draft/target compatibility check skips it." % (path, exc)
    if not isinstance(data, dict):
        return None, "%s/config.json is not a JSON object: the draft/target compatibility check skips it." % path
    return data, None


# The line the role's unit template writes (templates/vllm.service.j2). A unit file of the service's
# name without it is not the collection's, and the role never replaces it (host.unit_not_ours).
UNIT_MARKER = "# jetson.specdec.vllm_server unit"
# Units written before the marker existed carry the template's description line instead.
_LEGACY_UNIT_LINE = re.compile(r"^# Board family: [^\n]*; speculation: ", re.M)
# Where systemd looks for <name>.service (systemd.unit(5), system manager): a file in any of them is
# a unit of that name that /etc/systemd/system/<name>.service would replace or override.
UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
             "/lib/systemd/system", "/usr/lib/systemd/system")


def unit_written_by_collection(text):
    """Whether a unit file's text (its first 4 KiB are enough) is one the role wrote."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return any(line.startswith(UNIT_MARKER) for line in text.splitlines()) or bool(_LEGACY_UNIT_LINE.search(text))


def unit(name, found, ours):
    """The service's unit on the host: ``found`` the unit files of that name, ``ours`` whether the only one is
    the role's own file under /etc/systemd/system (with its marker)."""
    return {"name": name, "paths": list(found), "exists": bool(found), "written_by_collection": bool(found) and ours}
