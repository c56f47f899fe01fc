#!/usr/bin/env python3
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""How often does the keep/revert verdict agree with the skill's rule on the TRUE effect?

A matrix of true effects (c=1 throughput gain, c=1 TPOT change, c=8 throughput
change; half the draws dense within 5 points of a threshold) is measured by
synthetic vllm_bench results (with per-request evidence) under three noise
scenarios: per-request CV of TPOT and E2E, and a per-round drift factor shared by
every level of a round (clocks and temperature move between rounds).

Two deciders are driven exactly as the rollout drives them:
* spec_decide: baseline, candidate, then whatever ``next_round`` asks for;
* today's spec_verdict (verdict/rule.py) as judge.yml + repeat.yml did: one
  round of 50 prompts per arm, noise_cv 0.03, and on ``repeat`` one more
  candidate and baseline round judged with final=true.

Scores (actions: keep and marginal both mean keep with the default
marginal_action):
* far / mid: action agreement on cases >= 5 / 2.5-5 points from every
  threshold (true c=8 changes in (-5 %, 0) are never scored);
* slower kept: true gain < 0 or true c=8 change < -5 %, action keep;
* good reverted: gain >= 40 %, TPOT <= -30 %, c=8 >= 0, >= 5 points from every
  threshold, action revert;
* cost: requests per arm and level on cases >= 10 points from every threshold.
Besides the matrix, cases/2 clearly good and cases/2 truly slower configs are
drawn so that the two small error rates rest on enough cases; far, mid, cost
and the means are over the matrix only.

Usage: .venv/bin/python tests/bench/decision_quality.py [--cases N] [--quick] [--seed S]
(run from the repository root; ANSIBLE_COLLECTIONS_PATH must reach the collection).
"""
from __future__ import absolute_import, division, print_function

import argparse
import heapq
import math
import multiprocessing
import random
import sys
import time

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import spec_decide
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.rule import spec_verdict

SCENARIOS = (  # name, per-request CV of TPOT and E2E, per-round drift (SD of the log factor)
    ("clocks held", 0.15, 0.01),
    ("typical", 0.25, 0.02),
    ("noisy", 0.35, 0.04),
)
TARGETS = {
    "clocks held": {"far": 0.99, "mid": 0.95, "slower_kept": 0.001, "good_reverted": 0.005, "cost10": 60},
    "typical": {"far": 0.97, "slower_kept": 0.001, "good_reverted": 0.02},
    "noisy": {"slower_kept": 0.01},
}
KEEP_GAIN, KEEP_DROP, REVERT_GAIN = 0.30, 0.20, 0.10
OUTPUT_TOKENS = 128
BASE_TPOT_MS = 50.0
BASE_E2E1_MS = 200.0 + OUTPUT_TOKENS * BASE_TPOT_MS
BASE_E2E8_MS = 2.2 * BASE_E2E1_MS
TODAY_PROMPTS = 50  # rollout_bench_num_prompts


# --------------------------------------------------------------------------- truth

def draw_truth(rng):
    """(gain, tpot_change, c8_change); half of each drawn within 5 points of a threshold."""
    def dim(lo, hi, thresholds):
        if rng.random() < 0.5:
            return rng.uniform(lo, hi)
        return rng.choice(thresholds) + rng.uniform(-0.05, 0.05)
    return dim(-0.40, 1.20, (REVERT_GAIN, KEEP_GAIN)), dim(-0.60, 0.40, (-KEEP_DROP,)), dim(-0.40, 0.40, (0.0,))


def draw_good(rng):
    """A clearly good config: gain >= 45 %, TPOT <= -35 %, c=8 >= +5 % (>= 5 points from every threshold)."""
    return rng.uniform(0.45, 1.20), rng.uniform(-0.60, -0.35), rng.uniform(0.05, 0.40)


def draw_slower(rng):
    """A truly slower config: c=1 gain < 0, or c=8 change < -5 % (the other effects anywhere)."""
    gain, tpot, c8 = draw_truth(rng)
    if rng.random() < 0.5:
        return rng.uniform(-0.40, 0.0), tpot, c8
    return gain, tpot, rng.uniform(-0.40, -0.05)


def true_action(gain, tpot, c8):
    if c8 < 0 or gain < REVERT_GAIN:
        return "revert"
    return "keep"  # keep or marginal: both keep with marginal_action=keep


def distance(gain, tpot, c8):
    """Points (fractions) to the nearest threshold."""
    return min(abs(gain - KEEP_GAIN), abs(gain - REVERT_GAIN), abs(-tpot - KEEP_DROP), abs(c8))


# --------------------------------------------------------------------------- synthetic vllm_bench

def _level(rng, conc, n, e2e_ms, tpot_ms, cv, drift):
    sigma = math.sqrt(math.log(1 + cv * cv))
    free = [(0.0, k) for k in range(conc)]
    heapq.heapify(free)
    requests, tokens = [], 0
    for unused in range(n):
        e2e = e2e_ms * drift * math.exp(rng.gauss(0.0, sigma))
        tpot = tpot_ms * drift * math.exp(rng.gauss(0.0, sigma))
        start, worker = heapq.heappop(free)
        end = start + e2e / 1000.0
        heapq.heappush(free, (end, worker))
        requests.append({"ok": True, "ttft_ms": 200.0 * drift, "tpot_ms": tpot, "e2e_ms": e2e,
                         "output_tokens": OUTPUT_TOKENS, "start_s": start, "end_s": end})
        tokens += OUTPUT_TOKENS
    duration = max(r["end_s"] for r in requests)
    tpots = sorted(r["tpot_ms"] for r in requests)
    return {"concurrency": conc, "completed": n, "failed": 0, "output_tokens": tokens,
            "duration_s": duration, "throughput_tok_s": tokens / duration,
            "tpot_ms_p50": tpots[len(tpots) // 2] if n % 2 else (tpots[n // 2 - 1] + tpots[n // 2]) / 2,
            "errors": {}, "requests": requests}


def bench_round(rng, truth, arm, n, cv, drift_sd):
    gain, tpot, c8 = truth if arm == "candidate" else (0.0, 0.0, 0.0)
    drift = math.exp(rng.gauss(0.0, drift_sd))
    return {"runs": [_level(rng, 1, n, BASE_E2E1_MS / (1 + gain), BASE_TPOT_MS * (1 + tpot), cv, drift),
                     _level(rng, 8, n, BASE_E2E8_MS / (1 + c8), BASE_TPOT_MS * (1 + tpot) * 1.5, cv, drift)],
            "spec_decode": None}


# --------------------------------------------------------------------------- the two loops

def run_new(rng, truth, cv, drift_sd, params):
    rounds = []
    while True:
        out = spec_decide(rounds, **params)
        if out["action"] != "measure_more":
            return out["action"], out["decision"], out["requests_used"], out["rounds_used"], out["restarts"]
        nxt = out["next_round"]
        rounds.append({"arm": nxt["arm"], "result": bench_round(rng, truth, nxt["arm"], nxt["num_prompts"],
                                                                cv, drift_sd)})


def run_today(rng, truth, cv, drift_sd):
    n = TODAY_PROMPTS
    base = bench_round(rng, truth, "baseline", n, cv, drift_sd)
    cand = bench_round(rng, truth, "candidate", n, cv, drift_sd)
    out = spec_verdict(base, cand, noise_cv=0.03)
    rounds, restarts = 2, 1
    if out["decision"] == "repeat":
        cand2 = bench_round(rng, truth, "candidate", n, cv, drift_sd)
        base2 = bench_round(rng, truth, "baseline", n, cv, drift_sd)
        out = spec_verdict([base, base2], [cand, cand2], noise_cv=0.03, final=True)
        rounds, restarts = 4, 2
    return out["action"], out["decision"], rounds * n * 2, rounds, restarts


def _case(job):
    seed, scenario, params, stratum = job
    rng = random.Random(seed)
    truth = {"matrix": draw_truth, "good": draw_good, "slower": draw_slower}[stratum](rng)
    _name, cv, drift_sd = scenario
    new = run_new(random.Random(seed * 7 + 1), truth, cv, drift_sd, params)
    today = run_today(random.Random(seed * 7 + 2), truth, cv, drift_sd)
    return truth, new, today, stratum


# --------------------------------------------------------------------------- scoring

def score(results, which):
    far = mid = far_ok = mid_ok = 0
    slower = slower_kept = good = good_rev = 0
    cost10, n10 = 0.0, 0
    reqs = rounds = restarts = 0.0
    inconclusive = 0
    for truth, new, today, stratum in results:
        action, decision, req, rnd, rst = new if which == "new" else today
        gain, tpot, c8 = truth
        if gain < 0 or c8 < -0.05:
            slower += 1
            slower_kept += action == "keep"
        if gain >= 0.40 and tpot <= -0.30 and c8 >= 0 and distance(gain, tpot, c8) >= 0.05:
            good += 1
            good_rev += action == "revert"
        if stratum != "matrix":
            continue  # the extra strata only sharpen the two error rates above
        want = true_action(gain, tpot, c8)
        dist = distance(gain, tpot, c8)
        reqs += req
        rounds += rnd
        restarts += rst
        inconclusive += decision == "inconclusive"
        if not -0.05 < c8 < 0:
            if dist >= 0.05:
                far += 1
                far_ok += action == want
            elif dist >= 0.025:
                mid += 1
                mid_ok += action == want
        if dist >= 0.10:
            n10 += 1
            cost10 += req / 4.0  # two arms x two levels
    n = float(sum(1 for r in results if r[3] == "matrix"))
    return {"far": far_ok / max(1, far), "mid": mid_ok / max(1, mid), "n_far": far, "n_mid": mid,
            "slower_kept": slower_kept / max(1, slower), "n_slower": slower, "slower_kept_count": slower_kept,
            "good_reverted": good_rev / max(1, good), "n_good": good, "good_reverted_count": good_rev,
            "cost10": cost10 / max(1, n10), "requests": reqs / n, "rounds": rounds / n,
            "restarts": restarts / n, "inconclusive": inconclusive / n}


def _fmt_row(label, s):
    return ("  %-13s far %6.2f%% (n=%d)  mid %6.2f%% (n=%d)  slower kept %5.2f%% (%d/%d)  good reverted %5.2f%% "
            "(%d/%d)  req/arm/level@>=10pts %5.1f  mean requests %5.1f  rounds %4.2f  restarts %4.2f  "
            "inconclusive %4.1f%%" % (label, 100 * s["far"], s["n_far"], 100 * s["mid"], s["n_mid"],
                                      100 * s["slower_kept"], s["slower_kept_count"], s["n_slower"],
                                      100 * s["good_reverted"], s["good_reverted_count"], s["n_good"],
                                      s["cost10"], s["requests"], s["rounds"], s["restarts"],
                                      100 * s["inconclusive"]))


def _check(name, s):
    misses = []
    for key, goal in TARGETS.get(name, {}).items():
        bad = s[key] > goal if key in ("slower_kept", "good_reverted", "cost10") else s[key] < goal
        if bad:
            misses.append("%s %.4g (target %s %g)" % (key, s[key], "<=" if key in (
                "slower_kept", "good_reverted", "cost10") else ">=", goal))
    return misses


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--cases", type=int, default=3000, help="cases per scenario (default 3000)")
    ap.add_argument("--quick", action="store_true", help="300 cases per scenario (smoke test)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="spec_decide parameter override (tuning)")
    args = ap.parse_args(argv)
    cases = 300 if args.quick else args.cases
    params = {}
    for item in args.param:
        key, _sep, value = item.partition("=")
        params[key] = float(value)
    failed = []
    t0 = time.time()
    pool = multiprocessing.Pool(args.jobs) if args.jobs > 1 else None
    for idx, scenario in enumerate(SCENARIOS):
        strata = ["matrix"] * cases + ["good"] * (cases // 2) + ["slower"] * (cases // 2)
        jobs = [(args.seed * 1000003 + idx * 100000 + k, scenario, params, stratum)
                for k, stratum in enumerate(strata)]
        results = pool.map(_case, jobs, chunksize=50) if pool else [_case(j) for j in jobs]
        name = scenario[0]
        print("%s (per-request CV %d%%, per-round drift %d%%), %d matrix cases + %d clearly good + %d truly slower"
              % (name, 100 * scenario[1], 100 * scenario[2], cases, cases // 2, cases // 2))
        new = score(results, "new")
        print(_fmt_row("spec_decide", new))
        print(_fmt_row("today", score(results, "today")))
        failed += ["%s: %s" % (name, m) for m in _check(name, new)]
    if pool:
        pool.close()
    print("%.0f s" % (time.time() - t0))
    if failed:
        print("TARGETS MISSED: " + "; ".join(failed))
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
