# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import json

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.memory import (
    BASE_OVERHEAD_BYTES, GIB, SpecMemoryError, compute_headroom, gather_model_facts,
    kv_bytes_per_token_from_config, overhead_allowance, recommend_utilization,
    validate_utilization,
)

LLAMA_31_8B_CONFIG = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                      "hidden_size": 4096, "torch_dtype": "bfloat16"}
THOR_TOTAL = int(122.82 * GIB)  # what vLLM sees on a Thor T5000 (workshop error message)
NANO_TOTAL = 7_990_000_000      # Orin Nano 8GB MemTotal, roughly


def _base(**kw):
    args = dict(target_weight_bytes=6 * GIB, kv_bytes_per_token=131072, max_model_len=4096,
                memory_total_bytes=64 * GIB, memory_available_bytes=60 * GIB, gpu_memory_utilization=0.7)
    args.update(kw)
    return args


# --- config.json -> KV bytes per token ------------------------------------------------------------
def test_kv_llama_31_8b():
    assert kv_bytes_per_token_from_config(LLAMA_31_8B_CONFIG) == 131072


def test_kv_uses_explicit_head_dim_and_text_config():
    qwen3_8b = {"num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
                "hidden_size": 4096, "head_dim": 128, "dtype": "bfloat16"}
    assert kv_bytes_per_token_from_config(qwen3_8b) == 147456
    assert kv_bytes_per_token_from_config({"architectures": ["X"], "text_config": qwen3_8b}) == 147456


def test_kv_mha_without_kv_heads_fp32_and_fp8():
    mha = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64}
    assert kv_bytes_per_token_from_config(mha) == 2 * 2 * 4 * 16 * 2
    assert kv_bytes_per_token_from_config(dict(mha, torch_dtype="float32")) == 2 * 2 * 4 * 16 * 4
    assert kv_bytes_per_token_from_config(mha, "fp8") == 2 * 2 * 4 * 16 * 1


@pytest.mark.parametrize("config, match", [
    ({"num_attention_heads": 32, "hidden_size": 4096}, "num_hidden_layers"),
    (dict(LLAMA_31_8B_CONFIG, num_key_value_heads=0), "num_key_value_heads"),
    (dict(LLAMA_31_8B_CONFIG, hidden_size=4000, num_attention_heads=48), "not divisible"),
    (dict(LLAMA_31_8B_CONFIG, num_hidden_layers=True), "num_hidden_layers"),
])
def test_kv_config_errors(config, match):
    with pytest.raises(SpecMemoryError, match=match):
        kv_bytes_per_token_from_config(config)


def test_kv_bad_dtype_option():
    with pytest.raises(SpecMemoryError, match="kv_cache_dtype"):
        kv_bytes_per_token_from_config(LLAMA_31_8B_CONFIG, "int4")


# --- board cases ------------------------------------------------------------------------------------
def test_thor_llama_fp4_with_eagle3_head_fits():
    fp4, head = int(6.07 * GIB), 850_000_000
    report = compute_headroom(**_base(
        target_weight_bytes=fp4, spec_weight_bytes=head, spec_kv_bytes_per_token=4096, method="eagle3",
        max_model_len=8192, memory_total_bytes=THOR_TOTAL, memory_available_bytes=int(110 * GIB),
        gpu_memory_utilization=0.70))
    weights = report["breakdown"]["target_weight_bytes"] + report["breakdown"]["speculative_weight_bytes"]
    assert weights / GIB == pytest.approx(6.86, abs=0.05)  # workshop: FP4 + EAGLE-3 6.86 GiB
    assert report["fits"] is True
    assert report["recommended_gpu_memory_utilization"] == 0.89  # 110/122.82 = 0.896 caps it
    assert "holds" in report["reasons"][0] and "6.07 GiB" in report["reasons"][0]


def test_orin_nano_fp16_8b_with_1b_draft_does_not_fit():
    report = compute_headroom(**_base(
        target_weight_bytes=16060522496, spec_weight_bytes=2471628800, spec_kv_bytes_per_token=32768,
        method="draft_model", max_model_len=4096, max_num_seqs=4, memory_total_bytes=NANO_TOTAL,
        memory_available_bytes=6 * GIB, gpu_memory_utilization=0.50))
    assert report["fits"] is False
    assert report["recommended_gpu_memory_utilization"] is None
    text = " ".join(report["reasons"])
    assert "does not fit" in text and "14.96 GiB" in text and "draft_model weights 2.30 GiB" in text
    assert "no gpu_memory_utilization between 0.30 and 0.90 works" in text


def test_workshop_free_memory_error_is_reproduced():
    # "Free memory on device (14.45/122.82 GiB) on startup is less than desired GPU memory utilization (0.7, 85.98 GiB)"
    report = compute_headroom(**_base(memory_total_bytes=THOR_TOTAL, memory_available_bytes=int(14.45 * GIB),
                                      gpu_memory_utilization=0.7))
    assert report["fits"] is False
    assert any("free memory >= utilization x total" in r and "14.45 GiB free" in r for r in report["reasons"])
    assert report["recommended_gpu_memory_utilization"] is None  # 14.45/122.82 = 0.118 < 0.30


def test_reclaimable_memory_of_the_old_server_counts_as_free():
    tight = _base(memory_total_bytes=64 * GIB, memory_available_bytes=20 * GIB, gpu_memory_utilization=0.7)
    assert compute_headroom(**tight)["fits"] is False
    report = compute_headroom(**dict(tight, reclaimable_bytes=30 * GIB))
    assert report["fits"] is True and report["available_bytes"] == 50 * GIB


def test_available_plus_reclaimable_is_capped_at_total():
    report = compute_headroom(**_base(memory_available_bytes=60 * GIB, reclaimable_bytes=60 * GIB))
    assert report["available_bytes"] == 64 * GIB


def test_reserve_rule():
    report = compute_headroom(**_base(memory_total_bytes=8 * GIB, memory_available_bytes=8 * GIB,
                                      target_weight_bytes=GIB, max_model_len=1024, gpu_memory_utilization=0.9))
    assert report["fits"] is False
    assert any("below the 2.00 GiB reserve" in r for r in report["reasons"])
    assert report["recommended_gpu_memory_utilization"] == 0.75  # 1 - 2/8


def test_recommendation_is_largest_fitting_value_and_respects_ceiling():
    report = compute_headroom(**_base(max_gpu_memory_utilization=0.8))
    assert report["recommended_gpu_memory_utilization"] == 0.8
    assert recommend_utilization(required=40 * GIB, total=100 * GIB, free=100 * GIB, reserve=0, ceiling=0.9) == 0.9
    assert recommend_utilization(required=40 * GIB, total=100 * GIB, free=45 * GIB, reserve=0, ceiling=0.9) == 0.45
    assert recommend_utilization(required=50 * GIB, total=100 * GIB, free=45 * GIB, reserve=0, ceiling=0.9) is None
    # Exactly 0.62 x total must be accepted despite float rounding.
    assert recommend_utilization(required=62, total=100, free=62, reserve=0, ceiling=0.95) == 0.62
    # 0.57 * 100 is 56.99999999999999 in floats; 57 of 100 bytes must still be accepted.
    assert recommend_utilization(required=57, total=100, free=57, reserve=0, ceiling=0.95) == 0.57
    assert recommend_utilization(required=57, total=100, free=100, reserve=43, ceiling=0.95) == 0.57


def test_verdict_agrees_with_recommendation_at_exact_boundary():
    # required + free exactly 0.57 x total: float math would call it a miss by one ulp.
    total = 100 * GIB
    report = compute_headroom(**_base(memory_total_bytes=total, memory_available_bytes=57 * GIB,
                                      target_weight_bytes=57 * GIB - BASE_OVERHEAD_BYTES - 4096 * 131072,
                                      reserve_bytes=0, gpu_memory_utilization=0.57))
    assert report["required_bytes"] == 57 * GIB
    assert report["fits"] is True and report["recommended_gpu_memory_utilization"] == 0.57


def test_utilization_above_ceiling_warns():
    report = compute_headroom(**_base(gpu_memory_utilization=0.93, max_gpu_memory_utilization=0.9))
    assert any("above max_gpu_memory_utilization" in w for w in report["warnings"])


@pytest.mark.parametrize("value", [0.96, 0.29, 1.5, 0, -0.5, True, "0.7", float("nan")])
def test_utilization_out_of_range_refused(value):
    with pytest.raises(SpecMemoryError):
        compute_headroom(**_base(gpu_memory_utilization=value))
    with pytest.raises(SpecMemoryError):
        validate_utilization("x", value)


@pytest.mark.parametrize("patch, match", [
    ({"memory_total_bytes": 0}, "memory_total_bytes must be >= 1"),
    ({"memory_total_bytes": -5}, "memory_total_bytes must be >= 1"),
    ({"memory_available_bytes": -1}, "memory_available_bytes must be >= 0"),
    ({"memory_available_bytes": 65 * GIB}, "larger than memory_total_bytes"),
    ({"reserve_bytes": -1}, "reserve_bytes"),
    ({"reclaimable_bytes": 1.5}, "reclaimable_bytes must be an integer"),
    ({"max_model_len": 0}, "max_model_len"),
    ({"max_num_seqs": 0}, "max_num_seqs"),
    ({"target_weight_bytes": 0}, "target weight bytes"),
    ({"kv_bytes_per_token": None}, "kv_bytes_per_token"),
    ({"method": "eagle3"}, "weight size is 0"),
])
def test_bad_inputs_are_refused(patch, match):
    with pytest.raises(SpecMemoryError, match=match):
        compute_headroom(**_base(**patch))


def test_overhead_grows_with_speculation_and_can_be_overridden():
    assert overhead_allowance(None) == BASE_OVERHEAD_BYTES
    assert BASE_OVERHEAD_BYTES < overhead_allowance("eagle3") < overhead_allowance("draft_model")
    plain = compute_headroom(**_base())
    ngram = compute_headroom(**_base(method="ngram"))
    assert ngram["required_bytes"] > plain["required_bytes"]
    assert compute_headroom(**_base(overhead_bytes=0))["breakdown"]["overhead_bytes"] == 0


def test_kv_scales_with_len_and_seqs_and_draft_kv_counts():
    one = compute_headroom(**_base())["breakdown"]
    four = compute_headroom(**_base(max_num_seqs=4, max_model_len=8192))["breakdown"]
    assert four["kv_cache_bytes"] == 8 * one["kv_cache_bytes"] == 8 * 4096 * 131072
    draft = compute_headroom(**_base(method="draft_model", spec_weight_bytes=GIB, spec_kv_bytes_per_token=32768))
    assert draft["breakdown"]["speculative_kv_cache_bytes"] == 4096 * 32768


# --- gather_model_facts -----------------------------------------------------------------------------
CATALOG = {"owner/target": {"weight_bytes": 1000, "kv_bytes_per_token": 64,
                            "eagle3_heads": [{"model": "owner/head", "weight_bytes": 10, "kv_bytes_per_token": 8}]}}


def test_facts_from_catalog_when_not_cached(tmp_path):
    facts = gather_model_facts("owner/target", str(tmp_path), CATALOG)
    assert (facts["weight_bytes"], facts["weight_source"], facts["kv_bytes_per_token"]) == (1000, "catalog", 64)
    assert facts["warnings"] == []
    assert gather_model_facts("owner/head", str(tmp_path), CATALOG)["weight_bytes"] == 10
    assert gather_model_facts("owner/target", str(tmp_path), CATALOG, "fp8")["kv_bytes_per_token"] == 32


def test_facts_from_local_dir_and_warnings(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 5555}}))
    facts = gather_model_facts(str(model), None, CATALOG)
    assert facts["weight_bytes"] == 5555 and facts["weight_source"].startswith("file:")
    assert facts["kv_bytes_per_token"] is None  # not in catalog under this path
    assert any("no usable config.json" in w for w in facts["warnings"])
    (model / "config.json").write_text(json.dumps(LLAMA_31_8B_CONFIG))
    facts = gather_model_facts(str(model), None, CATALOG)
    assert facts["kv_bytes_per_token"] == 131072 and facts["warnings"] == []


def test_bad_catalog_values_are_reported():
    with pytest.raises(SpecMemoryError, match="weight_bytes"):
        gather_model_facts("owner/target", None, {"owner/target": {"weight_bytes": "16GB", "kv_bytes_per_token": 1}})
