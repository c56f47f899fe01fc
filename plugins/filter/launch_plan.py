# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The filters that build the published launch fact (vllm_server_launch); logic in module_utils/launch/plan.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.launch.plan import (
    LaunchPlanError,
    launch_plan,
    rollout_settings as _rollout_settings,
    with_headroom,
)


def vllm_server_launch(inputs):
    """Baseline and candidate launch, fallback rungs, URL and health settings of one host."""
    try:
        return launch_plan(plain(inputs))
    except LaunchPlanError as exc:
        raise AnsibleFilterError("jetson.specdec.vllm_server_launch: %s" % exc)


def vllm_server_launch_headroom(launch, headroom):
    """The launch fact with the candidate's memory headroom check folded in."""
    # a skipped check (speculation not planned) changes nothing
    checked = isinstance(headroom, dict) and not headroom.get("skipped")
    return with_headroom(plain(launch), plain(headroom) if checked else None)


def rollout_settings(bench, verdict, ttft=None):
    """The rollout's benchmark and verdict settings, checked (the failure names the variable and the fix)."""
    try:
        return _rollout_settings(plain(bench), plain(verdict), plain(ttft))
    except LaunchPlanError as exc:
        raise AnsibleFilterError("jetson.specdec.rollout_settings: %s" % exc)


class FilterModule(object):
    """Launch-fact filters of jetson.specdec."""

    def filters(self):
        return {
            "vllm_server_launch": vllm_server_launch,
            "vllm_server_launch_headroom": vllm_server_launch_headroom,
            "rollout_settings": rollout_settings,
        }
