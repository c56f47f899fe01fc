#!/usr/bin/env python3
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""How close is the k that spec_choose_k picks to the best k found by measuring every k?

Matrix: every simulator board profile x target (bf16 and w4a16 Llama-3.1-8B and
Qwen3-8B) x drafter (the pair's EAGLE-3 head, its small draft model, n-gram) x
acceptance curve (the profile's own per-position curve and six shapes from flat to
steep) x draft cost (the profile's per-draft-pass overhead, and ten times it, as a
slow CPU launching draft kernels would cost).

Truth: the simulator's timing model (tests/simulator/vllm_sim/engine.py), noise free:
c=1 throughput = n / (TTFT + (n - 1) step(k) / E[L(k)]), step(k) = verify over k+1
tokens (memory or compute bound, whichever is slower) + k draft passes.  The oracle
is the k with the highest true throughput, k in 1..K_MAX.

What the collection does, each round simulated by the engine on its virtual clock
(acceptance drawn per step, so counters carry sampling noise) with a per-round clock
factor (log-normal, --round-cv) on every time, as a Jetson's DVFS gives:
1. baseline and candidate at the board's fixed k (5 on Thor, 3 on Orin): the rounds
   the rollout measures anyway;
2. spec_choose_k on the candidate; if it says a larger k may help, one probe round at
   K_MAX and spec_choose_k on the probe (extra round 1);
3. if the predicted best k was not measured, one confirmation round (extra round 2);
4. keep the measured round with the highest c=1 throughput.

Scores: share of cases within 5 % of the oracle's true speedup (target >= 95 %); the
worst shortfall against the fixed k's true speedup (target: no worse than the noise of
one comparison, 2 x round-cv x sqrt(2)); extra candidate rounds per host (target <= 2).

Usage: .venv/bin/python tests/bench/k_quality.py [--quick] [--round-cv 0.02] [--seed 0]
(run from the repository root; ANSIBLE_COLLECTIONS_PATH must reach the collection).
"""
from __future__ import absolute_import, division, print_function

import argparse
import glob
import json
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "simulator"))

from vllm_sim.engine import Engine, TimingModel, VirtualClock, simulate  # noqa: E402
from vllm_sim.profile import Profile  # noqa: E402
from vllm_sim.specconfig import SpecSettings  # noqa: E402

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.choose_k import choose_k  # noqa: E402

K_MAX = 8
FIXED_K = {"thor_t5000": 5}
DEFAULT_FIXED_K = 3
TARGETS = ("meta-llama/Llama-3.1-8B-Instruct", "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16",
           "Qwen/Qwen3-8B", "RedHatAI/Qwen3-8B-quantized.w4a16")
CURVES = (  # conditional acceptance per position; None: the profile's own curve for the pair
    ("profile", None),
    ("flat 0.9", [0.9]),
    ("flat 0.7", [0.7]),
    ("flat 0.5", [0.5]),
    ("decaying", [0.85, 0.75, 0.65, 0.55, 0.45, 0.35, 0.25, 0.15]),
    ("steep", [0.8, 0.4, 0.15, 0.05]),
    ("n-gram runs", [0.3, 0.8, 0.85, 0.9]),
)
DRAFT_OVERHEAD_FACTORS = (1.0, 10.0)
PROMPT_TOKENS = 256
OUTPUT_TOKENS = 128
REQUESTS = 10  # per round, like a short rollout benchmark level


class Counters(object):
    """Spec-decode counters as vLLM's /metrics would show them."""

    def __init__(self):
        self.drafts = 0
        self.accepted = 0
        self.per_pos = {}

    def on_spec_step(self, k, accepted):
        self.drafts += 1
        self.accepted += accepted
        for pos in range(accepted):
            self.per_pos[pos] = self.per_pos.get(pos, 0) + 1

    def __getattr__(self, name):
        return lambda *args: None


def load_profiles():
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "..", "simulator", "profiles", "*.json"))):
        with open(path) as handle:
            out.append(json.load(handle))
    return out


def pairs(profile):
    """(target, draft key, draft model or None) for every pair the profile has a curve for."""
    for name in TARGETS:
        target = profile.models.get(name)
        if target is None:
            continue
        for entry in profile.acceptance:
            if entry.get("target_family") not in (target.family, "*"):
                continue
            key = entry["draft"]
            draft = None if key == "ngram" else profile.models[key]
            yield target, key, draft


def expected_length(curve, k):
    length, reach = 1.0, 1.0
    for i in range(k):
        reach *= curve[min(i, len(curve) - 1)]
        length += reach
    return length


def true_throughput(profile, target, draft, curve, k):
    spec = SpecSettings("x", draft, k, curve) if k else None
    timing = TimingModel(profile, target, spec)
    ttft = timing.prefill_step_s(PROMPT_TOKENS, False)
    tpot = timing.decode_step_s(1) / (expected_length(curve, k) if k else 1.0)
    return OUTPUT_TOKENS / (ttft + (OUTPUT_TOKENS - 1) * tpot)


def measure(profile, target, draft, curve, k, rng, round_cv):
    """One simulated vllm_bench round at c=1 (a result dict as the module returns)."""
    spec = SpecSettings("ngram" if draft is None else "eagle3", draft, k, curve) if k else None
    counters = Counters()
    engine = Engine(profile, target, spec, clock=VirtualClock(), scale=1.0, metrics=counters,
                    seed=rng.getrandbits(31))
    done = simulate(engine, 1, REQUESTS, PROMPT_TOKENS, OUTPUT_TOKENS)
    clock = math.exp(rng.gauss(0.0, round_cv))  # this round's DVFS/thermal state
    tpots = sorted((r.finished_at - r.first_token) / (r.generated - 1) * clock for r in done)
    ttfts = sorted((r.first_token - r.arrival) * clock for r in done)
    span = (max(r.finished_at for r in done) - min(r.arrival for r in done)) * clock
    tokens = sum(r.generated for r in done)
    spec_decode = None
    if k:
        spec_decode = {"drafts": counters.drafts,
                       "per_position": [counters.per_pos.get(p, 0) / float(counters.drafts)
                                        for p in range(k)]}
    run = {"concurrency": 1, "completed": len(done), "output_tokens": tokens,
           "tpot_ms_p50": 1000.0 * tpots[len(tpots) // 2], "ttft_ms_p50": 1000.0 * ttfts[len(ttfts) // 2],
           "throughput_tok_s": tokens / span, "spec_decode": spec_decode}
    return {"runs": [run], "spec_decode": spec_decode}


def tune(profile, target, draft, curve, k0, method, rng, round_cv, guard=None):
    """The collection's procedure; returns (picked k, extra rounds, predicted best k)."""
    base = measure(profile, target, draft, curve, 0, rng, round_cv)
    rounds = {k0: measure(profile, target, draft, curve, k0, rng, round_cv)}
    choice = choose_k(rounds[k0], base, k0, method=method)
    extra = 0
    if choice["larger_k_may_help"] and K_MAX > k0:
        rounds[K_MAX] = measure(profile, target, draft, curve, K_MAX, rng, round_cv)
        extra += 1
        choice = choose_k(rounds[K_MAX], base, K_MAX, method=method,
                          others=[{"k": k0, "result": rounds[k0]}])
    predicted = choice["k"]
    if predicted not in rounds:
        rounds[predicted] = measure(profile, target, draft, curve, predicted, rng, round_cv)
        extra += 1
    # The confirmation stands unless it measured slower than the fixed k by more than the
    # guard (default: the clock noise of one comparison): then the prediction was wrong.
    band = 2 * round_cv * math.sqrt(2) if guard is None else guard
    tput = dict((k, r["runs"][0]["throughput_tok_s"]) for k, r in rounds.items())
    picked = predicted if tput[predicted] >= tput[k0] * (1 - band) else k0
    tput[0] = base["runs"][0]["throughput_tok_s"]
    return picked, extra, predicted, tput


def run_matrix(quick, round_cv, seed, guard=None):
    rng = random.Random(seed)
    cases = []
    for data in load_profiles():
        for factor in DRAFT_OVERHEAD_FACTORS[:1] if quick else DRAFT_OVERHEAD_FACTORS:
            varied = dict(data, draft_step_overhead_s=data.get("draft_step_overhead_s", 0.0) * factor)
            profile = Profile(varied)
            k0 = FIXED_K.get(profile.name, DEFAULT_FIXED_K)
            for target, key, draft in pairs(profile):
                for curve_name, curve in CURVES[:3] if quick else CURVES:
                    curve = curve or profile.alpha(target, key)
                    if not isinstance(curve, list):
                        curve = [curve]
                    truth = dict((k, true_throughput(profile, target, draft, curve, k))
                                 for k in range(0, K_MAX + 1))
                    oracle = max(range(1, K_MAX + 1), key=lambda k: truth[k])
                    method = "ngram" if draft is None else "eagle3"
                    picked, extra, predicted, measured = tune(
                        profile, target, draft, curve, k0, method, rng, round_cv, guard)
                    cases.append({
                        "board": profile.name, "target": target.name, "draft": key,
                        "curve": curve_name, "overhead": factor, "k0": k0, "oracle": oracle,
                        "picked": picked, "predicted": predicted, "extra": extra,
                        "oracle_speedup": truth[oracle] / truth[0],
                        "picked_speedup": truth[picked] / truth[0],
                        "fixed_speedup": truth[k0] / truth[0],
                        "predicted_speedup": truth[predicted] / truth[0],
                        # how far each measured round landed from its true value (log ratio)
                        "errors": [math.log(measured[k] / truth[k]) for k in measured],
                    })
    return cases


def report(cases, round_cv):
    n = len(cases)
    within = [c for c in cases if c["picked_speedup"] >= 0.95 * c["oracle_speedup"]]
    pred_within = [c for c in cases if c["predicted_speedup"] >= 0.95 * c["oracle_speedup"]]
    exact = [c for c in cases if c["picked"] == c["oracle"]]
    vs_fixed = [c["picked_speedup"] / c["fixed_speedup"] - 1.0 for c in cases]
    # The noise of one comparison, as measured: per-round error (clock factor, acceptance
    # drawn step by step, the last step of each request cut short) around its own mean.
    errors = [e for c in cases for e in c["errors"]]
    mean_error = sum(errors) / len(errors)
    round_sd = math.sqrt(sum((e - mean_error) ** 2 for e in errors) / (len(errors) - 1))
    noise = 2 * round_sd * math.sqrt(2)
    worst = min(vs_fixed)
    extras = [c["extra"] for c in cases]
    print("%d cases (%d boards), round-to-round clock CV %.1f %%, %d requests x %d tokens per round"
          % (n, len(set(c["board"] for c in cases)), 100 * round_cv, REQUESTS, OUTPUT_TOKENS))
    print("")
    print("| measure | value | target |")
    print("|---|---|---|")
    print("| picked k within 5 %% of the oracle's speedup | %d / %d (%.1f %%) | >= 95 %% |"
          % (len(within), n, 100.0 * len(within) / n))
    print("| predicted k (before confirmation) within 5 %% | %d / %d (%.1f %%) | |"
          % (len(pred_within), n, 100.0 * len(pred_within) / n))
    print("| picked k = oracle k | %d / %d (%.1f %%) | |" % (len(exact), n, 100.0 * len(exact) / n))
    print("| mean speedup: fixed k / picked / oracle | %.3f / %.3f / %.3f | |" % (
        sum(c["fixed_speedup"] for c in cases) / n, sum(c["picked_speedup"] for c in cases) / n,
        sum(c["oracle_speedup"] for c in cases) / n))
    print("| picked better than fixed k by > 5 %% | %d cases | |" % sum(1 for v in vs_fixed if v > 0.05))
    print("| measured round error SD (clock %.1f %% + counting) | %.2f %% | |" % (100 * round_cv, 100 * round_sd))
    print("| worst picked vs fixed k | %+.1f %% | >= -%.1f %% (2 x SD x sqrt 2: noise of one comparison) |"
          % (100 * worst, 100 * noise))
    print("| extra candidate rounds per host: mean / max | %.2f / %d | max <= 2 |"
          % (sum(extras) / float(n), max(extras)))
    print("| hosts with 0 / 1 / 2 extra rounds | %d / %d / %d | |" % tuple(extras.count(i) for i in range(3)))
    low = min(cases, key=lambda c: c["picked_speedup"] / c["fixed_speedup"])
    print("")
    print("Worst against the fixed k: %s %s %s %s x%g: fixed k=%d %.3f, picked k=%d %.3f (predicted k=%d)"
          % (low["board"], low["target"], low["draft"], low["curve"], low["overhead"], low["k0"],
             low["fixed_speedup"], low["picked"], low["picked_speedup"], low["predicted"]))
    misses = sorted((c for c in cases if c not in within),
                    key=lambda c: c["picked_speedup"] / c["oracle_speedup"])
    if misses:
        print("")
        print("Cases outside 5 % (worst first):")
        for c in misses[:10]:
            print("  %-14s %-44s %-36s %-11s x%-4g k0=%d oracle k=%d %.3f picked k=%d %.3f (%+.1f %%) predicted k=%d"
                  % (c["board"], c["target"], c["draft"], c["curve"], c["overhead"], c["k0"], c["oracle"],
                     c["oracle_speedup"], c["picked"], c["picked_speedup"],
                     100 * (c["picked_speedup"] / c["oracle_speedup"] - 1), c["predicted"]))
    return {"within": len(within) / float(n), "worst_vs_fixed": worst, "noise": noise,
            "max_extra": max(extras)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--quick", action="store_true", help="first draft cost and three curves only")
    parser.add_argument("--round-cv", type=float, default=0.02,
                        help="SD of the per-round clock factor (log scale), default 0.02")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--guard", type=float, default=None,
                        help="how much slower than the fixed k a confirmed k may measure and still be "
                             "kept (default: 2 x round-cv x sqrt(2))")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    started = time.time()
    cases = run_matrix(args.quick, args.round_cv, args.seed, args.guard)
    score = report(cases, args.round_cv)
    print("")
    print("%.0f s" % (time.time() - started))
    ok = score["within"] >= 0.95 and score["worst_vs_fixed"] >= -score["noise"] and score["max_extra"] <= 2
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
