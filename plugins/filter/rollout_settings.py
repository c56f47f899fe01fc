# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The rollout's settings check; logic in module_utils/verdict/settings.py.

The launch fact (vllm_server_launch) is planned by the action jetson.specdec.vllm_plan (and vllm_switch),
not by a filter: the plan, the memory check on the host and the refusal are one task.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.settings import (
    SettingsError,
    rollout_settings as _rollout_settings,
)


def rollout_settings(bench, verdict, ttft=None):
    """The rollout's benchmark and verdict settings, checked (the failure names the variable and the fix)."""
    try:
        return _rollout_settings(plain(bench), plain(verdict), plain(ttft))
    except SettingsError as exc:
        raise AnsibleFilterError("jetson.specdec.rollout_settings: %s" % exc)


class FilterModule(object):
    """The rollout settings filter of jetson.specdec."""

    def filters(self):
        return {
            "rollout_settings": rollout_settings,
        }
