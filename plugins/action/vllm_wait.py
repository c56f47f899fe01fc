# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_wait: with progress_interval, one task waits for vLLM in the background and
prints where the start is (plugin_utils/background.py); without it, the module runs as any module does."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.plugin_utils.background import ProgressAction


class ActionModule(ProgressAction, ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True
    MODULE = "jetson.specdec.vllm_wait"
    DEFAULT_LABEL = "vLLM start"

    def bound(self, args):
        """The module gives up after its timeout (a crash loop sooner)."""
        timeout = int(args.get("timeout") or 900)
        return timeout + 60, timeout + 120

    def run(self, tmp=None, task_vars=None):
        return self.run_module(super(ActionModule, self).run(tmp, task_vars), task_vars)
