"""Accuracy of the timing model, on the engine's virtual clock (no sleeps, no noise).

measure_accuracy.py repeats these checks over real HTTP with the wall clock.
"""
import pytest

from conftest import EAGLE_HEAD, LLAMA_W4, board

from vllm_sim import specconfig
from vllm_sim.engine import Engine, VirtualClock, simulate, summarize
from vllm_sim.profile import Profile


def leviathan(alpha, k, c):
    return (1 - alpha ** (k + 1)) / ((1 - alpha) * (1 + k * c))


def grid_profile(alpha, c):
    """A memory-bound board: 4 GB target at 100 GB/s (40 ms a step), draft c times that."""
    return Profile({
        "name": "grid", "total_memory_bytes": 64 * 1024 ** 3,
        "memory_bandwidth_bytes_per_s": 100e9, "bandwidth_efficiency": 1.0, "seed": 7,
        "models": {"target": {"weight_bytes": 4e9, "params_b": 8, "vocab_size": 1000},
                   "draft": {"weight_bytes": 4e9 * c, "params_b": 1, "vocab_size": 1000}},
        "acceptance": [{"target_family": "target", "draft": "draft", "alpha": alpha}],
        "vllm_version": "0.20.1",
    })


def run(profile, target, spec, concurrency=1, requests=24, out=512, prompt=64):
    engine = Engine(profile, target, spec, clock=VirtualClock(), scale=1.0)
    return summarize(simulate(engine, concurrency, requests, prompt, out))


@pytest.mark.parametrize("alpha", [0.3, 0.6, 0.9])
@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("c", [0.05, 0.2])
def test_single_stream_speedup_matches_leviathan(alpha, k, c):
    profile = grid_profile(alpha, c)
    target = profile.find_model("target")
    spec = specconfig.validate({"method": "draft_model", "model": "draft",
                                "num_speculative_tokens": k}, target, profile)
    base = run(profile, target, None)
    fast = run(profile, target, spec)
    measured = base["mean_tpot_s"] / fast["mean_tpot_s"]
    assert measured == pytest.approx(leviathan(alpha, k, c), rel=0.05)


@pytest.mark.parametrize("name", ["thor_t5000", "agx_orin_64gb", "agx_orin_32gb",
                                  "orin_nx_16gb", "orin_nano_8gb"])
def test_tpot_at_concurrency_1_is_weights_over_bandwidth(name):
    profile = Profile(board(name))
    target = profile.find_model(LLAMA_W4)
    roofline = target.weight_bytes / (profile.memory_bandwidth_bytes_per_s
                                      * profile.bandwidth_efficiency)
    measured = run(profile, target, None, requests=4, out=256)["mean_tpot_s"]
    assert measured == pytest.approx(roofline, rel=0.03)


@pytest.mark.parametrize("name,published", [("agx_orin_64gb", 28.14), ("thor_t5000", 44.0)])
def test_profiles_anchor_published_single_stream_speed(name, published):
    profile = Profile(board(name))
    target = profile.find_model(LLAMA_W4)
    tps = 1.0 / run(profile, target, None, requests=4, out=256)["mean_tpot_s"]
    assert tps == pytest.approx(published, rel=0.03)


@pytest.mark.parametrize("name,published_c8", [("agx_orin_64gb", 112.33), ("thor_t5000", 251)])
def test_speculation_wins_at_1_and_loses_at_8(name, published_c8):
    profile = Profile(board(name))
    target = profile.find_model(LLAMA_W4)
    spec = specconfig.validate({"method": "eagle3", "model": EAGLE_HEAD,
                                "num_speculative_tokens": 3}, target, profile)
    base1, spec1 = run(profile, target, None, 1, 4, 256, 256), run(profile, target, spec, 1, 4, 256, 256)
    base8, spec8 = run(profile, target, None, 8, 16, 256, 256), run(profile, target, spec, 8, 16, 256, 256)
    assert spec1["output_throughput"] > 1.3 * base1["output_throughput"]
    assert spec8["output_throughput"] < base8["output_throughput"]
    assert base8["output_throughput"] == pytest.approx(published_c8, rel=0.15)


def test_acceptance_draws_are_seeded():
    profile = grid_profile(0.6, 0.05)
    target = profile.find_model("target")
    spec = specconfig.validate({"method": "draft_model", "model": "draft",
                                "num_speculative_tokens": 3}, target, profile)
    first = run(profile, target, spec, requests=2, out=64)
    again = run(profile, target, spec, requests=2, out=64)
    assert first == again
