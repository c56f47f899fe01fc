"""Startup memory refusals, computed as vLLM does on a unified-memory board."""
import json

from conftest import EAGLE_K3, LLAMA_W4, run_vllm

from vllm_sim import memory
from vllm_sim.errors import SimExit
from vllm_sim.profile import Profile
from conftest import board

import pytest


def test_utilization_above_free_memory_is_refused(profile_file):
    # AGX Orin 64GB profile: 61.37 GiB total, 3 GiB held by the OS -> 58.37 GiB free.
    result = run_vllm(["serve", LLAMA_W4, "--gpu-memory-utilization", "0.97"], profile_file())
    assert result.returncode == 1
    assert ("ValueError: Free memory on device (58.37/61.37 GiB) on startup is less than "
            "desired GPU memory utilization (0.97, 59.53 GiB).") in result.stderr
    assert "Application startup complete." not in result.stderr


def test_kv_cache_too_small_for_max_model_len(profile_file):
    # Default max_model_len is the model's 131072 positions: 16 GiB of KV for Llama-3.1-8B.
    result = run_vllm(["serve", "meta-llama/Llama-3.1-8B-Instruct",
                       "--gpu-memory-utilization", "0.3"], profile_file())
    assert result.returncode == 1
    assert ("To serve at least one request with the models's max seq len (131072), "
            "(16.00 GiB KV cache is needed, which is larger than the available KV cache "
            "memory") in result.stderr
    assert "the estimated maximum model length is" in result.stderr


def test_no_memory_left_for_cache_blocks(profile_file):
    result = run_vllm(["serve", "meta-llama/Llama-3.1-8B-Instruct",
                       "--gpu-memory-utilization", "0.2"], profile_file())
    assert result.returncode == 1
    assert "ValueError: No available memory for the cache blocks." in result.stderr


def test_speculation_needs_headroom_that_baseline_does_not():
    """On Orin NX 16GB a utilization that fits the target alone fails with the EAGLE head."""
    profile = Profile(board("orin_nx_16gb"))
    target = profile.find_model(LLAMA_W4)
    from vllm_sim import specconfig
    spec = specconfig.validate(json.loads(EAGLE_K3), target, profile)
    util, max_len = 0.45, 4096
    base = memory.plan(profile, target, None, util, max_len, enforce_eager=False)
    assert base.kv_budget > 0
    with pytest.raises(SimExit) as failure:
        memory.plan(profile, target, spec, util, max_len, enforce_eager=False)
    assert failure.value.code == 1
    assert any("KV cache" in line or "cache blocks" in line for line in failure.value.lines)


def test_kv_capacity_matches_budget():
    profile = Profile(board("thor_t5000"))
    target = profile.find_model(LLAMA_W4)
    plan = memory.plan(profile, target, None, 0.5, 8192, enforce_eager=True)
    expected = (0.5 * profile.total_memory_bytes - target.weight_bytes
                - profile.activation_overhead_bytes)
    assert abs(plan.kv_budget - expected) < 1
    assert plan.kv_tokens == int(expected // (131072 * 16)) * 16
