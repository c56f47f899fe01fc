# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_bench: with progress_interval, one task runs the benchmark in the background
and prints where it is (plugin_utils/background.py); without it, the module runs as any module does."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.plugin_utils.background import ProgressAction, bench_bounds


class ActionModule(ProgressAction):

    MODULE = "jetson.specdec.vllm_bench"
    DEFAULT_LABEL = "benchmark"
    bound = staticmethod(bench_bounds)
