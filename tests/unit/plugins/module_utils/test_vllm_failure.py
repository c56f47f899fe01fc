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
    ("ValueError: To serve at least one request ... is larger than the available KV cache memory", "kv_cache_shortfall"),
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
    assert set(FAILURE_CAUSES) == {"kv_cache_shortfall", "out_of_memory", "rejected_speculative_config",
                                   "model_not_found", "bad_arguments", "health_timeout", "unknown"}


@pytest.mark.parametrize("text", [
    "Error: Model 'acme/missing-llama-draft' not found.",
    "Error: Access denied. Model 'acme/gated-llama-draft' requires approval.",
    "Error: Local entry not found. Cannot reach https://huggingface.co/api/models/acme/x/revision/main: offline mode is "
    "enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.",
])
def test_a_rung_the_prefetch_could_not_fetch_is_a_model_not_found(text):
    # vllm_prefetch's definite failures fail the rung with the hf CLI's line (module_utils/record/evaluation.py: skip_rung)
    assert classify_failure(text) == "model_not_found"


# Issue 33 item 5: memory failures that went to `unknown` (straight to off, no ladder, no hand-off).
# The CUDA runtime's own error, Jetson's nvmap allocator (ENOMEM = 12, as the kernel driver prints it
# in the NVIDIA developer forums' reports), PyTorch's caching allocator when NVML cannot answer.
@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: out of memory",
    "(EngineCore_DP0 pid=4021) ERROR 12-01 10:02:11 [core.py:708] RuntimeError: CUDA error: out of memory\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "NvMapMemAllocInternalTagged: 1075072515 error 12",
    "NvMapMemHandleAlloc: error 12",
    "NvMapMemAllocInternalTagged: 1075072515 error 12\nNvMapMemHandleAlloc: error 12\n"
    "Segmentation fault (core dumped)",
    "RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at \"../c10/cuda/CUDACachingAllocator.cpp\":1154, please "
    "report a bug to PyTorch.",
    # vLLM 0.32 (vllm/v1/worker/utils.py request_memory), verbatim with its numbers filled in
    "ValueError: Free memory on device cuda:0 (10.21/61.37 GiB) on startup is less than the engine's budget after "
    "excluding external process's weights (0.7, 38.4 GiB). Decrease GPU memory utilization or reduce GPU memory "
    "used by other processes.",
    "ValueError: Externally held weights on device cuda:0 (45.0/61.37 GiB) exceed the desired GPU memory utilization "
    "(0.7, 42.96 GiB). Increase GPU memory utilization or reduce GPU memory used by other processes.",
    "ValueError: Free memory on device cuda:0 (5.84/7.44 GiB) on startup is less than desired GPU memory utilization "
    "(0.9, 6.7 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
])
def test_jetson_and_cuda_memory_failures_are_out_of_memory(line):
    journal = ARGS_LINE + "\n" + line
    evidence = failure_evidence(journal)
    assert evidence["cause"] == "out_of_memory", journal
    assert evidence["line"] and evidence["line"] in journal


@pytest.mark.parametrize("line", [
    "NvMapMemAllocInternalTagged: 1075072515 error 1",   # EPERM: not a memory shortage
    "NvMapMemHandleAlloc: error 120",
    "NVML_SUCCESS == r",
])
def test_near_misses_of_the_memory_texts_are_not_out_of_memory(line):
    assert classify_failure(line) != "out_of_memory"


# vLLM's own KV-cache texts, verbatim: V1 (vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory,
# which the simulator prints, tests/simulator/vllm_sim/memory.py) and the V0 worker's raise_if_cache_size_invalid.
KV_NO_BLOCKS = ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                "initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for "
                "more details.")
KV_ONE_REQUEST = ("ValueError: To serve at least one request with the models's max seq len (8192), (1.0 GiB KV cache "
                  "is needed, which is larger than the available KV cache memory (0.62 GiB). Based on the available "
                  "memory, the estimated maximum model length is 5072. Try increasing `gpu_memory_utilization` or "
                  "decreasing `max_model_len` when initializing the engine. See "
                  "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
KV_V0 = ("ValueError: The model's max seq len (8192) is larger than the maximum number of tokens that can be stored "
         "in KV cache (4096). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
         "the engine.")


# vLLM 0.32 (the real lane's vllm/v1/core/kv_cache_utils.py), verbatim: it names the CPU backend too.
KV_NO_BLOCKS_032 = ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                    "when initializing the engine (this flag also controls CPU memory reservation on the CPU backend, "
                    "despite its name). See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
                    "details.")
KV_ONE_REQUEST_032 = ("ValueError: To serve at least one request with the model's max seq len (8192), (1.0 GiB KV "
                      "cache is needed, which is larger than the available KV cache memory (0.62 GiB). Based on the "
                      "available memory, the estimated maximum model length is 5072. Try increasing "
                      "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing "
                      "`max_model_len` when initializing the engine. See "
                      "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")


@pytest.mark.parametrize("line", [KV_NO_BLOCKS, KV_ONE_REQUEST, KV_V0, KV_NO_BLOCKS_032, KV_ONE_REQUEST_032])
def test_a_kv_cache_shortfall_is_its_own_cause(line):
    journal = "\n".join([ARGS_LINE, "(EngineCore_DP0 pid=1) ERROR 12-01 10:02:11 [core.py:708] " + line])
    evidence = failure_evidence(journal)
    assert evidence["cause"] == "kv_cache_shortfall"
    assert "KV cache" in evidence["line"] or "cache blocks" in evidence["line"]


def test_the_simulators_memory_texts_are_vllms():
    # The stand-in must fail in vLLM's words, or the fleet tests prove the classifier against texts vLLM never prints.
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "simulator", "vllm_sim", "memory.py")
    with open(path) as handle:
        source = handle.read()
    for fragment in ("No available memory for the cache blocks. Try increasing ",
                     "`gpu_memory_utilization` when initializing the engine. ",
                     "To serve at least one request with the models's max seq len (%d), ",
                     "(%s GiB KV cache is needed, which is larger than the available KV cache memory ",
                     "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` ",
                     "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ ",
                     "is less than desired GPU ",
                     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f MiB."):
        assert fragment in source, fragment


@pytest.mark.parametrize("prefix", [
    "Dec 04 10:02:11 thor-01 vllm[2731]: ",                              # journalctl (short)
    "Dec  4 10:02:11 thor-01 vllm[2731]: ",
    "2026-12-04T10:02:11+0000 thor-01 vllm[2731]: ",                     # -o short-iso
    "2026-12-04T10:02:11.123456+00:00 thor-01 vllm[2731]: ",             # -o short-iso-precise
    "Dec 04 10:02:11.123456 thor-01 vllm[2731]: ",                       # -o short-precise
])
def test_a_journal_read_without_o_cat_still_skips_the_echoed_arguments(prefix):
    # Issue 33 item 9: read with journalctl's default prefix, the INFO line echoing speculative_config no longer
    # looked like chatter, so a segfault was classified as a rejected config and the ladder stopped at once.
    journal = "\n".join(prefix + line for line in [ARGS_LINE, "Segmentation fault (core dumped)"])
    assert classify_failure(journal) == "unknown"
    kv = "\n".join(prefix + line for line in [ARGS_LINE, KV_V0])
    assert failure_evidence(kv) == {"cause": "kv_cache_shortfall", "line": KV_V0}
