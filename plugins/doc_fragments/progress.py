# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The options of a module whose action plugin runs it in the background and prints its progress
(vllm_bench, vllm_wait; plugins/plugin_utils/background.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: With O(progress_interval) the action runs the module in the background and waits for it on the controller.
options:
  progress_interval:
    description:
      - Run the module in the background and print a line from O(progress_path) every this many seconds (0 prints
        none) until it ends, in one task - what an C(async) task and M(jetson.specdec.vllm_job_wait) do in two.
      - Read by the action plugin on the controller; needs O(progress_path). Not with C(async) on the task (then the
        module runs as the task says).
    type: int
  progress_label:
    description:
      - What the progress lines call this run (with O(progress_interval)). Unset - C(benchmark) for
        M(jetson.specdec.vllm_bench), C(vLLM start) for M(jetson.specdec.vllm_wait).
    type: str
"""
