"""Noise settings: off by default, and each knob moves what it should (virtual clock, no sleeps)."""
import math

import pytest

from test_accuracy import grid_profile

from vllm_sim import specconfig
from vllm_sim.engine import Engine, VirtualClock, simulate
from vllm_sim.noise import Noise


def requests(noise, spec=True, n=40, out=64, concurrency=1, alpha=0.6):
    profile = grid_profile(alpha, 0.05)
    target = profile.find_model("target")
    sc = specconfig.validate({"method": "draft_model", "model": "draft", "num_speculative_tokens": 3},
                             target, profile) if spec else None
    engine = Engine(profile, target, sc, clock=VirtualClock(), scale=1.0, noise=noise)
    return simulate(engine, concurrency, n, 16, out)


def tpots(reqs):
    return [(r.finished_at - r.first_token) / (r.generated - 1) for r in reqs]


def cv(values):
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) / m


def throughput(reqs):
    return sum(r.generated for r in reqs) / (max(r.finished_at for r in reqs) - min(r.arrival for r in reqs))


def test_no_settings_means_no_noise():
    assert not Noise({}).enabled
    assert Noise(None).step(0.04) == 0.04
    base = tpots(requests(None, spec=False))
    assert max(base) == pytest.approx(min(base))


def test_step_jitter_spreads_requests_without_speculation():
    spread = cv(tpots(requests({"step_jitter_cv": 0.3, "seed": 1}, spec=False, out=32)))
    assert 0.02 < spread < 0.2  # per-step 30 % averages down over 31 steps


def test_acceptance_spread_widens_per_request_tpot_under_speculation():
    plain = cv(tpots(requests({"seed": 2, "acceptance_spread": 0.0, "step_jitter_cv": 0.01})))
    spread = cv(tpots(requests({"seed": 2, "acceptance_spread": 0.4, "step_jitter_cv": 0.01})))
    assert spread > 1.3 * plain


def test_drift_makes_two_starts_differ_and_fixed_seeds_repeat():
    runs = [throughput(requests({"drift_cv": 0.1, "drift_period_s": 1000.0}, spec=False, n=8)) for unused in range(6)]
    assert cv(runs) > 0.02
    same = [throughput(requests({"drift_cv": 0.1, "seed": 5}, spec=False, n=8)) for unused in range(2)]
    assert same[0] == same[1]


def test_thermal_episode_slows_the_steps_inside_it():
    reqs = requests({"thermal": {"after_s": 4.0, "duration_s": 6.0, "slowdown": 2.0}, "seed": 3}, spec=False,
                    n=30, out=16)
    during = [t for r, t in zip(reqs, tpots(reqs)) if 4.1 < r.first_token and r.finished_at < 9.9]
    before = [t for r, t in zip(reqs, tpots(reqs)) if r.finished_at < 3.9]
    assert during and before
    assert sum(during) / len(during) == pytest.approx(2.0 * sum(before) / len(before), rel=0.05)


def test_a_request_counted_thermal_episode_starts_with_the_request_after_the_count():
    # Concurrency 1: request i is admitted alone, so the episode's first slow request is the 11th
    # however long the first ten took (a count, not model time, fixes where a round is throttled).
    settings = {"thermal": {"after_requests": 10, "duration_s": 10 ** 6, "slowdown": 3.0}, "seed": 3}
    slow = tpots(requests(settings, spec=False, n=20, out=16))
    fast = tpots(requests(None, spec=False, n=20, out=16))
    assert slow[:10] == pytest.approx(fast[:10])
    assert slow[10:] == pytest.approx([3.0 * t for t in fast[10:]], rel=0.02)


def test_negative_cv_is_refused():
    with pytest.raises(ValueError, match="noise"):
        Noise({"step_jitter_cv": -0.1})


def test_every_board_profile_has_noise_and_the_fleet_presets():
    from conftest import board
    from vllm_sim.profile import Profile
    for name in ("thor_t5000", "agx_orin_64gb", "agx_orin_32gb", "orin_nx_16gb", "orin_nano_8gb"):
        data = board(name)
        assert Noise(Profile(data).noise).enabled
        noisy = Profile(dict(data, noise_preset="noisy")).noise
        assert noisy["drift_cv"] > Profile(data).noise["drift_cv"] and noisy["thermal"]["slowdown"] > 1
        assert Profile(dict(data, noise_preset="inconclusive")).noise["drift_cv"] >= 0.2


def test_unknown_noise_preset_is_refused():
    from conftest import board
    from vllm_sim.profile import Profile, ProfileError
    with pytest.raises(ProfileError, match="noise_preset"):
        Profile(dict(board("thor_t5000"), noise_preset="calm"))
