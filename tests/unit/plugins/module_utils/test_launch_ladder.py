# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The startup fallback ladder: rungs from the sizes, the next rung from the cause."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.ladder import fallback_rungs, next_rung

HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
DRAFT_1B = "meta-llama/Llama-3.2-1B-Instruct"
TARGET = "meta-llama/Llama-3.1-8B-Instruct"
QWEN = "Qwen/Qwen3-8B"
CATALOG = {
    TARGET: {"family": "llama3", "weight_bytes": 16060522496, "kv_bytes_per_token": 131072, "vocab_size": 128256,
             "eagle3_heads": [{"model": HEAD, "weight_bytes": 850000000, "kv_bytes_per_token": 4096}],
             "draft_models": [{"model": DRAFT_1B, "weight_bytes": 2471628800, "kv_bytes_per_token": 32768,
                               "vocab_size": 128256}]},
    QWEN: {"family": "qwen3", "weight_bytes": 16381470720, "kv_bytes_per_token": 147456, "vocab_size": 151936,
           "eagle3_heads": [],
           "draft_models": [{"model": "Qwen/Qwen3-1.7B", "weight_bytes": 3441180672, "kv_bytes_per_token": 114688,
                             "vocab_size": 151936},
                            {"model": "Qwen/Qwen3-0.6B", "weight_bytes": 1192099840, "kv_bytes_per_token": 114688,
                             "vocab_size": 151936},
                            {"model": "other/odd-vocab", "weight_bytes": 100, "vocab_size": 32000}]},
}


def plan(method, model, util=0.75):
    cfg = {"method": method, "num_speculative_tokens": 3}
    if model:
        cfg["model"] = model
    return {"speculation": True, "speculative_config": cfg, "gpu_memory_utilization": util}


def labels(rungs):
    return [r["label"] for r in rungs]


def test_eagle3_never_falls_back_to_a_bigger_draft():
    # The 1B draft (2.47 GB + its KV cache) is about three times the 0.85 GB head it would replace.
    rungs = fallback_rungs(plan("eagle3", HEAD), CATALOG, TARGET, max_model_len=4096)
    assert labels(rungs) == ["eagle3 at utilization 0.75", "eagle3 at utilization 0.70",
                             "ngram at utilization 0.70", "speculation off (baseline)"]
    assert [r["step"] for r in rungs] == ["planned", "lower_utilization", "smaller_speculation", "off"]
    assert rungs[2]["vllm_server_speculative_method"] == "ngram" and rungs[2]["vllm_server_speculative_model"] == ""
    assert rungs[2]["drafter_bytes"] == 0 < rungs[0]["drafter_bytes"] == 850000000 + 4096 * 4096
    assert rungs[1]["vllm_server_speculative_utilization_drop"] == 0.1
    assert [r["rung"] for r in rungs] == [0, 1, 2, 3]


def test_a_draft_model_plan_gets_the_strictly_smaller_same_vocabulary_drafts_largest_first():
    rungs = fallback_rungs(plan("draft_model", "Qwen/Qwen3-1.7B"), CATALOG, QWEN, max_model_len=4096)
    assert labels(rungs) == ["draft_model at utilization 0.75", "draft_model at utilization 0.70",
                             "draft_model Qwen/Qwen3-0.6B at utilization 0.70", "ngram at utilization 0.70",
                             "speculation off (baseline)"]
    sizes = [r["drafter_bytes"] for r in rungs[:-1]]
    assert sizes[1] == sizes[0] and sizes[0] > sizes[2] > sizes[3] == 0


def test_the_smallest_draft_and_ngram_have_nothing_smaller_but_ngram_and_off():
    assert labels(fallback_rungs(plan("draft_model", "Qwen/Qwen3-0.6B"), CATALOG, QWEN))[2:] == [
        "ngram at utilization 0.70", "speculation off (baseline)"]
    assert labels(fallback_rungs(plan("ngram", None), CATALOG, QWEN)) == [
        "ngram at utilization 0.75", "ngram at utilization 0.70", "speculation off (baseline)"]


def test_an_uncatalogued_drafter_gets_no_draft_rung():
    rungs = fallback_rungs(plan("draft_model", "/models/my-draft"), CATALOG, QWEN)
    assert labels(rungs)[2:] == ["ngram at utilization 0.70", "speculation off (baseline)"]


def test_no_lower_rung_below_the_utilization_floor():
    rungs = fallback_rungs(plan("eagle3", HEAD, util=0.32), CATALOG, TARGET)
    assert labels(rungs) == ["eagle3 at utilization 0.32", "ngram at utilization 0.32", "speculation off (baseline)"]


def test_without_a_plan_the_ladder_is_the_baseline():
    assert fallback_rungs({}, CATALOG, TARGET) == [
        {"step": "off", "label": "speculation off (baseline)", "vllm_server_speculation": False,
         "drafter_bytes": 0, "rung": 0}]


RUNGS = fallback_rungs(plan("eagle3", HEAD), CATALOG, TARGET, max_model_len=4096)
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB"


def test_out_of_memory_walks_down_one_rung_at_a_time_then_hands_off_to_memory_tuning():
    step = next_rung(RUNGS, 0, "out_of_memory", OOM)
    assert (step["rung"], step["step"]) == (1, "lower_utilization")
    assert "CUDA out of memory" in step["why"]
    assert next_rung(RUNGS, 1, "out_of_memory", OOM)["label"] == "ngram at utilization 0.70"
    last = next_rung(RUNGS, 2, "out_of_memory", OOM, headroom={"fits": False,
                                                               "recommended_gpu_memory_utilization": 0.62})
    assert (last["rung"], last["step"]) == (3, "off")
    assert "memory tuning" in last["why"] and "recommends gpu_memory_utilization 0.62" in last["why"]
    none_fits = next_rung(RUNGS, 2, "out_of_memory", OOM, headroom={"fits": False,
                                                                    "recommended_gpu_memory_utilization": None})
    assert "no gpu_memory_utilization" in none_fits["why"]


@pytest.mark.parametrize("cause", ["rejected_speculative_config", "bad_arguments"])
@pytest.mark.parametrize("failed", [0, 1, 2])
def test_a_rejected_config_goes_straight_back_to_the_baseline(cause, failed):
    message = ("Value error, Target and draft model should have the same vocabulary size. Target model "
               "vocab_size=1024. Draft model vocab_size=2048.")
    step = next_rung(RUNGS, failed, cause, message)
    assert (step["rung"], step["step"], step["cause"]) == (3, "off", cause)
    assert "at once" in step["why"] and "should have the same vocabulary size" in step["why"]


def test_a_missing_model_ends_at_off_naming_the_download_problem():
    message = "OSError: Invalid repository ID or local directory specified: 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B'"
    step = next_rung(RUNGS, 0, "model_not_found", message)
    assert step["step"] == "off"
    assert HEAD in step["why"] and "Invalid repository ID" in step["why"] and "vllm_server_hf_token" in step["why"]


@pytest.mark.parametrize("cause", ["unknown", "health_timeout", None])
def test_an_unnamed_failure_is_not_retried_with_other_speculation(cause):
    assert next_rung(RUNGS, 0, cause)["step"] == "off"


def test_bad_calls_name_the_problem():
    with pytest.raises(ValueError, match="not on this ladder"):
        next_rung(RUNGS, 9, "out_of_memory")
    with pytest.raises(ValueError, match="needs the ladder"):
        next_rung([], 0, "out_of_memory")


def test_templated_max_model_len_is_read_as_a_number():
    assert fallback_rungs(plan("eagle3", HEAD), CATALOG, TARGET, max_model_len="4096") == RUNGS


# Issue 33 item 5: vLLM sizes the KV cache from what the utilization leaves after the weights; a
# lower utilization leaves less, so a KV-cache shortfall goes to a smaller speculation first.
KV_SHORT = ("ValueError: To serve at least one request with the models's max seq len (8192), (1.0 GiB KV cache is "
            "needed, which is larger than the available KV cache memory (0.62 GiB). Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")


@pytest.mark.parametrize("the_plan,target", [
    (plan("eagle3", HEAD), TARGET),
    (plan("draft_model", "Qwen/Qwen3-1.7B"), QWEN),
])
def test_a_kv_cache_shortfall_skips_the_lower_utilization_and_keeps_the_failed_one(the_plan, target):
    from ansible_collections.jetson.specdec.plugins.module_utils.launch.ladder import apply_kept_utilization
    rungs = fallback_rungs(the_plan, CATALOG, target, max_model_len=4096)
    step = next_rung(rungs, 0, "kv_cache_shortfall", KV_SHORT)
    chosen = rungs[step["rung"]]
    assert chosen["step"] == "smaller_speculation" and step["step"] == "smaller_speculation"
    assert chosen["drafter_bytes"] < rungs[0]["drafter_bytes"]
    # at 0.75, the utilization that failed, not the ladder's 0.70
    assert step["utilization"]["gpu_memory_utilization"] == 0.75
    assert step["label"].endswith("at utilization 0.75") and "0.70" not in step["label"]
    applied = apply_kept_utilization(chosen, step["utilization"])
    assert applied["gpu_memory_utilization"] == 0.75 and applied["label"] == step["label"]
    assert applied["vllm_server_speculative_utilization_drop"] == rungs[0]["vllm_server_speculative_utilization_drop"]
    assert "lower utilization would leave it less room" in step["why"] and "available KV cache memory" in step["why"]
    # the same cause again, on the rung as it ran: the next smaller one, still at 0.75, then off
    again = next_rung(rungs, dict(applied), "kv_cache_shortfall", KV_SHORT)
    if again["step"] == "smaller_speculation":
        assert again["utilization"]["gpu_memory_utilization"] == 0.75 and again["rung"] > step["rung"]
        again = next_rung(rungs, apply_kept_utilization(rungs[again["rung"]], again["utilization"]),
                          "kv_cache_shortfall", KV_SHORT)
    assert again["step"] == "off" and "max_model_len" in again["why"] and "jetson-inference-mem-tune" in again["why"]


def test_a_kv_cache_shortfall_on_the_last_speculative_rung_hands_off():
    rungs = fallback_rungs(plan("ngram", ""), CATALOG, TARGET, max_model_len=4096)
    step = next_rung(rungs, 0, "kv_cache_shortfall", KV_SHORT)
    assert step["step"] == "off" and "utilization" not in step
    assert "KV cache of ngram at utilization 0.75 did not fit" in step["why"]


def test_out_of_memory_still_tries_the_lower_utilization_first():
    rungs = fallback_rungs(plan("eagle3", HEAD), CATALOG, TARGET, max_model_len=4096)
    for text in ("RuntimeError: CUDA error: out of memory", "NvMapMemHandleAlloc: error 12"):
        step = next_rung(rungs, 0, "out_of_memory", text)
        assert step["step"] == "lower_utilization" and "utilization" not in step, step
        assert text in step["why"]
