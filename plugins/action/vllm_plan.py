# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_plan: the launch plan, the candidate's memory and the refusal as one task.

The role's preflight plans every launch here (published as the fact vllm_server_launch), and its switch
entry point (jetson.specdec.vllm_switch) starts with the same step (plugin_utils/planning.py). Nothing
on the host changes: the memory check only reads.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.plugin_utils.planning import PlanAction


class ActionModule(PlanAction):
    WHO = "jetson.specdec.vllm_plan"
