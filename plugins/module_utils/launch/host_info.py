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
