# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Name the cause of a failed vLLM start from its log text (pure, stdlib only).

The rollout's fallback ladder picks its next rung by cause (less memory, a smaller
drafter, no speculation, stop), so the causes are a small closed set.  The patterns are vLLM's
own texts: the 0.32 source the real lane runs (vllm/config/speculative.py,
vllm/v1/worker/gpu_model_runner.py), the texts older releases print (issues
#31883, #28384, #22152) and the Hugging Face Hub's download errors.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# What a failed start looks like in vLLM's log, most specific first: a missing draft
# is reported inside SpeculativeConfig's validation error, so model_not_found is
# looked for before rejected_speculative_config.
_CAUSES = (
    # The KV cache does not fit in what gpu_memory_utilization leaves after weights and activations
    # (vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory; the V0 worker's
    # raise_if_cache_size_invalid). A lower utilization leaves less: the ladder frees drafter
    # memory first (launch/ladder.py).
    ("kv_cache_shortfall", (r"No available memory for the cache blocks",
                            r"larger than the available KV cache memory",
                            r"larger than the maximum number of tokens that can be stored in KV cache")),
    ("out_of_memory", (r"Free memory on device .* is less than desired GPU memory utilization",
                       r"CUDA out of memory", r"CUDA error: out of memory", r"OutOfMemoryError",
                       # Jetson's unified memory allocator (nvmap) refusing an allocation: ENOMEM (12),
                       # "NvMapMemAllocInternalTagged: 1075072515 error 12", "NvMapMemHandleAlloc: error 12".
                       r"NvMap\w*: (?:\d+ )?error 12\b",
                       # PyTorch's caching allocator when NVML cannot answer on an exhausted Jetson
                       # ("NVML_SUCCESS == r INTERNAL ASSERT FAILED at .../CUDACachingAllocator.cpp").
                       r"NVML_SUCCESS == r INTERNAL ASSERT FAILED",
                       # vLLM 0.32 (v1/worker/utils.py request_memory) with weights held by another process.
                       r"budget after excluding external process",
                       r"Externally held weights on device .* exceed the desired GPU memory utilization",
                       r"Out of memory: Killed process", r"oom-kill", r"status=9/KILL")),
    ("model_not_found", (r"Invalid repository ID or local directory", r"Repository Not Found",
                         r"does not appear to have a file named", r"is not a local folder and is not a valid model",
                         r"Cannot access gated repo", r"401 Client Error", r"LocalEntryNotFoundError",
                         r"We couldn't connect to 'https://huggingface\.co'",
                         # the hf CLI (huggingface_hub 2.x) of jetson.specdec.vllm_prefetch
                         r"Model '[^']*' not found", r"Model '[^']*' requires approval",
                         r"offline mode is enabled")),
    ("rejected_speculative_config", (
        # vLLM 0.32 SpeculativeConfig: a draft with another tokenizer.
        r"Target and draft model should have the same vocabulary size",
        # V1 before draft_model came back (<= 0.13): two wordings.
        r"Speculative decoding with draft model is not supported",
        r"Draft model speculative decoding is not supported",
        # EAGLE-3 with a target that cannot hand out its hidden states.
        r"Model does not support EAGLE3 interface", r"Eagle3 is only supported",
        r"Unsupported speculative method", r"is not a valid argument in the speculative_config",
        r"num_speculative_tokens was provided but without speculative model",
        r"must be <= prompt_lookup_max", r"cannot be other value than 1 or target model tensor_parallel_size",
        r"Arctic Inference is required for suffix decoding",
        r"speculative[-_]config", r"SpeculativeConfig", r"num_speculative_tokens")),
    ("bad_arguments", (r"unrecognized arguments", r"error: argument", r"invalid choice")),
)

# health_timeout is vllm_wait's own: nothing in the log named a cause before the deadline.
FAILURE_CAUSES = tuple(cause for cause, _patterns in _CAUSES) + ("health_timeout", "unknown")

# vLLM echoes its arguments at INFO level ("non-default args: {... 'speculative_config': ...}"),
# so every failed speculative start would look like a rejected config: only the other
# lines (errors, tracebacks, warnings, systemd) are read.
_CHATTER = re.compile(r"^\s*(?:\([^)]*\)\s*)?(?:INFO|DEBUG)\s+\d\d-\d\d \d\d:\d\d:\d\d\b")


# journalctl's default output (short, short-iso, short-precise) puts "date host unit[pid]: " before each
# line; read without `-o cat`, the INFO lines would no longer look like chatter (issue 33).
_JOURNAL_PREFIX = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?) \S+ [^\s:\[]+(?:\[\d+\])?: ")


def _meaningful(text):
    lines = (_JOURNAL_PREFIX.sub("", line, count=1) for line in (text or "").splitlines())
    return "\n".join(line for line in lines if not _CHATTER.match(line))


# The last-resort words of rejected_speculative_config name no error, only the subject; vLLM's
# advice at WARNING level mentions it on good starts too ("max_num_scheduled_tokens is set to 2048
# based on the speculative decoding settings ... or decrease num_speculative_tokens"), so a start
# that was only slow would read as a rejected config. These words count on other lines only.
_BROAD = frozenset((r"speculative[-_]config", r"SpeculativeConfig", r"num_speculative_tokens"))
_WARNING = re.compile(r"^\s*(?:\([^)]*\)\s*)?WARNING\s+\d\d-\d\d \d\d:\d\d:\d\d\b")


def classify_failure(log_text):
    """Name the cause of a failed start from its journal text: one of FAILURE_CAUSES."""
    return failure_evidence(log_text)["cause"]


def failure_evidence(log_text):
    """{cause, line}: the cause and the first log line that shows it (vLLM's own words), or None."""
    text = _meaningful(log_text)
    no_warnings = "\n".join(line for line in text.splitlines() if not _WARNING.match(line))
    for cause, patterns in _CAUSES:
        for pattern in patterns:
            searched = no_warnings if pattern in _BROAD else text
            match = re.search(pattern, searched)
            if match:
                start = searched.rfind("\n", 0, match.start()) + 1
                end = searched.find("\n", match.end())
                line = searched[start:end if end >= 0 else len(searched)].strip()
                return {"cause": cause, "line": line[:500]}
    return {"cause": "unknown", "line": None}
