# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_wait: with progress_interval, one task waits for vLLM in the background and
prints where the start is (plugin_utils/background.py); without it, the module runs as any module does."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.plugin_utils.background import ProgressAction, START_LABEL, wait_bounds


class ActionModule(ProgressAction):

    MODULE = "jetson.specdec.vllm_wait"
    DEFAULT_LABEL = START_LABEL
    bound = staticmethod(wait_bounds)
