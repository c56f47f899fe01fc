# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""systemd quoting filters for the unit templates of the vllm_server and pull_mode roles.

Each filter is documented in a sidecar file next to this one (``<filter name>.yml``),
the layout ansible-core uses for its own filters.  The logic lives in
module_utils/launch/systemd.py so the same code is unit-tested and usable from modules.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.launch.systemd import (
    SystemdQuoteError, systemd_command_line, systemd_quote,
)


def _wrap(func, name):
    def filter_func(*args, **kwargs):
        try:
            return func(*[plain(a) for a in args], **dict((k, plain(v)) for k, v in kwargs.items()))
        except SystemdQuoteError as exc:
            raise AnsibleFilterError("jetson.specdec.%s: %s" % (name, exc))
    filter_func.__name__ = name
    filter_func.__doc__ = func.__doc__
    return filter_func


class FilterModule(object):
    """jetson.specdec systemd quoting filters."""

    def filters(self):
        return {
            "systemd_quote": _wrap(systemd_quote, "systemd_quote"),
            "systemd_command_line": _wrap(systemd_command_line, "systemd_command_line"),
        }
