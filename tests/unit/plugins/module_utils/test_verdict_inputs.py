# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""#31 "Crashes and garbage": every non-finite or wrongly typed benchmark number is an error naming the
field and the rule (verdict/inputs.py), in spec_decide, the TTFT guard and spec_choose_k alike."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import math
import random

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.choose_k import ChooseKError, choose_k
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import spec_decide
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.ttft import apply_ttft

from .test_verdict_choose_k import _baseline, _candidate, _geometric
from .test_verdict_decide import result

NOT_NUMBERS = [float("nan"), float("inf"), float("-inf"), "12.5", "nan", True, [1.0], {"v": 1}]
NOT_BOOLEANS = ["false", "true", "False", 0, 1, None, "no"]


def _rounds():
    rng = random.Random(3)
    return [{"arm": "baseline", "result": result(rng)},
            {"arm": "candidate", "result": result(rng, 0.8, -0.45, 0.2, acceptance=0.7)},
            {"arm": "candidate", "result": result(rng, 0.8, -0.45, 0.2, acceptance=0.7)}]


@pytest.mark.parametrize("bad", NOT_NUMBERS)
@pytest.mark.parametrize("field", ["throughput_tok_s", "tpot_ms_p50", "duration_s", "completed", "failed"])
def test_spec_decide_refuses_a_bad_level_number_naming_it(field, bad):
    rounds = _rounds()
    rounds[1]["result"]["runs"][0][field] = bad
    with pytest.raises(ValueError, match=r"input\.bench_number: round 2 \(candidate\) concurrency 1 %s" % field):
        spec_decide(rounds)


@pytest.mark.parametrize("bad", NOT_NUMBERS)
@pytest.mark.parametrize("field", ["tpot_ms", "e2e_ms", "output_tokens", "ttft_ms", "start_s", "end_s"])
def test_spec_decide_refuses_a_bad_request_number_naming_it(field, bad):
    rounds = _rounds()
    rounds[2]["result"]["runs"][1]["requests"][4][field] = bad
    with pytest.raises(ValueError, match=r"input\.bench_number: round 3 \(candidate\) concurrency 8 request 4 %s"
                       % field):
        spec_decide(rounds)


@pytest.mark.parametrize("bad", NOT_BOOLEANS)
def test_ok_must_be_a_boolean_in_spec_decide_and_the_ttft_guard(bad):
    rounds = _rounds()
    rounds[0]["result"]["runs"][0]["requests"][0]["ok"] = bad
    with pytest.raises(ValueError, match=r"input\.bench_flag: round 1 \(baseline\) concurrency 1 request 0 ok"):
        spec_decide(rounds)
    with pytest.raises(ValueError, match=r"input\.bench_flag: round 1 \(baseline\) concurrency 1 request 0 ok"):
        apply_ttft({"action": "keep", "reasons": []}, rounds, 1, {})


@pytest.mark.parametrize("bad", NOT_NUMBERS)
def test_ttft_guard_refuses_a_non_finite_ttft_instead_of_reporting_infinity(bad):
    rounds = _rounds()
    rounds[1]["result"]["runs"][0]["requests"][2]["ttft_ms"] = bad
    with pytest.raises(ValueError, match=r"input\.bench_number: round 2 \(candidate\) concurrency 1 request 2 ttft_ms"):
        apply_ttft({"action": "keep", "reasons": []}, rounds, 1, {})


def test_ttft_guard_refuses_a_non_finite_level_median_without_requests():
    rounds = _rounds()
    for rnd in rounds:
        del rnd["result"]["runs"][0]["requests"]
        rnd["result"]["runs"][0]["ttft_ms_p50"] = 100.0
    rounds[0]["result"]["runs"][0]["ttft_ms_p50"] = float("inf")
    with pytest.raises(ValueError, match=r"round 1 \(baseline\) concurrency 1 ttft_ms_p50"):
        apply_ttft({"action": "keep", "reasons": []}, rounds, 1, {})


@pytest.mark.parametrize("bad", NOT_NUMBERS)
def test_spec_decide_refuses_a_bad_acceptance_rate(bad):
    rounds = _rounds()
    rounds[1]["result"]["spec_decode"]["acceptance_rate"] = bad
    with pytest.raises(ValueError, match=r"round 2 \(candidate\) spec_decode acceptance_rate"):
        spec_decide(rounds)


def test_clean_rounds_still_decide():
    out = spec_decide(_rounds())
    assert out["action"] in ("keep", "measure_more")
    guarded = apply_ttft(out, _rounds(), 1, {})
    assert guarded["metrics"]["ttft_change"] == pytest.approx(0.0)


# ---------------------------------------------------------------- spec_choose_k

def _k_inputs():
    return _candidate(_geometric(0.7, 8), 8, 0.001), _baseline()


@pytest.mark.parametrize("bad", NOT_NUMBERS)
@pytest.mark.parametrize("where", ["run", "result"])
def test_choose_k_refuses_bad_drafts_naming_the_field(bad, where):
    cand, base = _k_inputs()
    spec = cand["runs"][0]["spec_decode"] if where == "run" else cand["spec_decode"]
    if where == "result":
        del cand["runs"][0]["spec_decode"]
    spec["drafts"] = bad
    with pytest.raises(ChooseKError, match=r"input\.bench_number: .*spec_decode drafts"):
        choose_k(cand, base, 8)


@pytest.mark.parametrize("bad", NOT_NUMBERS + [1.5, -0.1])
def test_choose_k_refuses_a_bad_per_position_rate(bad):
    cand, base = _k_inputs()
    cand["runs"][0]["spec_decode"]["per_position"][3] = bad
    with pytest.raises(ChooseKError, match=r"input\.bench_number: .*spec_decode per_position\[3\]"):
        choose_k(cand, base, 8)


@pytest.mark.parametrize("bad", NOT_NUMBERS)
@pytest.mark.parametrize("field", ["tpot_ms_p50", "throughput_tok_s", "ttft_ms_p50", "output_tokens", "completed"])
@pytest.mark.parametrize("role", ["candidate", "baseline"])
def test_choose_k_refuses_bad_level_numbers_naming_the_arm_and_field(role, field, bad):
    cand, base = _k_inputs()
    target = cand if role == "candidate" else base
    target["runs"][0][field] = bad
    with pytest.raises(ChooseKError, match=r"input\.bench_number: the %s result's concurrency 1 %s" % (role, field)):
        choose_k(cand, base, 8)


def test_choose_k_refuses_a_nan_in_another_ks_round():
    cand, base = _k_inputs()
    other = copy.deepcopy(_candidate(_geometric(0.7, 4), 4, 0.001))
    other["runs"][0]["spec_decode"]["per_position"][0] = float("nan")
    with pytest.raises(ChooseKError, match=r"k=4 result.s concurrency 1 spec_decode per_position\[0\]"):
        choose_k(cand, base, 8, others=[{"k": 4, "result": other}])


def test_choose_k_clean_inputs_still_choose():
    cand, base = _k_inputs()
    out = choose_k(cand, base, 8)
    assert 1 <= out["k"] <= 8
    assert not any(math.isnan(v) for v in out["predicted_speedup"].values())
