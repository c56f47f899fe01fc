# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""A failed start's cause, named from vLLM's log text."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.vllm.failure import FAILURE_CAUSES, classify_failure


@pytest.mark.parametrize("log,cause", [
    ("ValueError: Free memory on device (5.84/7.44 GiB) on startup is less than desired GPU memory utilization",
     "out_of_memory"),
    ("ValueError: To serve at least one request ... is larger than the available KV cache memory", "out_of_memory"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate", "out_of_memory"),
    ("pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig", "rejected_speculative_config"),
    ("num_speculative_tokens\n  Input should be greater than 0", "rejected_speculative_config"),
    ("OSError: Invalid repository ID or local directory specified: '/models/nope'", "model_not_found"),
    ("vllm serve: error: unrecognized arguments: --bogus", "bad_arguments"),
    ("everything is fine", "unknown"),
    ("", "unknown"),
])
def test_classify_failure(log, cause):
    assert classify_failure(log) == cause


def test_every_named_cause_is_in_the_closed_set():
    assert set(FAILURE_CAUSES) == {"out_of_memory", "rejected_speculative_config", "model_not_found",
                                   "bad_arguments", "unknown"}
