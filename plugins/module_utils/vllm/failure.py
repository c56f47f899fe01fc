# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Name the cause of a failed vLLM start from its log text (pure, stdlib only).

The rollout's fallback ladder picks its next rung by cause (less memory, no
speculation, stop), so the causes are a small closed set.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# What a failed start looks like in vLLM's log, most specific first.
_CAUSES = (
    ("out_of_memory", (r"Free memory on device .* is less than desired GPU memory utilization",
                       r"larger than the available KV cache memory", r"No available memory for the cache blocks",
                       r"CUDA out of memory", r"OutOfMemoryError", r"Out of memory: Killed process",
                       r"oom-kill", r"status=9/KILL")),
    ("rejected_speculative_config", (r"speculative[-_]config", r"SpeculativeConfig", r"num_speculative_tokens",
                                     r"Unsupported speculative method", r"Eagle3 is only supported")),
    ("model_not_found", (r"Invalid repository ID or local directory", r"Repository Not Found",
                         r"does not appear to have a file named", r"is not a local folder and is not a valid model")),
    ("bad_arguments", (r"unrecognized arguments", r"error: argument", r"invalid choice")),
)

FAILURE_CAUSES = tuple(cause for cause, _patterns in _CAUSES) + ("unknown",)


def classify_failure(log_text):
    """Name the cause of a failed start from its journal text: one of FAILURE_CAUSES."""
    text = log_text or ""
    for cause, patterns in _CAUSES:
        for pattern in patterns:
            if re.search(pattern, text):
                return cause
    return "unknown"
