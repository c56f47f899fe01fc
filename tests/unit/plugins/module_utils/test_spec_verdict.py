# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import random

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.rule import (
    median, pool_level, sample_cv, spec_verdict, validate_params,
)


def bench(c1_tok_s, c1_tpot, c8_tok_s=400.0, acceptance=None, failed=0, levels=(1, 8)):
    runs = []
    if 1 in levels:
        runs.append({"concurrency": 1, "completed": 10, "failed": failed, "throughput_tok_s": c1_tok_s,
                     "tpot_ms_p50": c1_tpot, "ttft_ms_p50": 80.0, "errors": {}})
    if 8 in levels:
        runs.append({"concurrency": 8, "completed": 80, "failed": 0, "throughput_tok_s": c8_tok_s,
                     "tpot_ms_p50": c1_tpot * 2, "errors": {}})
    spec = None if acceptance is None else {"acceptance_rate": acceptance, "mean_acceptance_length": 2.1}
    return {"runs": runs, "spec_decode": spec, "server": {"version": "0.20.1"}, "warnings": []}


BASE = bench(100.0, 30.0, 400.0)


def cand(gain, drop, c8_change=0.0, **kw):
    return bench(100.0 * (1 + gain), 30.0 * (1 - drop), 400.0 * (1 + c8_change), **kw)


# (case id, candidate, params, expected decision, expected action)
CASES = [
    ("clear keep", cand(0.60, 0.40), {}, "keep", "keep"),
    ("clear revert low gain", cand(0.0, 0.02), {}, "revert", "revert"),
    ("negative gain", cand(-0.20, -0.25), {}, "revert", "revert"),
    ("clear marginal", cand(0.20, 0.15), {"noise_cv": 0.01}, "marginal", "keep"),
    ("marginal action revert", cand(0.20, 0.15), {"noise_cv": 0.01, "marginal_action": "revert"},
     "marginal", "revert"),
    ("gain ok but tpot short", cand(0.60, 0.05), {}, "marginal", "keep"),
    ("c8 clear regression", cand(0.60, 0.40, c8_change=-0.25), {}, "revert", "revert"),
    ("c8 drop within noise is no regression when final", cand(0.60, 0.40, c8_change=-0.05),
     {"final": True}, "keep", "keep"),
    ("c8 tolerance absorbs drop", cand(0.60, 0.40, c8_change=-0.04),
     {"c8_regression_tolerance": 0.05}, "keep", "keep"),
    ("gain 29.5% within noise", cand(0.295, 0.40), {}, "repeat", "repeat"),
    ("gain 29.5% final is marginal", cand(0.295, 0.40), {"final": True}, "marginal", "keep"),
    ("gain 30.5% final is keep", cand(0.305, 0.40), {"final": True}, "keep", "keep"),
    ("gain 11% within noise of revert", cand(0.11, 0.05), {}, "repeat", "repeat"),
    ("gain 9.5% final reverts", cand(0.095, 0.05), {"final": True}, "revert", "revert"),
    ("tpot 19% within noise", cand(0.60, 0.19), {}, "repeat", "repeat"),
    ("zero noise decides literally", cand(0.295, 0.40), {"noise_cv": 0.0}, "marginal", "keep"),
    ("no c8 check requested", bench(160.0, 18.0, levels=(1,)), {"high_concurrency": None}, "keep", "keep"),
]


@pytest.mark.parametrize("name,candidate,params,decision,action", CASES, ids=[c[0] for c in CASES])
def test_decision_table(name, candidate, params, decision, action):
    out = spec_verdict(BASE, candidate, **params)
    assert (out["decision"], out["action"]) == (decision, action), out["reasons"]
    assert out["flagged"] == (decision in ("marginal", "repeat"))


def test_keep_reason_has_numbers_and_threshold():
    out = spec_verdict(bench(28.1, 35.0), bench(39.7, 24.0))
    assert out["decision"] == "keep"
    assert out["reasons"][0] == ("Throughput at concurrency 1 rose 41.3% (28.1 → 39.7 tok/s), "
                                 "above the 30% keep threshold.")
    assert "35.0 → 24.0 ms" in out["reasons"][1]
    assert out["metrics"]["c1_throughput_gain"] == pytest.approx(39.7 / 28.1 - 1, abs=1e-6)
    assert out["metrics"]["noise_band"] == pytest.approx(2 * 0.03 * 2 ** 0.5, abs=1e-6)


def test_repeat_names_the_ambiguous_comparison():
    out = spec_verdict(BASE, cand(0.295, 0.40))
    assert out["ambiguous"] == ["gain_keep"]
    assert "throughput keep threshold" in out["reasons"][-1]
    final = spec_verdict(BASE, cand(0.295, 0.40), final=True)
    assert any("within noise" in r for r in final["reasons"])
    assert final["flagged"] is True


def test_c8_drop_within_band_repeats_then_counts_as_noise():
    first = spec_verdict(BASE, cand(0.60, 0.40, c8_change=-0.05))
    assert first["decision"] == "repeat" and first["ambiguous"] == ["c8_regressed"]
    final = spec_verdict(BASE, cand(0.60, 0.40, c8_change=-0.05), final=True)
    assert final["decision"] == "keep"
    assert any("within the noise band" in r for r in final["reasons"])


def test_ambiguity_that_cannot_change_the_decision_does_not_repeat():
    # gain is clearly below the revert threshold: whether TPOT met its target is irrelevant
    out = spec_verdict(BASE, cand(0.0, 0.19))
    assert out["decision"] == "revert"


@pytest.mark.parametrize("candidate,needle", [
    (None, "candidate benchmark result is missing"),
    (bench(150.0, 20.0, levels=(1,)), "no run at concurrency 8"),
    (bench(0.0, 20.0), "zero or missing throughput"),
    (bench(150.0, 20.0, failed=3), "3 request(s) failed"),
    ({"runs": "garbage"}, "no run at concurrency 1"),
    ("not a dict", "missing"),
])
def test_unusable_input_reverts_with_reason(candidate, needle):
    out = spec_verdict(BASE, candidate)
    assert out["decision"] == "revert" and out["action"] == "revert"
    assert any(needle in r for r in out["reasons"]), out["reasons"]


def test_missing_tpot_reverts():
    c = cand(0.6, 0.4)
    c["runs"][0]["tpot_ms_p50"] = None
    out = spec_verdict(BASE, c)
    assert out["decision"] == "revert" and "TPOT p50" in out["reasons"][0]


def test_custom_concurrency_levels():
    def b(t2, t16):
        return {"runs": [{"concurrency": 2, "throughput_tok_s": t2, "tpot_ms_p50": 1000.0 / t2, "failed": 0},
                         {"concurrency": 16, "throughput_tok_s": t16, "tpot_ms_p50": 50.0, "failed": 0}]}
    out = spec_verdict(b(50, 500), b(80, 300), low_concurrency=2, high_concurrency=16)
    assert out["decision"] == "revert"
    assert "concurrency 16" in out["reasons"][2]


def test_repeats_use_medians_and_observed_noise():
    base = [bench(100.0, 30.0), bench(101.0, 30.2), bench(99.0, 29.9)]
    outlier = [cand(0.60, 0.40), cand(0.61, 0.40), bench(10.0, 300.0)]  # one broken repeat
    lvl = pool_level(outlier, 1)
    assert lvl["throughput_tok_s"] == pytest.approx(160.0)
    assert lvl["repeats"] == 3
    out = spec_verdict(base, outlier)
    # the outlier makes the observed CV huge, so the band swamps every threshold
    assert out["metrics"]["noise_cv"] > 0.5
    assert out["decision"] == "repeat"
    calm = [cand(0.60, 0.40), cand(0.62, 0.41), cand(0.59, 0.39)]
    assert spec_verdict(base, calm)["decision"] == "keep"


def test_acceptance_advisory_is_advisory_only():
    # issue 15 bug 5: raising k is advice for a kept candidate, never for a reverted one
    high = spec_verdict(BASE, cand(0.0, 0.02, acceptance=0.75))
    assert high["decision"] == "revert"
    assert high["advisories"] == []
    assert high["metrics"]["acceptance_rate"] == 0.75
    assert "num_speculative_tokens" in spec_verdict(BASE, cand(0.6, 0.4, acceptance=0.75))["advisories"][0]
    assert spec_verdict(BASE, cand(0.6, 0.4, acceptance=0.5))["advisories"] == []


@pytest.mark.parametrize("params,needle", [
    ({"revert_throughput_gain": 0.5}, "must not exceed keep_throughput_gain"),
    ({"marginal_action": "maybe"}, "marginal_action must be 'keep' or 'revert'"),
    ({"noise_cv": -1}, "noise_cv must be a non-negative number"),
    ({"low_concurrency": 0}, "low_concurrency must be a positive integer"),
    ({"high_concurrency": 1}, "high_concurrency must differ"),
    ({"keep_tpot_drop": 1.5}, "fraction below 1"),
    ({"treshold": 1}, "unknown parameter(s) treshold"),
])
def test_bad_parameters_raise_with_the_rule(params, needle):
    with pytest.raises(ValueError) as err:
        spec_verdict(BASE, cand(0.6, 0.4), **params)
    assert needle in str(err.value)


def test_validate_params_defaults():
    p = validate_params({})
    assert (p["keep_throughput_gain"], p["keep_tpot_drop"], p["revert_throughput_gain"]) == (0.30, 0.20, 0.10)
    assert (p["low_concurrency"], p["high_concurrency"], p["marginal_action"]) == (1, 8, "keep")


def test_helpers():
    assert median([3, None, 1, 2]) == 2.0
    assert median([4, 1, 2, 3]) == 2.5
    assert median([None]) is None
    assert sample_cv([10.0]) is None
    assert sample_cv([9.0, 11.0]) == pytest.approx(2 ** 0.5 / 10.0)


def test_small_perturbations_never_flip_keep_and_revert():
    """Property: two measurements that differ by less than the band never give keep vs revert."""
    rng = random.Random(20260301)
    cv = 0.03
    band = 2 * cv * 2 ** 0.5
    for dummy in range(3000):
        gain = rng.uniform(-0.2, 0.8)
        drop = rng.uniform(-0.2, 0.6)
        c8 = rng.uniform(-0.4, 0.2)
        first = spec_verdict(BASE, cand(gain, drop, c8), noise_cv=cv)["decision"]
        # shift every metric by less than the band (relative numbers, so stay a bit inside)
        d = [rng.uniform(-0.95, 0.95) * band for dummy in range(3)]
        second = spec_verdict(BASE, cand(gain + d[0], drop + d[1], c8 + d[2]), noise_cv=cv)["decision"]
        assert {first, second} != {"keep", "revert"}, (gain, drop, c8, d, first, second)
        # a clear (non-repeat) verdict is stable: the repeated measurement confirms it
        if first != "repeat":
            assert spec_verdict(BASE, cand(gain, drop, c8), noise_cv=cv, final=True)["decision"] == first


def test_final_never_repeats():
    rng = random.Random(7)
    for dummy in range(500):
        out = spec_verdict(BASE, cand(rng.uniform(-0.2, 0.8), rng.uniform(-0.2, 0.6), rng.uniform(-0.4, 0.2)),
                           final=True)
        assert out["decision"] in ("keep", "revert", "marginal")
