"""The Jetson speculative-decoding rules (plan_launch); the fallback ladder is in test_launch_ladder.py."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.gates import (
    image_vllm_version,
    is_orin_image,
    parse_version,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.rules import plan_launch

HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
DRAFT = "meta-llama/Llama-3.2-1B-Instruct"
TARGET = "meta-llama/Llama-3.1-8B-Instruct"
CATALOG = {
    TARGET: {"family": "llama3", "weight_bytes": 16060522496, "kv_bytes_per_token": 131072, "vocab_size": 128256,
             "eagle3_heads": [{"model": HEAD, "weight_bytes": 850000000}],
             "draft_models": [{"model": DRAFT, "weight_bytes": 2471628800, "vocab_size": 128256}]},
    "Qwen/Qwen3-4B": {"family": "qwen3", "weight_bytes": 8e9, "kv_bytes_per_token": 147456, "vocab_size": 151936,
                      "eagle3_heads": [], "draft_models": [{"model": "Qwen/Qwen3-0.6B", "weight_bytes": 1500000000,
                                                            "vocab_size": 151936}]},
}


def inputs(**over):
    base = dict(family="thor", l4t_major=39, installed_vllm_version="0.20.1", vllm_version="", runtime="native",
                image="", model=TARGET, speculation=True, force=False, method="auto", spec_model="", k=None,
                draft_tensor_parallel_size=1, spec_extra={}, catalog=CATALOG, expected_concurrency=1,
                max_spec_concurrency=2, gpu_memory_utilization=0.80, gpu_memory_utilization_max=0.90,
                utilization_drop=0.05)
    base.update(over)
    return base


def rules(plan):
    return [r["rule"] for r in plan["refusals"]]


def test_thor_gets_eagle3_with_k5_and_lower_utilization():
    plan = plan_launch(inputs())
    assert rules(plan) == []
    assert plan["speculative_config"] == {"method": "eagle3", "model": HEAD, "num_speculative_tokens": 5,
                                          "draft_tensor_parallel_size": 1}
    assert plan["gpu_memory_utilization"] == 0.75


def test_agx_orin_gets_k3():
    plan = plan_launch(inputs(family="agx_orin"))
    assert plan["speculative_config"]["num_speculative_tokens"] == 3


def test_no_published_head_falls_back_to_catalogued_draft():
    plan = plan_launch(inputs(model="Qwen/Qwen3-4B"))
    assert rules(plan) == []
    assert plan["speculative_config"]["method"] == "draft_model"
    assert plan["speculative_config"]["model"] == "Qwen/Qwen3-0.6B"


def test_speculation_off_is_the_plain_baseline():
    plan = plan_launch(inputs(speculation=False, family="orin_nano", l4t_major=35))
    assert rules(plan) == [] and plan["speculative_config"] is None
    assert plan["gpu_memory_utilization"] == 0.80


@pytest.mark.parametrize("over,rule", [
    (dict(family="orin_nano"), "family.speculation_not_supported"),
    (dict(family="orin_nx"), "family.speculation_not_supported"),
    (dict(family="unknown"), "family.speculation_not_supported"),
    (dict(family="orin_nano", force=True, method="eagle3"), "family.no_eagle3_on_small_orin"),
    (dict(family="thor", runtime="container", image="ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin"),
     "runtime.orin_image_on_thor"),
    (dict(family="agx_orin", l4t_major=36), "runtime.old_orin_needs_orin_image"),
    (dict(family="agx_orin", l4t_major=None), "runtime.l4t_unknown"),
    (dict(installed_vllm_version="0.10.2"), "runtime.vllm_too_old"),
    (dict(installed_vllm_version=None), "runtime.vllm_version_unknown"),
    (dict(expected_concurrency=8), "workload.concurrency"),
    (dict(expected_concurrency=0), "config.expected_concurrency"),
    (dict(k=0), None),  # 0 means "board default", not an error
    (dict(k=11), "config.num_speculative_tokens"),
    (dict(k=8), "config.k_above_start"),
    (dict(k=True), "config.num_speculative_tokens"),
    (dict(method="medusa"), "config.method"),
    (dict(method="eagle3", spec_model="someone/ad-hoc-head"), "catalog.unpublished_head"),
    (dict(method="eagle3", model="Qwen/Qwen3-4B"), "catalog.no_published_head"),
    (dict(model="acme/unknown-model"), "catalog.no_speculator"),
    (dict(gpu_memory_utilization=0.96), "config.gpu_memory_utilization"),
    (dict(gpu_memory_utilization=0.20), "config.gpu_memory_utilization"),
    (dict(gpu_memory_utilization="0.8"), "config.gpu_memory_utilization"),
    (dict(gpu_memory_utilization=0.32), "memory.utilization_floor"),
])
def test_refusals_name_the_rule_and_the_fix(over, rule):
    plan = plan_launch(inputs(**over))
    if rule is None:
        assert rules(plan) == []
        return
    assert rule in rules(plan)
    assert rule in plan["refusal_text"]
    message = [r["message"] for r in plan["refusals"] if r["rule"] == rule][0]
    assert "Fix" in message or "must" in message


def test_old_orin_with_the_jetpack_matched_image_is_allowed():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=36, l4t_minor=4, runtime="container", method="eagle3",
                              image="ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra-aarch64-cu126-22.04",
                              vllm_version="0.10.2"))
    assert rules(plan) == []


def test_force_allows_a_draft_model_on_orin_nx():
    plan = plan_launch(inputs(family="orin_nx", force=True))
    assert rules(plan) == []
    assert plan["speculative_config"]["method"] == "draft_model"


def test_moving_image_tag_warns_and_needs_a_version():
    plan = plan_launch(inputs(runtime="container", image="vllm/vllm-openai:latest"))
    assert "runtime.vllm_version_unknown" in rules(plan)
    assert any("digest" in w for w in plan["warnings"])
    plan = plan_launch(inputs(runtime="container", image="vllm/vllm-openai:latest", vllm_version="0.20.1"))
    assert rules(plan) == []


@pytest.mark.parametrize("text,expected", [("0.20.1", (0, 20, 1)), ("v0.11.0+jetson", (0, 11, 0)),
                                           ("0.32", (0, 32, 0)), ("", None), (None, None), ("latest", None)])
def test_parse_version(text, expected):
    assert parse_version(text) == expected


def test_images():
    assert is_orin_image("ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin")
    assert not is_orin_image("vllm/vllm-openai:v0.20.1")
    assert image_vllm_version("vllm/vllm-openai:v0.20.1") == (0, 20, 1)
    assert image_vllm_version("vllm/vllm-openai:latest") is None
    assert image_vllm_version("registry:5000/vllm") is None


def test_a_concurrency_between_the_skills_range_and_8_is_measured_not_refused():
    from ansible_collections.jetson.specdec.plugins.module_utils.common import policy
    plan = plan_launch(inputs(expected_concurrency=4, max_spec_concurrency=policy.MAX_SPECULATIVE_CONCURRENCY))
    assert rules(plan) == [] and plan["speculative_config"]["method"] == "eagle3"
    assert any("Expected concurrency 4 is above the skill's low-concurrency range (1-2)" in w and "benchmarks at concurrency 4"
               in w for w in plan["warnings"]), plan["warnings"]
    assert rules(plan_launch(inputs(expected_concurrency=8, max_spec_concurrency=policy.MAX_SPECULATIVE_CONCURRENCY))) == [
        "workload.concurrency"]
    quiet = plan_launch(inputs(expected_concurrency=2, max_spec_concurrency=policy.MAX_SPECULATIVE_CONCURRENCY))
    assert not any("Expected concurrency" in w for w in quiet["warnings"])
