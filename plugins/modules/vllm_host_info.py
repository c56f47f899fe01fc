#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_host_info
short_description: Read what the vllm_server role needs to know about a host before it plans
version_added: 0.1.0
description:
  - Reads, without changing anything, what the preflight of M(jetson.specdec.vllm_server) decides on
    before it plans a launch, in one task instead of one per read.
  - The service account O(user) (is it in passwd, its uid) and whether the role's marker file O(account_marker)
    says the role created it (the role never takes over an account it did not create).
  - Whether systemd runs the host (C(/run/systemd/system) is a directory, as sd_booted(3) decides) and its version
    (the unit sets C(ProtectClock=) only from systemd 253 on).
  - The C(config.json) of the local model directories in O(models) (a hub id is skipped), which the launch plan
    compares (vocabulary, model type) between a draft and its target. A C(config.json) that is not a regular file
    (a FIFO) or a link out of its model directory is skipped with a warning, never opened blocking or followed.
  - The unit files of O(service_name), so that the role never replaces a unit it did not write (C(ssh.service)).
author: jetson.specdec contributors (@jetson-specdec)
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: Only reads.
options:
  user:
    description: The service account to look up; unset for the container runtime (no account on the host).
    type: str
  account_marker:
    description: The marker file the role writes when it creates O(user).
    type: path
  models:
    description: The target and draft models; the absolute paths among them are read as local directories.
    type: list
    elements: str
    default: []
  service_name:
    description:
      - The service's name (C(vllm_server_service_name)); its unit files are looked up in systemd's search path
        (C(/etc/systemd/system), C(/run/systemd/system), C(/usr/local/lib/systemd/system), C(/lib/systemd/system),
        C(/usr/lib/systemd/system)) and the one under C(/etc) is read for the role's marker line.
    type: str
"""

EXAMPLES = r"""
- name: Read the service account, systemd and the local model configs
  jetson.specdec.vllm_host_info:
    user: vllm
    account_marker: /etc/vllm/accounts/vllm
    models: [/opt/models/Qwen3-8B, /opt/models/Qwen3-0.6B]
  register: host_info
"""

RETURN = r"""
account:
  description: The service account (all false or null when O(user) is unset).
  returned: always
  type: dict
  contains:
    name:
      description: O(user).
      type: str
      returned: always
    exists:
      description: Whether passwd has the account.
      type: bool
      returned: always
    uid:
      description: Its uid (null when it does not exist).
      type: int
      returned: always
    created_by_role:
      description: Whether it exists and the role's marker file is there.
      type: bool
      returned: always
  sample: {name: vllm, exists: true, uid: 998, created_by_role: true}
systemd:
  description: Whether systemd runs the host, and its version (null when C(systemctl) is missing or says no number).
  returned: always
  type: dict
  sample: {booted: true, version: 255}
model_configs:
  description: The content of each local model directory's C(config.json) that could be read, by directory.
  returned: always
  type: dict
  sample: {/opt/models/Qwen3-8B: {model_type: qwen3, vocab_size: 151936}}
unit:
  description:
    - The unit files named O(service_name)C(.service) and whether the collection wrote them (the only one is
      C(/etc/systemd/system/<name>.service), a regular file with the role's marker line). All empty or false
      when O(service_name) is unset.
  returned: always
  type: dict
  sample: {name: vllm, paths: [/etc/systemd/system/vllm.service], exists: true, written_by_collection: true}
"""

import os
import pwd
import re
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.launch import host_info
from ansible_collections.jetson.specdec.plugins.module_utils.launch.safetensors import (
    MAX_JSON_BYTES,
    ModelFileError,
    open_model_file,
)

SD_BOOTED_DIR = "/run/systemd/system"


def _uid(user):
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


def _configs(module, paths):
    configs = {}
    for path in host_info.local_model_paths(paths):
        config_path = os.path.join(path, "config.json")
        if not os.path.lexists(config_path):
            continue  # not a local directory here: the plan describes it from the catalog
        try:
            # bytes: json detects the encoding, and an undecodable file is a ValueError like bad JSON.
            # open_model_file: a FIFO does not block this root task, a link out of the model's directory
            # is not followed, and the read is bounded.
            handle, dummy = open_model_file(config_path, path)
            with handle:
                text = handle.read(MAX_JSON_BYTES + 1)
        except ModelFileError as exc:
            module.warn("%s; the draft/target compatibility check skips it." % exc)
            continue
        except (IOError, OSError):
            continue  # not readable: the plan describes it from the catalog
        config, warning = host_info.model_config(path, text)
        if warning:
            module.warn(warning)
        else:
            configs[path] = config
    return configs


def _unit(module, name):
    """Every unit file named <name>.service in systemd's search path, and whether the role wrote it."""
    if not name:
        return host_info.unit(None, [], False)
    found, seen, ours = [], set(), False
    for directory in host_info.UNIT_DIRS:
        path = os.path.join(directory, name + ".service")
        real_dir = os.path.realpath(directory)
        if real_dir in seen or not os.path.lexists(path):
            continue  # /lib is /usr/lib on a merged-/usr system
        seen.add(real_dir)
        found.append(path)
    etc = os.path.join(host_info.UNIT_DIRS[0], name + ".service")
    if found == [etc]:
        try:
            # a regular file only (O_NOFOLLOW | O_NONBLOCK): a link or a FIFO is not the role's unit
            fd = os.open(etc, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                ours = stat.S_ISREG(os.fstat(fd).st_mode) and host_info.unit_written_by_collection(os.read(fd, 4096))
            finally:
                os.close(fd)
        except OSError:
            ours = False
    return host_info.unit(name, found, ours)


def run(module):
    params = module.params
    if params["service_name"] is not None and not re.match(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z", params["service_name"]):
        module.fail_json(msg="vllm_host_info: service_name %r is not a plain unit name (the role's input check "
                             "input.service_name refuses it first)." % (params["service_name"],))
    user = params["user"]
    uid = _uid(user) if user else None
    marker = bool(params["account_marker"]) and os.path.exists(params["account_marker"])
    systemctl = module.get_bin_path("systemctl")
    version = None
    if systemctl:
        rc, out, dummy = module.run_command([systemctl, "--version"])
        version = host_info.systemd_version(out) if rc == 0 else None
    module.exit_json(changed=False, account=host_info.account(user, uid, marker),
                     systemd={"booted": os.path.isdir(SD_BOOTED_DIR), "version": version},
                     model_configs=_configs(module, params["models"]),
                     unit=_unit(module, params["service_name"]))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            user=dict(type="str"),
            account_marker=dict(type="path"),
            models=dict(type="list", elements="str", default=[]),
            service_name=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
