# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.choose_k import (
    ChooseKError, acceptance_lengths, acceptance_rate, choose_k, fixed_cost, keep_k, next_k,
)

T_BASE = 0.020  # one target step, seconds
N_TOKENS = 128


def _run(tpot_s, ttft_s=0.0, spec=None, concurrency=1, n=N_TOKENS, requests=10):
    latency = ttft_s + (n - 1) * tpot_s
    run = {"concurrency": concurrency, "completed": requests, "output_tokens": n * requests,
           "tpot_ms_p50": tpot_s * 1000.0, "ttft_ms_p50": ttft_s * 1000.0,
           "throughput_tok_s": n / latency}
    if spec is not None:
        run["spec_decode"] = spec
    return run


def _baseline(ttft_s=0.0):
    return {"runs": [_run(T_BASE, ttft_s), _run(T_BASE * 3, ttft_s, concurrency=8)],
            "spec_decode": None}


def _candidate(rates, k, cost_per_k, ttft_s=0.0, constant=False, drafts=1000):
    """A candidate measured at k whose step is T_BASE + cost (the model the rule assumes)."""
    length = 1.0 + sum(rates[:k])
    step = T_BASE + (cost_per_k if constant else cost_per_k * k)
    spec = {"drafts": drafts, "per_position": list(rates[:k]),
            "mean_acceptance_length": length}
    return {"runs": [_run(step / length, ttft_s, spec)], "spec_decode": spec}


def _geometric(alpha, k):
    return [alpha ** (i + 1) for i in range(k)]


def _leviathan(alpha, k, c):
    return (1 - alpha ** (k + 1)) / ((1 - alpha) * (1 + k * c))


@pytest.mark.parametrize("alpha,c", [(0.8, 0.05), (0.6, 0.1), (0.9, 0.02), (0.5, 0.2)])
def test_predictions_follow_leviathan_for_a_constant_rate(alpha, c):
    k_measured = 8
    cand = _candidate(_geometric(alpha, k_measured), k_measured, c * T_BASE)
    out = choose_k(cand, _baseline(), k_measured, tie_tolerance=0.0)
    for k in range(1, k_measured + 1):
        assert out["predicted_speedup"][str(k)] == pytest.approx(_leviathan(alpha, k, c), rel=1e-3)
    best = max(range(1, k_measured + 1), key=lambda k: _leviathan(alpha, k, c))
    assert out["k"] == best
    assert sorted(out["predicted_speedup"], key=int) == [str(k) for k in range(1, k_measured + 1)]


def test_prediction_at_the_measured_k_equals_the_measurement_even_with_prefill():
    cand = _candidate(_geometric(0.7, 5), 5, 0.001, ttft_s=0.3)
    base = _baseline(ttft_s=0.25)
    out = choose_k(cand, base, 5)
    measured = cand["runs"][0]["throughput_tok_s"] / base["runs"][0]["throughput_tok_s"]
    assert out["predicted_speedup"]["5"] == pytest.approx(measured, rel=1e-4)
    assert out["measured_speedup"] == pytest.approx(measured, rel=1e-3)
    # prefill dilutes the decode gain: every prediction lies below the pure TPOT ratio
    assert out["predicted_speedup"]["3"] < _leviathan(0.7, 3, 0.05)


def test_a_steep_curve_picks_a_small_k_and_a_flat_one_a_large_k():
    steep = [0.75, 0.3, 0.1, 0.03, 0.01, 0.0]  # conditional rates fall fast after the first token
    flat = _geometric(0.92, 6)
    cost = 0.06 * T_BASE
    assert choose_k(_candidate(steep, 6, cost), _baseline(), 6)["k"] == 2
    assert choose_k(_candidate(flat, 6, cost), _baseline(), 6)["k"] == 6


def test_ngram_cost_is_fixed_per_step():
    rates = [0.5, 0.3, 0.2, 0.15, 0.1]
    cand = _candidate(rates, 5, 0.1 * T_BASE, constant=True)
    fixed = choose_k(cand, _baseline(), 5, method="ngram", tie_tolerance=0.0)
    assert fixed["k"] == 5  # no per-token cost: every accepted position is free speed
    lengths = acceptance_lengths(rates, 5)
    assert fixed["predicted_speedup"]["2"] == pytest.approx(lengths[2] / 1.1, rel=1e-3)
    # the same run read as a per-token cost makes small k look cheaper
    per_token = choose_k(cand, _baseline(), 5, method="eagle3", tie_tolerance=0.0)
    assert per_token["predicted_speedup"]["1"] > fixed["predicted_speedup"]["1"]


def test_tie_goes_to_the_smaller_k():
    # k=4 is best, k=3 within 2 %: the smaller is chosen and the reason says so
    rates = [0.8, 0.6, 0.45, 0.15, 0.0]
    cand = _candidate(rates, 5, 0.04 * T_BASE)
    strict = choose_k(cand, _baseline(), 5, tie_tolerance=0.0)
    loose = choose_k(cand, _baseline(), 5, tie_tolerance=0.05)
    assert loose["k"] < strict["k"]
    assert any("smaller k is chosen" in r for r in loose["reasons"])


def test_losing_speculation_is_reported():
    cand = _candidate([0.1, 0.01, 0.0], 3, 0.3 * T_BASE)
    out = choose_k(cand, _baseline(), 3)
    assert out["k"] == 1 and out["beats_baseline"] is False
    assert any("no k up to 3 is predicted to beat the baseline" in r for r in out["reasons"])


def test_missing_positions_count_as_zero_and_rises_are_clipped():
    assert acceptance_lengths([0.5, 0.7], 4) == pytest.approx([1.0, 1.5, 2.0, 2.0, 2.0])
    cand = _candidate([0.6, 0.4, 0.2, 0.1], 4, 0.02 * T_BASE)
    cand["runs"][0]["spec_decode"]["per_position"] = [0.6, 0.4]
    out = choose_k(cand, _baseline(), 4)
    assert out["acceptance_length"]["4"] == pytest.approx(2.0)
    assert any("2 of 4 positions" in r for r in out["reasons"])


def test_repeats_pool_counters_by_draft_steps():
    a = _candidate([0.8, 0.6], 2, 0.001, drafts=300)
    b = _candidate([0.4, 0.2], 2, 0.001, drafts=100)
    out = choose_k([a, b], [_baseline(), _baseline()], 2)
    assert out["acceptance_length"]["1"] == pytest.approx(1 + (0.8 * 300 + 0.4 * 100) / 400.0)


def test_top_level_counters_are_used_when_the_level_has_none():
    cand = _candidate(_geometric(0.7, 3), 3, 0.001)
    del cand["runs"][0]["spec_decode"]
    assert choose_k(cand, _baseline(), 3)["acceptance_length"]["3"] == pytest.approx(
        1 + 0.7 + 0.49 + 0.343)


@pytest.mark.parametrize("mutate,match", [
    (lambda c, b: c.update(spec_decode=None) or c["runs"][0].pop("spec_decode"), "no spec-decode counters"),
    (lambda c, b: b.update(runs=[]), "baseline result has no completed run at concurrency 1"),
    (lambda c, b: c["runs"][0].update(tpot_ms_p50=None), "candidate result has no TPOT"),
])
def test_bad_inputs_name_the_problem(mutate, match):
    cand, base = _candidate(_geometric(0.7, 3), 3, 0.001), _baseline()
    mutate(cand, base)
    with pytest.raises(ChooseKError, match=match):
        choose_k(cand, base, 3)


@pytest.mark.parametrize("k", [0, -1, True, "3", 2.5])
def test_k_measured_must_be_a_positive_integer(k):
    with pytest.raises(ChooseKError, match="k_measured"):
        choose_k(_candidate(_geometric(0.7, 3), 3, 0.001), _baseline(), k)


def test_larger_k_may_help_only_when_the_last_position_still_pays():
    cost = 0.05 * T_BASE
    assert choose_k(_candidate(_geometric(0.9, 3), 3, cost), _baseline(), 3)["larger_k_may_help"] is True
    steep = [0.7, 0.2, 0.02]
    assert choose_k(_candidate(steep, 3, cost), _baseline(), 3)["larger_k_may_help"] is False


def test_other_rounds_bend_the_cost_curve_at_the_knee():
    # verification turns compute bound above k=3: the probe at 6 pays for it, k=3 does not
    rates = _geometric(0.8, 6)

    def step(k):
        return T_BASE + 0.02 * T_BASE * k + (0.1 * T_BASE * (k - 3) if k > 3 else 0.0)

    def cand(k):
        length = 1.0 + sum(rates[:k])
        spec = {"drafts": 1000, "per_position": rates[:k]}
        return {"runs": [_run(step(k) / length, 0.0, spec)], "spec_decode": spec}

    alone = choose_k(cand(6), _baseline(), 6, tie_tolerance=0.0)
    both = choose_k(cand(6), _baseline(), 6, tie_tolerance=0.0, others=[{"k": 3, "result": cand(3)}])
    truth = dict((k, (1.0 + sum(rates[:k])) * T_BASE / step(k)) for k in range(1, 7))
    assert both["predicted_speedup"]["3"] == pytest.approx(truth[3], rel=1e-3)
    assert both["k"] == max(truth, key=truth.get)
    assert alone["predicted_speedup"]["3"] < truth[3]  # one straight line overcharges small k


def test_others_must_name_a_smaller_k():
    with pytest.raises(ChooseKError, match="between 1 and k_measured - 1"):
        choose_k(_candidate(_geometric(0.7, 3), 3, 0.001), _baseline(), 3,
                 others=[{"k": 3, "result": _candidate(_geometric(0.7, 3), 3, 0.001)}])


# ---- two measured k: the fixed cost, the confirmation, keep_k -------------------------------------------------
def _round(rates, k, step, drafts=1000, ttft_s=0.0):
    """A candidate round at k whose whole step (draft + verification) takes ``step`` seconds."""
    length = 1.0 + sum(rates[:k])
    spec = {"drafts": drafts, "per_position": list(rates[:k])}
    return {"runs": [_run(step / length, ttft_s, spec)], "spec_decode": spec}


def test_the_fixed_cost_is_measured_from_two_k_and_clamped():
    # n-gram: 4 ms lookup + 0.5 ms per verified token: the line through k=3 and k=8 meets k=0 at 4 ms
    assert fixed_cost([(3, 0.0055), (8, 0.008)], True) == pytest.approx(0.004)
    # one knot: assumed (the whole cost for n-gram, nothing for a drafter)
    assert fixed_cost([(3, 0.0055)], True) == 0.0055 and fixed_cost([(3, 0.0055)], False) == 0.0
    # a compute knee between the knots: the line meets k=0 below 0, clamped to 0
    assert fixed_cost([(3, 0.003), (8, 0.05)], False) == 0.0
    # ... and for the n-gram proposer the line says nothing of k=0 then: its lookup is the first knot's cost
    assert fixed_cost([(3, 0.003), (8, 0.05)], True) == 0.003
    # never above the first knot's own cost
    assert fixed_cost([(3, 0.006), (8, 0.001)], True) == 0.006


def test_ngram_cost_is_measured_from_two_k_not_assumed_constant():
    # a lookup of 10 % of a step plus a verification that widens by 6 % of a step per token: a constant
    # cost (one round) undercharges k=8 and overcharges k=1; two rounds give the truth
    rates = [0.5] * 8

    def step(k):
        return T_BASE * (1.1 + 0.06 * k)

    truth = dict((k, (1.0 + sum(rates[:k])) * T_BASE / step(k)) for k in range(1, 9))
    both = choose_k(_round(rates, 8, step(8)), _baseline(), 8, method="ngram", tie_tolerance=0.0,
                    others=[{"k": 3, "result": _round(rates, 3, step(3))}])
    for k in range(1, 9):
        assert both["predicted_speedup"][str(k)] == pytest.approx(truth[k], rel=1e-3)
    assert both["k"] == max(truth, key=truth.get)
    alone = choose_k(_round(rates, 8, step(8)), _baseline(), 8, method="ngram", tie_tolerance=0.0)
    assert alone["predicted_speedup"]["1"] < truth[1] * 0.97


def test_confirm_k_names_a_prediction_no_round_measured():
    rates = _geometric(0.8, 8)

    def step(k):
        return T_BASE * (1.0 + 0.12 * k)

    out = choose_k(_round(rates, 8, step(8)), _baseline(), 8, others=[{"k": 3, "result": _round(rates, 3, step(3))}])
    assert out["k"] not in (3, 8) and out["confirm_k"] == out["k"]
    measured = choose_k(_round(rates, 3, step(3)), _baseline(), 3)
    assert measured["confirm_k"] is None or measured["confirm_k"] != 3


def test_acceptance_rate_is_accepted_over_drafted_tokens_at_k():
    spec = {"drafts": 100, "per_position": [0.8, 0.6, 0.4]}
    result = {"runs": [_run(0.01, 0.0, spec)]}
    assert acceptance_rate(result, 3) == pytest.approx(0.6)
    assert acceptance_rate(result, 4) == pytest.approx(0.45)  # a position not reported counts 0
    assert acceptance_rate({"runs": [_run(0.01)]}, 3) is None


def _rounds(rates, steps):
    return [{"k": k, "result": _round(rates, k, step)} for k, step in steps]


def test_keep_k_keeps_the_best_measured_k_not_the_prediction():
    rates = _geometric(0.85, 8)
    steps = [(3, T_BASE * 1.3), (8, T_BASE * 1.8), (5, T_BASE * 1.9)]  # k=5 measured slow: not kept
    out = keep_k(_rounds(rates, steps), _baseline(), 3, predicted_k=5)
    speed = dict((k, (1.0 + sum(rates[:k])) * T_BASE / step) for k, step in steps)
    assert out["k"] == max(speed, key=speed.get) and out["k"] != 5
    assert out["measured_by_k"][str(out["k"])] == pytest.approx(speed[out["k"]], rel=1e-3)
    assert "the prediction (k=5) is not what measured best" in out["reasons"]
    assert out["acceptance_at_start"] == pytest.approx(sum(rates[:3]) / 3, abs=1e-4)


def test_keep_k_ties_go_to_the_smaller_k():
    rates = [1.0] * 8
    # k=3: 4 tokens per 1.6 steps' time; k=5 exactly as fast (6 per 2.4): within the tie, the smaller wins
    out = keep_k(_rounds(rates, [(3, T_BASE * 1.6), (5, T_BASE * 2.4), (8, T_BASE * 4.0)]), _baseline(), 3)
    assert out["k"] == 3


def test_the_0_6_rule_keeps_the_start_unless_a_larger_k_measured_faster_by_more_than_the_noise():
    rates = [0.5, 0.25, 0.125, 0.1, 0.09, 0.08, 0.07, 0.06]  # acceptance at 3: 0.29
    start_speed = (1.0 + sum(rates[:3])) / 1.3
    # k=5 faster than k=3 by 2 %, or by 4.5 %: within the noise (6 %), so the start k stays
    for gain in (1.02, 1.045):
        step5 = T_BASE * (1.0 + sum(rates[:5])) / (start_speed * gain)
        small = keep_k(_rounds(rates, [(3, T_BASE * 1.3), (5, step5), (8, T_BASE * 3.0)]), _baseline(), 3)
        assert small["k"] == 3 and small["acceptance_at_start"] < 0.6
        assert "a k above it is kept only when it measured faster by more than 6.0 %, and none did" in " ".join(
            small["reasons"])
    # an operator's own noise (3 %) lets the 4.5 % through
    assert keep_k(_rounds(rates, [(3, T_BASE * 1.3), (5, step5), (8, T_BASE * 3.0)]), _baseline(), 3,
                  noise=0.03)["k"] == 5
    # faster by 8 %: measured evidence that the larger k pays
    step5 = T_BASE * (1.0 + sum(rates[:5])) / (start_speed * 1.08)
    large = keep_k(_rounds(rates, [(3, T_BASE * 1.3), (5, step5), (8, T_BASE * 3.0)]), _baseline(), 3)
    assert large["k"] == 5 and "k=5 measured faster than k=3" in " ".join(large["reasons"])
    # the same 2 % with acceptance above 0.6: the best measured is kept
    high = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2]
    high_speed = (1.0 + sum(high[:3])) / 1.3
    step5 = T_BASE * (1.0 + sum(high[:5])) / (high_speed * 1.02)
    assert keep_k(_rounds(high, [(3, T_BASE * 1.3), (5, step5), (8, T_BASE * 5.0)]), _baseline(), 3)["k"] == 5


@pytest.mark.parametrize("args,kwargs,match", [
    (([], None, 3), {}, "rounds must be a non-empty list"),
    (("x", None, 3), {}, "rounds must be a non-empty list"),
    (([{"k": 3}], None, 3), {}, "entries, got an entry"),
    (([{"k": True, "result": {}}], None, 3), {}, "rounds: k=True must be an integer"),
    (([{"k": 3, "result": {}}, {"k": 3, "result": {}}], None, 3), {}, "k=3 is listed twice"),
    (([{"k": 8, "result": {}}], None, 3), {}, r"must include the start k \(3\)"),
    (([{"k": 3, "result": {}}], None, "3"), {}, "start_k must be"),
    (([{"k": 3, "result": {}}], None, 3), {"predicted_k": 2.5}, "predicted_k must be an integer"),
    (([{"k": 3, "result": {}}], None, 3), {"noise": float("nan")}, "noise must be a number"),
    (([{"k": 3, "result": {}}], None, 3), {"noise": "0.03"}, "noise must be a number"),
    (([{"k": 3, "result": {}}], None, 3), {"tie_tolerance": float("inf")}, "tie_tolerance must be a number"),
    (([{"k": 3, "result": {}}], None, 3), {"concurrency": True}, "concurrency must be"),
    (([{"k": 3, "result": {}}], None, 3), {"method": 3}, "method must be"),
])
def test_keep_k_bad_inputs_name_the_field(args, kwargs, match):
    with pytest.raises(ChooseKError, match=match):
        keep_k(*args, **kwargs)


def test_keep_k_bad_numbers_in_a_round_name_the_round_and_field():
    rates = _geometric(0.8, 8)
    rounds = _rounds(rates, [(3, T_BASE * 1.3), (8, T_BASE * 1.9)])
    rounds[1]["result"]["runs"][0]["throughput_tok_s"] = float("nan")
    with pytest.raises(ChooseKError, match="input.bench_number: the k=8 result's concurrency 1 throughput_tok_s"):
        keep_k(rounds, _baseline(), 3)
    rounds = _rounds(rates, [(3, T_BASE * 1.3), (8, T_BASE * 1.9)])
    rounds[0]["result"]["spec_decode"]["per_position"][1] = float("inf")
    with pytest.raises(ChooseKError, match=r"input.bench_number: .*per_position\[1\] must be a finite number"):
        keep_k(rounds, _baseline(), 3)


@pytest.mark.parametrize("mutate,match", [
    (lambda c, b: c["runs"][0].update(tpot_ms_p50=float("nan")), "candidate result's concurrency 1 tpot_ms_p50"),
    (lambda c, b: c["runs"][0].update(throughput_tok_s=float("inf")), "throughput_tok_s must be a finite number"),
    (lambda c, b: c["spec_decode"].update(drafts=float("nan")), "spec_decode drafts must be a finite number"),
    (lambda c, b: c["spec_decode"]["per_position"].__setitem__(0, float("nan")), r"per_position\[0\]"),
    (lambda c, b: c["spec_decode"]["per_position"].__setitem__(0, "0.7"), "must be a number, got '0.7'"),
    (lambda c, b: b["runs"][0].update(ttft_ms_p50=-1.0), "baseline result's concurrency 1 ttft_ms_p50 must not be"),
])
def test_non_finite_or_wrongly_typed_numbers_name_the_field(mutate, match):
    cand, base = _candidate(_geometric(0.7, 3), 3, 0.001), _baseline()
    cand["runs"][0]["spec_decode"] = cand["spec_decode"]
    mutate(cand, base)
    with pytest.raises(ChooseKError, match=match):
        choose_k(cand, base, 3)


@pytest.mark.parametrize("kwargs,match", [
    ({"tie_tolerance": float("nan")}, "tie_tolerance must be a number"),
    ({"tie_tolerance": "0.01"}, "tie_tolerance must be a number"),
    ({"concurrency": "1"}, "concurrency must be"),
    ({"method": ["eagle3"]}, "method must be"),
    ({"others": "k=3"}, "others must be a list"),
])
def test_bad_options_name_the_option(kwargs, match):
    with pytest.raises(ChooseKError, match=match):
        choose_k(_candidate(_geometric(0.7, 3), 3, 0.001), _baseline(), 3, **kwargs)


@pytest.mark.parametrize("result", ["a string", 42, [{"runs": []}, "x"]])
def test_a_result_that_is_not_a_mapping_is_named(result):
    with pytest.raises(ChooseKError, match="the candidate result must be a vllm_bench result"):
        choose_k(result, _baseline(), 3)


def test_the_mean_tpot_cancels_the_rounds_acceptance_draw():
    # the p50 TPOT says 9 ms but the round's throughput says a mean of 10 ms: the step is TPOT x length
    rates = [0.8, 0.6, 0.4]
    spec = {"drafts": 500, "per_position": rates}
    run = _run(0.010, 0.0, spec)
    run["tpot_ms_p50"] = 9.0
    out = choose_k({"runs": [run]}, _baseline(), 3)
    assert out["reasons"][1].endswith("against the baseline step 20.00 ms")
    assert "TPOT 10.00 ms" in out["reasons"][1]


# ---- the roofline between and below the knots (a compute knee the probes straddle or passed) -------------------
def _roofline_step(fixed, per_k, per_token):
    """Step time at k: a fixed and a per-drafted-token cost, and a verification of k + 1 tokens that is
    memory bound (one target step) until (k + 1) x per_token of compute exceeds it (fractions of T_BASE)."""
    def step(k):
        return T_BASE * (1.0 + fixed + per_k * k + max(0.0, (k + 1) * per_token - 1.0))
    return step


def _truth(rates, step, ks):
    return dict((k, (1.0 + sum(rates[:k])) * T_BASE / step(k)) for k in ks)


@pytest.mark.parametrize("start,method,step", [
    (3, None, _roofline_step(0.0, 0.05, 1.0 / 6)),  # knee at k=5, between the start and the probe
    (5, None, _roofline_step(0.0, 0.05, 1.0 / 3)),  # knee at k=2, below the start: both rounds compute bound
    (5, "ngram", _roofline_step(0.12, 0.0, 1.0 / 3)),  # the same with an n-gram lookup instead of a drafter
    (3, "ngram", _roofline_step(0.12, 0.0, 1.0 / 6)),
])
def test_a_compute_knee_the_two_rounds_do_not_show_is_predicted_by_the_roofline(start, method, step):
    # a chord through the measured k spreads the knee's cost over every k between them (or, below the
    # start, a line from k=0 charges the knee's cost to every small k): it misses the k at the knee
    rates = _geometric(0.85, 8)
    out = choose_k(_round(rates, 8, step(8)), _baseline(), 8, method=method, tie_tolerance=0.0,
                   others=[{"k": start, "result": _round(rates, start, step(start))}])
    truth = _truth(rates, step, range(1, 9))
    for k in range(1, 9):
        assert out["predicted_speedup"][str(k)] == pytest.approx(truth[k], rel=1e-3), k
    assert out["k"] == max(truth, key=truth.get)
    assert out["confirm_k"] == out["k"]


def test_the_roofline_only_lowers_the_cost_and_leaves_a_straight_cost_alone():
    rates = _geometric(0.8, 8)
    straight = _roofline_step(0.02, 0.08, 0.0)  # no knee: the chord is the truth
    out = choose_k(_round(rates, 8, straight(8)), _baseline(), 8, tie_tolerance=0.0,
                   others=[{"k": 3, "result": _round(rates, 3, straight(3))}])
    truth = _truth(rates, straight, range(1, 9))
    for k in range(1, 9):
        assert out["predicted_speedup"][str(k)] == pytest.approx(truth[k], rel=1e-3)
    # a concave cost (the knots rise slower than the line before them): the chord, never above it
    concave = {3: T_BASE * 1.3, 8: T_BASE * 1.4}
    out = choose_k(_round(rates, 8, concave[8]), _baseline(), 8, tie_tolerance=0.0,
                   others=[{"k": 3, "result": _round(rates, 3, concave[3])}])
    chord6 = T_BASE * (1.3 + 0.1 * 3 / 5.0)
    assert out["predicted_speedup"]["6"] == pytest.approx((1.0 + sum(rates[:6])) * T_BASE / chord6, rel=1e-3)


def _lucky_probe(start_k, per_k, drafts, start_drafts):
    """A probe at 8 whose requests were easier to draft for (every rate 20 % above the start round's), the start
    round at ``start_k``, a straight cost of ``per_k`` target steps per drafted token: (start rates, probe rates,
    the step function, choose_k's answer)."""
    start_rates = _geometric(0.7, start_k)
    probe_rates = [min(1.0, r * 1.2) for r in _geometric(0.7, 8)]
    step = _roofline_step(0.0, per_k, 0.0)
    out = choose_k(_round(probe_rates, 8, step(8), drafts=drafts), _baseline(), 8,
                   others=[{"k": start_k, "result": _round(start_rates, start_k, step(start_k), drafts=start_drafts)}])
    return start_rates, probe_rates, step, out


def test_deep_positions_follow_the_probe_rounds_own_conditional_rates():
    # the probe's deep positions are scaled by the pooled over the probe's rate at the deepest shared position
    start_rates, probe_rates, dummy, out = _lucky_probe(3, 0.05, 1000, 3000)
    pooled3 = (probe_rates[2] * 1000 + start_rates[2] * 3000) / 4000.0
    pooled = [(p * 1000 + s * 3000) / 4000.0 for p, s in zip(probe_rates[:3], start_rates)]
    deep = [r * pooled3 / probe_rates[2] for r in probe_rates[3:]]
    assert out["acceptance_length"]["8"] == pytest.approx(1.0 + sum(pooled) + sum(deep), rel=1e-4)
    assert out["acceptance_length"]["3"] == pytest.approx(1.0 + sum(pooled), rel=1e-4)


def test_the_probe_rounds_step_time_is_its_tpot_times_its_own_acceptance_length():
    # the probe's requests drew lucky acceptance (every rate 20 % above the start round's): its TPOT is low because
    # each step emitted more tokens, not because a step is cheap. Its step time is TPOT x its own length; times the
    # pooled (lower) length it would look cheaper, and k=8 faster, than it is.
    start_rates, probe_rates, step, out = _lucky_probe(5, 0.12, 60, 90)
    assert out["draft_cost_ms"] == pytest.approx((step(8) - T_BASE) * 1000.0, rel=1e-6)
    own = 1.0 + sum(probe_rates)
    assert "the round's acceptance length %.2f" % own in out["reasons"][1]
    kept = keep_k([{"k": 5, "result": _round(start_rates, 5, step(5), drafts=90)},
                   {"k": 8, "result": _round(probe_rates, 8, step(8), drafts=60)}], _baseline(), 5)
    # judged on the pooled acceptance, each at its own measured step: k=8's step is 24 % dearer for 1.1 x the tokens
    assert kept["k"] == 5 and kept["measured_by_k"]["5"] > kept["measured_by_k"]["8"]


def _knee_rounds(step, ks, rates=None):
    rates = rates or _geometric(0.85, 8)
    return [{"k": k, "result": _round(rates, k, step(k))} for k in ks]


def test_next_k_confirms_an_unmeasured_prediction_first():
    step = _roofline_step(0.0, 0.12, 0.0)  # a straight cost: the model is right, k=2 or 3 best
    out = next_k(_knee_rounds(step, (5, 8)), _baseline(), 5)
    predicted = choose_k(_knee_rounds(step, (8,))[0]["result"], _baseline(), 8,
                         others=_knee_rounds(step, (5,)))["k"]
    assert predicted not in (5, 8) and out["k"] == predicted
    assert out["why"].startswith("the model over k=5,8 predicts k=%d best" % predicted)


def test_next_k_measures_a_neighbour_a_jump_between_measured_k_may_hide():
    # a kernel switch above k=4 makes every k from 5 up 30 % dearer: rounds at 3 and 8 see a chord rising steeply,
    # and the model puts k=4 near k=3, so k=4 is measured; then it is done (k=4 is best, k=5 predicted far behind)
    def step(k):
        return T_BASE * (1.0 + 0.05 * k + (0.3 if k > 4 else 0.0))
    rates = _geometric(0.85, 8)
    rounds = _knee_rounds(step, (3, 8), rates)
    first = next_k(rounds, _baseline(), 3)
    assert first["k"] is not None and first["k"] not in (3, 8)
    measured = [3, 8]
    while first["k"] is not None:
        measured.append(first["k"])
        first = next_k(_knee_rounds(step, measured, rates), _baseline(), 3)
    assert 4 in measured and len(measured) <= 4
    truth = _truth(rates, step, range(1, 9))
    assert keep_k(_knee_rounds(step, measured, rates), _baseline(), 3)["k"] == max(truth, key=truth.get) == 4
    assert "measured best and no unmeasured neighbour is predicted within 3 %" in first["why"] or \
        "rounds at different k measured" in first["why"]


def test_next_k_stops_at_max_rounds_and_refuses_bad_options():
    step = _roofline_step(0.0, 0.12, 0.0)
    out = next_k(_knee_rounds(step, (3, 5, 8)), _baseline(), 3, max_rounds=3)
    assert out["k"] is None and out["why"] == "3 rounds at different k measured, the most it measures"
    with pytest.raises(ChooseKError, match="max_rounds must be an integer >= 2"):
        next_k(_knee_rounds(step, (3, 8)), _baseline(), 3, max_rounds=1)
    with pytest.raises(ChooseKError, match="margin must be a number"):
        next_k(_knee_rounds(step, (3, 8)), _baseline(), 3, margin=float("nan"))
    with pytest.raises(ChooseKError, match=r"needs the start k \(5\) measured"):
        next_k(_knee_rounds(step, (3, 8)), _baseline(), 5)
    # a start k at the probe's: its one round is the start and the probe
    alone = next_k(_knee_rounds(step, (8,)), _baseline(), 8)
    assert alone["k"] == choose_k(_knee_rounds(step, (8,))[0]["result"], _baseline(), 8)["k"] != 8
