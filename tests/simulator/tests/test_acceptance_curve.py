"""Per-position acceptance curves: the counters follow the curve, and the best k differs by pair and board."""
import glob
import json
import os

import pytest

from vllm_sim import specconfig
from vllm_sim.engine import Engine, TimingModel, VirtualClock, simulate
from vllm_sim.profile import Profile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Counts(object):
    """The engine's metrics hooks, keeping only the spec-decode counters."""

    def __init__(self):
        self.drafts = 0
        self.per_pos = {}

    def on_spec_step(self, k, accepted):
        self.drafts += 1
        for pos in range(accepted):
            self.per_pos[pos] = self.per_pos.get(pos, 0) + 1

    def __getattr__(self, name):  # on_prefill, on_tokens, ... are not needed here
        return lambda *args: None


def curve_profile(curve):
    return Profile({
        "name": "curve", "total_memory_bytes": 64 * 1024 ** 3, "seed": 3,
        "memory_bandwidth_bytes_per_s": 100e9, "bandwidth_efficiency": 1.0,
        "models": {"target": {"weight_bytes": 4e9, "params_b": 8, "vocab_size": 1000}},
        "acceptance": [{"target_family": "*", "draft": "ngram", "alpha": 0.5,
                        "alpha_per_position": curve}],
    })


def test_counters_follow_the_conditional_curve():
    curve = [0.9, 0.5, 0.2]
    profile = curve_profile(curve)
    target = profile.find_model("target")
    spec = specconfig.validate({"method": "ngram", "num_speculative_tokens": 5}, target, profile)
    counts = Counts()
    engine = Engine(profile, target, spec, clock=VirtualClock(), scale=1.0, metrics=counts)
    simulate(engine, 1, 40, 16, 400)
    expected = [0.9, 0.45, 0.09, 0.018, 0.0036]  # the last value repeats past the list
    for pos, want in enumerate(expected):
        assert counts.per_pos.get(pos, 0) / float(counts.drafts) == pytest.approx(want, abs=0.02)


def test_a_single_alpha_still_means_every_position():
    profile = Profile(dict(curve_profile([0.5]).data, acceptance=[
        {"target_family": "*", "draft": "ngram", "alpha": 0.5}]))
    assert profile.alpha(profile.find_model("target"), "ngram") == 0.5


def _best_k(profile, target_name, draft_name, k_max=8):
    target = profile.models[target_name]
    draft = None if draft_name == "ngram" else profile.models[draft_name]
    curve = profile.alpha(target, draft_name)
    base = TimingModel(profile, target, None).decode_step_s(1)

    def speedup(k):
        length, reach = 1.0, 1.0
        for i in range(k):
            reach *= curve[min(i, len(curve) - 1)]
            length += reach
        step = TimingModel(profile, target, specconfig.SpecSettings("x", draft, k, curve)).decode_step_s(1)
        return base * length / step

    return max(range(1, k_max + 1), key=speedup)


def test_board_profiles_make_the_best_k_differ_by_pair_and_board():
    best = {}
    for path in sorted(glob.glob(os.path.join(HERE, "profiles", "*.json"))):
        with open(path) as handle:
            profile = Profile(json.load(handle))
        for entry in profile.acceptance:
            assert entry.get("alpha_per_position"), "%s: %s has no curve" % (path, entry["draft"])
        for target in ("meta-llama/Llama-3.1-8B-Instruct", "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"):
            for draft in ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "meta-llama/Llama-3.2-1B-Instruct", "ngram"):
                best[(profile.name, target, draft)] = _best_k(profile, target, draft)
    by_pair = {}
    for (board, target, draft), k in best.items():
        by_pair.setdefault((target, draft), set()).add(k)
    assert len(set(best.values())) >= 3  # pairs disagree
    assert any(len(ks) > 1 for ks in by_pair.values())  # and one pair's best k depends on the board
