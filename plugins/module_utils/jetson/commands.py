# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Find and run a Jetson tool (nvpmodel, jetson_clocks, docker, vllm) on the host or under a sysroot.

Under a root other than ``/`` the tools are looked up in that tree only (a simulated
board's stand-ins), never on the host: the host's own nvpmodel describes another board.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

ROOT_BIN_DIRS = ("usr/sbin", "usr/bin", "sbin", "bin", "usr/local/bin")


def finder(module, root, under_root):
    """Return find(name) -> the executable's path, or None."""
    if not under_root:
        return lambda name: module.get_bin_path(name, opt_dirs=["/usr/sbin", "/sbin"])

    def find_under_root(name):
        for directory in ROOT_BIN_DIRS:
            candidate = os.path.join(root, directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        return None
    return find_under_root


def make_runner(module, root, probe_commands, probe_under_root, timeout):
    """Return runner(name, args, data=None) -> (rc, out, err) | None (tool not found), or None when
    commands are off (``probe_commands`` false, or a sysroot without ``probe_under_root``)."""
    at_host_root = os.path.realpath(root) == "/"
    if not probe_commands or (not at_host_root and not probe_under_root):
        return None
    find = finder(module, root, not at_host_root)
    timeout_bin = module.get_bin_path("timeout")

    def run(name, args, data=None):
        path = find(name)
        if not path:
            return None
        command = ([timeout_bin, str(timeout)] if timeout_bin else []) + [path] + list(args)
        return module.run_command(command, check_rc=False, data=data, binary_data=data is not None,
                                  environ_update={"LANG": "C", "LC_ALL": "C"})
    return run
