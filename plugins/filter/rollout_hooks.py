# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The operator's hook points, checked on the controller; logic in module_utils/common/hooks.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.common.hooks import HookError, check
from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain


def rollout_hooks(hooks):
    """``{before_host, before_restart, after_host}`` -> the same, each an absolute readable task file or ""."""
    try:
        return check(plain(hooks))
    except HookError as exc:
        raise AnsibleFilterError("jetson.specdec.rollout_hooks: %s" % exc)


class FilterModule(object):
    """The rollout hooks filter of jetson.specdec."""

    def filters(self):
        return {
            "rollout_hooks": rollout_hooks,
        }
