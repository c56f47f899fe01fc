# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""A failed start's cause, named from vLLM's log text (vLLM's exact words)."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.vllm.failure import (
    FAILURE_CAUSES, classify_failure, failure_evidence,
)

# vLLM echoes its arguments at INFO level; every speculative start has this line.
ARGS_LINE = ("(APIServer pid=22731) INFO 11-30 20:01:51 [api_utils.py:286] non-default args: {'model': "
             "'/models/target', 'speculative_config': {'method': 'draft_model', 'model': '/models/draft', "
             "'num_speculative_tokens': 3}}")
TRACE_TAIL = ("  File \"/venv/lib/python3.11/site-packages/vllm/engine/arg_utils.py\", line 2099, in "
              "create_speculative_config\n"
              "    return SpeculativeConfig(**self.speculative_config)\n"
              "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n")

# The real lane's vLLM 0.32 (tests/vllm_lane/test_invalid_configs.py case other_vocab), verbatim.
VOCAB_MISMATCH = (
    "  Value error, Target and draft model should have the same vocabulary size. Target model vocab_size=1024. "
    "Draft model vocab_size=2048. Using models with different tokenizers can cause out-of-bounds errors during "
    "speculative decoding. [type=value_error, input_value=ArgsKwargs((), {'method':...very_timeout_sec=120))}), "
    "input_type=ArgsKwargs]")
# The real lane's vLLM 0.32, a draft directory that does not exist (case missing_draft_dir), verbatim.
MISSING_DRAFT = ("  Value error, Invalid repository ID or local directory specified: "
                 "'/models/no-such-draft'.\nPlease verify the following requirements:")
# vLLM <= 0.13 (V1 without draft_model), from vllm-project/vllm#31883 and #28384.
DRAFT_UNSUPPORTED = ("NotImplementedError: Speculative decoding with draft model is not supported yet. Please "
                     "consider using other speculative decoding methods such as ngram, medusa, eagle, or mtp.")
DRAFT_UNSUPPORTED_OLD = ("NotImplementedError: Speculative decoding with draft model is not supported yet. Please "
                         "consider using other speculative decoding methods such as ngram, medusa, eagle, or "
                         "deepseek_mtp.")
DRAFT_UNSUPPORTED_2 = ("NotImplementedError: Draft model speculative decoding is not supported yet. Please "
                       "consider using other speculative decoding methods such as ngram, medusa, eagle, or mtp.")
# vLLM 0.32 gpu_model_runner._setup_eagle3_aux_hidden_state_outputs.
EAGLE3_INTERFACE = "RuntimeError: Model does not support EAGLE3 interface but aux_hidden_state_outputs was requested"
# Older _verify_args allowlist (vllm-project/vllm#22152).
EAGLE3_ALLOWLIST = ("ValueError: Eagle3 is only supported for ['llama', 'qwen'] models. Got "
                    "self.target_model_config.hf_text_config.model_type='gemma3'")


@pytest.mark.parametrize("log,cause", [
    ("ValueError: Free memory on device (5.84/7.44 GiB) on startup is less than desired GPU memory utilization",
     "out_of_memory"),
    ("ValueError: To serve at least one request ... is larger than the available KV cache memory", "out_of_memory"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate", "out_of_memory"),
    (VOCAB_MISMATCH, "rejected_speculative_config"),
    (DRAFT_UNSUPPORTED, "rejected_speculative_config"),
    (DRAFT_UNSUPPORTED_OLD, "rejected_speculative_config"),
    (DRAFT_UNSUPPORTED_2, "rejected_speculative_config"),
    (EAGLE3_INTERFACE, "rejected_speculative_config"),
    (EAGLE3_ALLOWLIST, "rejected_speculative_config"),
    ("ValueError: 'tensor_parallel_size' is not a valid argument in the speculative_config. Please pass "
     "'draft_tensor_parallel_size' instead.", "rejected_speculative_config"),
    ("ValueError: prompt_lookup_min=5 must be <= prompt_lookup_max=4", "rejected_speculative_config"),
    ("pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig", "rejected_speculative_config"),
    ("num_speculative_tokens\n  Input should be greater than 0", "rejected_speculative_config"),
    ("OSError: Invalid repository ID or local directory specified: '/models/nope'", "model_not_found"),
    ("huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url "
     "https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct/resolve/main/config.json.", "model_not_found"),
    ("vllm serve: error: unrecognized arguments: --bogus", "bad_arguments"),
    ("everything is fine", "unknown"),
    ("", "unknown"),
])
def test_classify_failure(log, cause):
    assert classify_failure(log) == cause


def test_the_echoed_arguments_do_not_make_every_failure_a_rejected_config():
    # Before: the INFO line with 'speculative_config' matched, so a crash with no named
    # cause was reported as a rejected config and the ladder stopped for the wrong reason.
    assert classify_failure(ARGS_LINE + "\nSegmentation fault (core dumped)") == "unknown"


# vLLM 0.32's advice on a good speculative start (seen on the real lane in a start that was only slow).
ADVICE = ("(APIServer pid=1866) WARNING 12-01 23:31:22 [vllm.py:2276] max_num_scheduled_tokens is set to 2048 based "
          "on the speculative decoding settings. This may lead to suboptimal performance. Consider increasing "
          "max_num_batched_tokens to accommodate the additional draft token slots, or decrease num_speculative_tokens")


def test_vllms_advice_at_warning_level_is_not_a_rejected_config():
    # Before: a start that did not answer within the health timeout (a loaded CPU) was reported as
    # rejected_speculative_config from this warning, and the ladder went straight to speculation off.
    assert classify_failure(ARGS_LINE + "\n" + ADVICE) == "unknown"
    # a warning with a specific rejection still counts, and the broad words still count on an error line
    assert classify_failure(ADVICE + "\n(APIServer pid=1) WARNING 12-01 23:31:22 [x.py:1] Unsupported speculative "
                            "method: 'foo'") == "rejected_speculative_config"
    assert classify_failure(ADVICE + "\npydantic_core._pydantic_core.ValidationError: 1 validation error for "
                            "SpeculativeConfig") == "rejected_speculative_config"


def test_a_missing_draft_inside_speculative_config_validation_is_model_not_found():
    # The real journal: the args line, the traceback through create_speculative_config,
    # then the repository error. The draft is missing; the config itself is fine.
    journal = "\n".join([ARGS_LINE, TRACE_TAIL, MISSING_DRAFT])
    evidence = failure_evidence(journal)
    assert evidence["cause"] == "model_not_found"
    assert evidence["line"] == ("Value error, Invalid repository ID or local directory specified: "
                                "'/models/no-such-draft'.")


def test_the_vocabulary_mismatch_quotes_vllms_line():
    journal = "\n".join([ARGS_LINE, TRACE_TAIL, VOCAB_MISMATCH])
    evidence = failure_evidence(journal)
    assert evidence["cause"] == "rejected_speculative_config"
    assert evidence["line"].startswith("Value error, Target and draft model should have the same vocabulary size.")


def test_out_of_memory_wins_over_a_speculative_traceback():
    journal = "\n".join([ARGS_LINE, TRACE_TAIL, "torch.OutOfMemoryError: CUDA out of memory."])
    assert classify_failure(journal) == "out_of_memory"


def test_no_evidence_for_unknown():
    assert failure_evidence("all quiet") == {"cause": "unknown", "line": None}


def test_every_named_cause_is_in_the_closed_set():
    assert set(FAILURE_CAUSES) == {"out_of_memory", "rejected_speculative_config", "model_not_found",
                                   "bad_arguments", "health_timeout", "unknown"}


@pytest.mark.parametrize("text", [
    "Error: Model 'acme/missing-llama-draft' not found.",
    "Error: Access denied. Model 'acme/gated-llama-draft' requires approval.",
    "Error: Local entry not found. Cannot reach https://huggingface.co/api/models/acme/x/revision/main: offline mode is "
    "enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.",
])
def test_a_rung_the_prefetch_could_not_fetch_is_a_model_not_found(text):
    # vllm_prefetch's definite failures fail the rung with the hf CLI's line (roles/rollout/tasks/candidate.yml)
    assert classify_failure(text) == "model_not_found"
