# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The options of the planning step that vllm_plan is and vllm_switch starts with (plugins/plugin_utils/planning.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  launch_input:
    description: The inputs of the launch plan (the role's C(__vllm_server_launch_input)).
    type: dict
    required: true
  check_memory:
    description: Check the speculative candidate's memory on the host with M(jetson.specdec.spec_headroom) when the rules allow it.
    type: bool
    default: false
  memory:
    description:
      - Options of M(jetson.specdec.spec_headroom) other than C(speculative_config) and C(gpu_memory_utilization),
        which come from the plan. Unset (null) options are left out.
    type: dict
    default: {}
  reclaim_baseline:
    description:
      - Count the planned baseline's allocation (its C(gpu_memory_utilization) of C(memory.memory_total_bytes)) as free
        memory instead of C(memory.reclaimable_bytes), because the running baseline is what the candidate replaces.
    type: bool
    default: false
"""
