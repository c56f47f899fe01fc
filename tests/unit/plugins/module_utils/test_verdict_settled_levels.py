# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""A settled level is not measured again while another is open (spec_decide's skip_settled_levels)."""
import math
import random

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import spec_decide

TOKENS = 128


def run(rng, conc, n, e2e_ms, tpot_ms, cv):
    sigma = math.sqrt(math.log(1 + cv * cv))
    reqs, t = [], 0.0
    for unused in range(n):
        e2e = e2e_ms * math.exp(rng.gauss(0, sigma))
        reqs.append({"ok": True, "ttft_ms": 100.0, "tpot_ms": tpot_ms * math.exp(rng.gauss(0, sigma)), "e2e_ms": e2e,
                     "output_tokens": TOKENS, "start_s": t, "end_s": t + e2e / 1000.0})
        t += e2e / 1000.0 / conc
    tpots = sorted(r["tpot_ms"] for r in reqs)
    return {"concurrency": conc, "completed": n, "failed": 0, "output_tokens": n * TOKENS, "duration_s": t,
            "throughput_tok_s": n * TOKENS / t, "tpot_ms_p50": tpots[len(tpots) // 2], "errors": {}, "requests": reqs}


def bench(rng, arm, levels, n=30, gain=0.8, tpot=-0.45, c8=0.0, cv1=0.05, cv8=0.30):
    """A clearly good c=1 candidate (measured tightly) whose c=8 is unchanged and noisy: c=1 settles first."""
    g, t, c = (gain, tpot, c8) if arm == "candidate" else (0.0, 0.0, 0.0)
    runs = []
    if 1 in levels:
        runs.append(run(rng, 1, n, 6600.0 / (1 + g), 50.0 * (1 + t), cv1))
    if 8 in levels:
        runs.append(run(rng, 8, n, 14000.0 / (1 + c), 75.0 * (1 + t), cv8))
    return {"runs": runs, "spec_decode": None}


def drive(seed=3, honour=True, **params):
    """The rollout's loop, measuring what next_round asks (honour=False: every level, as before)."""
    rng = random.Random(seed)
    rounds, asked = [], []
    while True:
        out = spec_decide(rounds, **params)
        if out["action"] != "measure_more":
            return out, rounds, asked
        nxt = out["next_round"]
        levels = nxt["levels"] if honour else [1, 8]
        asked.append(list(nxt["levels"]))
        rounds.append({"arm": nxt["arm"], "levels": levels, "result": bench(rng, nxt["arm"], levels)})


def test_a_settled_c1_is_not_measured_again_while_c8_stays_open():
    out, rounds, asked = drive()
    assert out["decision"] == "keep", out["reasons"]
    # min_rounds (3) rounds measure every level; later ones only the open level once c=1 settled
    assert asked[:3] == [[1, 8]] * 3
    assert [8] in asked, asked
    first_skip = asked.index([8])
    assert all(a == [8] for a in asked[first_skip:]), asked
    assert all([r["concurrency"] for r in rnd["result"]["runs"]] == [8] for rnd in rounds[first_skip:])
    # the keep still rests on c=1 evidence of both arms
    assert out["estimates"]["c1_throughput_gain"]["low"] >= 0.30
    # and it costs fewer requests than measuring both levels every round
    every, dummy, dummy2 = drive(honour=False, skip_settled_levels=False)
    assert every["decision"] == "keep" and out["requests_used"] < every["requests_used"]


def test_the_look_that_skips_a_level_says_so():
    rng = random.Random(3)
    rounds = []
    while True:
        out = spec_decide(rounds)
        if out["next_round"]["levels"] == [8]:
            break
        assert out["action"] == "measure_more"
        rounds.append({"arm": out["next_round"]["arm"], "result": bench(rng, out["next_round"]["arm"], [1, 8])})
    assert "Settled at concurrency 1: the next rounds measure concurrency 8 only." in out["reasons"]


def test_off_every_round_measures_every_level():
    dummy, dummy2, asked = drive(skip_settled_levels=False)
    assert set(map(tuple, asked)) == {(1, 8)}


def test_a_round_asked_at_fewer_levels_is_evidence_there_and_not_missing_elsewhere():
    rng = random.Random(5)
    rounds = [{"arm": arm, "result": bench(rng, arm, [1, 8])} for arm in ("baseline", "candidate", "candidate")]
    rounds.append({"arm": "baseline", "levels": [8], "result": bench(rng, "baseline", [8])})
    out = spec_decide(rounds)
    assert "has no run" not in " ".join(out["reasons"]), out["reasons"]
    assert out["requests_used"] == 3 * 60 + 30
    # a round asked for both levels that lacks one is still unusable (here: the baseline's, so inconclusive)
    rounds[-1] = {"arm": "baseline", "result": bench(rng, "baseline", [8])}
    out = spec_decide(rounds)
    assert out["decision"] == "inconclusive" and "has no run at concurrency 1" in out["reasons"][0]


def test_a_level_no_round_of_an_arm_measured_is_measured_again():
    rng = random.Random(5)
    rounds = [{"arm": "baseline", "result": bench(rng, "baseline", [1, 8])},
              {"arm": "candidate", "levels": [8], "result": bench(rng, "candidate", [8])}]
    out = spec_decide(rounds)
    assert out["action"] == "measure_more" and out["next_round"]["levels"] == [1, 8]
    assert "No candidate round at concurrency 1 yet." in out["reasons"]


@pytest.mark.parametrize("levels", [[], "8", [True], [0], [1.5]])
def test_malformed_round_levels_are_refused_naming_next_round_levels(levels):
    rng = random.Random(1)
    with pytest.raises(ValueError, match=r"round 1 levels .*next_round.levels"):
        spec_decide([{"arm": "baseline", "levels": levels, "result": bench(rng, "baseline", [1, 8])}])


def test_skip_settled_levels_takes_only_a_boolean():
    with pytest.raises(ValueError, match="skip_settled_levels"):
        spec_decide([], skip_settled_levels="sometimes")
    assert spec_decide([], skip_settled_levels="false")["next_round"]["levels"] == [1, 8]
