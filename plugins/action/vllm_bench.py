# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_bench: with progress_interval, one task runs the benchmark in the background
and prints where it is (plugin_utils/background.py); without it, the module runs as any module does."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.plugin_utils.background import ProgressAction


class ActionModule(ProgressAction, ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True
    MODULE = "jetson.specdec.vllm_bench"
    DEFAULT_LABEL = "benchmark"

    def bound(self, args):
        """The module stops itself after max_duration; the job may take a little longer to write its result."""
        duration = int(float(args.get("max_duration") or 3600))
        return duration + 120, duration + 180

    def run(self, tmp=None, task_vars=None):
        return self.run_module(super(ActionModule, self).run(tmp, task_vars), task_vars)
