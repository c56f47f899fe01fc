#!/usr/bin/env python3
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""How close is the k the rollout keeps (rollout_tune_k) to the best k found by measuring every k?

The procedure is what the rollout runs (module_utils/record/evaluation.py, the k phases), round by round:
1. the baseline round, and a round of the candidate at the board's start k (5 on Thor, 3 on
   Orin; the candidate already runs there, no restart);
2. a probe round at K_MAX = 8; spec_choose_k on the probe with the start round in ``others``
   (two measured step times: the cost curve, n-gram's fixed cost included, is measured);
3. spec_next_k over the measured rounds, until it says done (at most 4 rounds at different k):
   the model's prediction when not measured yet (the confirmation), then the unmeasured
   neighbour of the best measured k when the model puts it within 3 % of it (a knee between
   measured k hides from the model);
4. spec_keep_k on the measured rounds: the best measured, the skill's 0.6 rule applied (a k
   above the start only with acceptance > 0.6 at the start, or measured faster than the start
   by more than the noise of one comparison).

Scenarios (each CASES cases, truths drawn at random; see SCENARIOS):
- linear: draft cost per drafted token, memory-bound verification (Leviathan's model);
- knee: verification turns compute bound above a k from 2 to 7 (max(memory, tokens x compute)),
  some with an extra jump there (a kernel switch);
- non-linear: verification cost k^p, p from 0.5 to 2.5;
- n-gram: a fixed lookup per step (0-20 % of a target step) plus widening verification, knees included;
- noisy counters: 4-6 requests x 32-64 tokens per round (a few hundred draft steps) over the others' costs;
- profiles: the simulator's board profiles (tests/simulator/vllm_sim/engine.py, each round simulated step
  by step), 5 boards x 4 targets x 3 drafters x 7 curves x 2 draft costs.

Every measured round carries: acceptance drawn step by step per request (each request with its own
acceptance scale), so the counters carry counting noise; a log-normal clock factor per round
(--round-cv) on every time, as DVFS gives.  Truth is the expected throughput of the same model (tokens
over the expected time of a request, its steps counted exactly: expected_steps); the oracle is the best k
in 1..8.  Printed per scenario: the share of cases within 5 % of the oracle's speedup and the worst
loss against it (targets: >= 97 %, no loss worse than 10 %), with the spec_choose_k prediction alone
and the former procedure (one probe at 8, no confirmation) for comparison.

Usage: .venv/bin/python tests/bench/k_quality.py [--cases 400] [--round-cv 0.02] [--seed 0]
[--no-profiles] [--check] (from the repository root; ANSIBLE_COLLECTIONS_PATH must reach the collection).
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

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.choose_k import choose_k, keep_k, next_k  # noqa: E402

K_MAX = 8
NOISE = 0.06  # spec_keep_k's noise default, which the rollout uses
T_BASE = 0.020  # one target step, seconds (synthetic scenarios)


# ---------------------------------------------------------------- truths (synthetic scenarios)
def _curve(rng):
    """Conditional acceptance per position (the last value repeats)."""
    shape = rng.choice(("flat", "decaying", "steep", "ngram runs", "low"))
    if shape == "flat":
        return [rng.uniform(0.45, 0.95)]
    if shape == "decaying":
        first, drop = rng.uniform(0.6, 0.95), rng.uniform(0.03, 0.12)
        return [max(0.05, first - drop * i) for i in range(K_MAX)]
    if shape == "steep":
        first = rng.uniform(0.6, 0.9)
        return [first * (rng.uniform(0.3, 0.6) ** i) for i in range(K_MAX)]
    if shape == "ngram runs":
        return [rng.uniform(0.2, 0.45)] + [rng.uniform(0.75, 0.95)] * 3
    return [rng.uniform(0.2, 0.5)]


def _cost(rng, kind, method):
    """Extra step time at k (seconds) over the baseline step, as a function."""
    d = 0.0 if method == "ngram" else T_BASE * rng.uniform(0.02, 0.25)  # a draft pass per drafted token
    lookup = T_BASE * rng.uniform(0.0, 0.2) if method == "ngram" else T_BASE * rng.uniform(0.0, 0.03)
    if kind == "linear":
        widen = T_BASE * rng.uniform(0.0, 0.02)
        return lambda k: lookup + k * (d + widen)
    if kind == "knee":
        knee = rng.randint(2, 7)  # the last k still memory bound
        per_token = T_BASE / (knee + 1)  # compute of one verified token: (knee + 1) of them fill a step
        jump = T_BASE * rng.choice((0.0, 0.0, rng.uniform(0.05, 0.4)))
        return lambda k: (lookup + k * d + max(0.0, (k + 1) * per_token - T_BASE)
                          + (jump if k > knee else 0.0))
    if kind == "nonlinear":
        p = rng.uniform(0.5, 2.5)
        top = T_BASE * rng.uniform(0.1, 1.2)  # the verification cost at K_MAX
        return lambda k: lookup + k * d * 0.5 + top * (k / float(K_MAX)) ** p
    raise ValueError(kind)


def expected_length(curve, k):
    length, reach = 1.0, 1.0
    for i in range(k):
        reach *= curve[min(i, len(curve) - 1)]
        length += reach
    return length


def expected_steps(curve, k, tokens):
    """Expected decode steps of one request to emit ``tokens`` tokens at k (exact, by recursion on the
    tokens left): a step emits 1 + the drafted tokens accepted before the first rejection, and the last
    step may overshoot (its extra tokens are cut, the step is paid whole).  tokens / E[L] understates
    the steps: it leaves out that overshoot (a few % at 32-64 tokens) and, averaged over requests of
    different acceptance, takes the mean of L where time adds up over steps (1 / mean of 1 / L)."""
    if not k:
        return float(tokens)
    probs, reach = [], 1.0
    for i in range(k):
        rate = curve[min(i, len(curve) - 1)]
        probs.append(reach * (1.0 - rate))
        reach *= rate
    probs.append(reach)  # every drafted token accepted
    steps = [0.0] * (tokens + 1)
    for left in range(1, tokens + 1):
        steps[left] = 1.0 + sum(p * steps[left - 1 - j] for j, p in enumerate(probs) if left - 1 - j > 0)
    return steps[tokens]


SCALE_SD = 0.1  # per request: a prompt is easier or harder to draft for
NORMAL_QUANTILES = (-1.863, -1.318, -0.954, -0.674, -0.430, -0.210, 0.0, 0.210, 0.430, 0.674, 0.954, 1.318, 1.863)
SCALES = [math.exp(SCALE_SD * z) for z in NORMAL_QUANTILES]  # normal quantiles, equal weights


class Synthetic(object):
    """One case: a curve, a cost function, a TTFT; rounds drawn from them."""

    def __init__(self, rng, kind, method, requests, tokens):
        self.curve = _curve(rng)
        self.cost = _cost(rng, kind, method)
        self.ttft = T_BASE * rng.uniform(2.0, 10.0)
        self.method = method
        self.requests = requests
        self.tokens = tokens

    def length(self, k):
        """E[L(k)] over the requests' acceptance scales (as the rounds draw them)."""
        return sum(expected_length([min(0.99, a * s) for a in self.curve], k) for s in SCALES) / len(SCALES)

    def true_throughput(self, k):
        """Expected tokens over expected time of a request (what a round's throughput measures): the
        steps averaged over the requests' acceptance scales, each request's own (exact) steps."""
        steps = sum(expected_steps([min(0.99, a * s) for a in self.curve], k, self.tokens - 1)
                    for s in SCALES) / len(SCALES)
        return self.tokens / (self.ttft + steps * (T_BASE + (self.cost(k) if k else 0.0)))

    def measure(self, k, rng, round_cv):
        clock = math.exp(rng.gauss(0.0, round_cv))
        step = (T_BASE + (self.cost(k) if k else 0.0)) * clock
        drafts, per_pos, tpots, emitted = 0, [0] * k, [], 0
        for _request in range(self.requests):
            scale = math.exp(rng.gauss(0.0, SCALE_SD))
            curve = [min(0.99, a * scale) for a in self.curve]
            done, steps = 1, 0  # the first token comes from the prefill
            while done < self.tokens:
                steps += 1
                n = 1
                if k:
                    accepted = 0
                    while accepted < k and rng.random() < curve[min(accepted, len(curve) - 1)]:
                        accepted += 1
                    drafts += 1
                    for pos in range(accepted):
                        per_pos[pos] += 1
                    n += accepted
                done += n
            emitted += self.tokens
            tpots.append(steps * step / (self.tokens - 1))
        tpots.sort()
        tpot = tpots[len(tpots) // 2]
        ttft = self.ttft * clock
        span = sum(self.ttft * clock + t * (self.tokens - 1) for t in tpots)
        spec = None
        if k:
            spec = {"drafts": drafts, "per_position": [c / float(drafts) for c in per_pos]}
        run = {"concurrency": 1, "completed": self.requests, "output_tokens": emitted,
               "tpot_ms_p50": 1000.0 * tpot, "ttft_ms_p50": 1000.0 * ttft,
               "throughput_tok_s": emitted / span, "spec_decode": spec}
        return {"runs": [run], "spec_decode": spec}


# ---------------------------------------------------------------- simulator profiles
PROFILE_TARGETS = ("meta-llama/Llama-3.1-8B-Instruct", "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16",
                   "Qwen/Qwen3-8B", "RedHatAI/Qwen3-8B-quantized.w4a16")
PROFILE_CURVES = (None, [0.9], [0.7], [0.5], [0.85, 0.75, 0.65, 0.55, 0.45, 0.35, 0.25, 0.15],
                  [0.8, 0.4, 0.15, 0.05], [0.3, 0.8, 0.85, 0.9])


class _Counters(object):
    def __init__(self):
        self.drafts = 0
        self.per_pos = {}

    def on_spec_step(self, k, accepted):
        self.drafts += 1
        for pos in range(accepted):
            self.per_pos[pos] = self.per_pos.get(pos, 0) + 1

    def __getattr__(self, name):
        return lambda *args: None


class Simulated(object):
    """One case on a simulator board profile: rounds simulated by the stand-in's engine."""

    def __init__(self, profile, target, draft, curve):
        self.profile, self.target, self.draft, self.curve = profile, target, draft, curve
        self.method = "ngram" if draft is None else "eagle3"
        self.tokens, self.requests, self.prompt = 128, 10, 256

    def _spec(self, k):
        from vllm_sim.specconfig import SpecSettings
        return SpecSettings(self.method, self.draft, k, self.curve) if k else None

    def true_throughput(self, k):
        from vllm_sim.engine import TimingModel
        timing = TimingModel(self.profile, self.target, self._spec(k))
        ttft = timing.prefill_step_s(self.prompt, False)
        return self.tokens / (ttft + expected_steps(self.curve, k, self.tokens - 1) * timing.decode_step_s(1))

    def measure(self, k, rng, round_cv):
        from vllm_sim.engine import Engine, VirtualClock, simulate
        counters = _Counters()
        engine = Engine(self.profile, self.target, self._spec(k), clock=VirtualClock(), scale=1.0,
                        metrics=counters, seed=rng.getrandbits(31))
        done = simulate(engine, 1, self.requests, self.prompt, self.tokens)
        clock = math.exp(rng.gauss(0.0, round_cv))
        tpots = sorted((r.finished_at - r.first_token) / (r.generated - 1) * clock for r in done)
        ttfts = sorted((r.first_token - r.arrival) * clock for r in done)
        span = (max(r.finished_at for r in done) - min(r.arrival for r in done)) * clock
        tokens = sum(r.generated for r in done)
        spec = None
        if k:
            spec = {"drafts": counters.drafts,
                    "per_position": [counters.per_pos.get(p, 0) / float(counters.drafts) for p in range(k)]}
        run = {"concurrency": 1, "completed": len(done), "output_tokens": tokens,
               "tpot_ms_p50": 1000.0 * tpots[len(tpots) // 2], "ttft_ms_p50": 1000.0 * ttfts[len(ttfts) // 2],
               "throughput_tok_s": tokens / span, "spec_decode": spec}
        return {"runs": [run], "spec_decode": spec}


def profile_cases():
    from vllm_sim.profile import Profile
    for path in sorted(glob.glob(os.path.join(HERE, "..", "simulator", "profiles", "*.json"))):
        with open(path) as handle:
            data = json.load(handle)
        for factor in (1.0, 10.0):
            profile = Profile(dict(data, draft_step_overhead_s=data.get("draft_step_overhead_s", 0.0) * factor))
            start = 5 if profile.name == "thor_t5000" else 3
            for name in PROFILE_TARGETS:
                target = profile.models.get(name)
                if target is None:
                    continue
                for entry in profile.acceptance:
                    if entry.get("target_family") not in (target.family, "*"):
                        continue
                    draft = None if entry["draft"] == "ngram" else profile.models[entry["draft"]]
                    for curve in PROFILE_CURVES:
                        curve = curve or profile.alpha(target, entry["draft"])
                        yield Simulated(profile, target, draft, curve if isinstance(curve, list) else [curve]), start


# ---------------------------------------------------------------- the procedure
def tune(case, start, rng, round_cv):
    """The rollout's procedure (the evaluation's k phases); returns (kept k, predicted k, former k, rounds)."""
    base = case.measure(0, rng, round_cv)
    rounds = {start: case.measure(start, rng, round_cv), K_MAX: case.measure(K_MAX, rng, round_cv)}
    former = choose_k(rounds[K_MAX], base, K_MAX, method=case.method)["k"]
    predicted = choose_k(rounds[K_MAX], base, K_MAX, method=case.method,
                         others=[{"k": start, "result": rounds[start]}] if start < K_MAX else None)["k"]
    while True:
        measure = next_k([{"k": k, "result": r} for k, r in rounds.items()], base, start, method=case.method,
                         noise=NOISE)["k"]
        if measure is None:
            break
        rounds[measure] = case.measure(measure, rng, round_cv)
    kept = keep_k([{"k": k, "result": r} for k, r in rounds.items()], base, start, predicted, method=case.method,
                  noise=NOISE)
    return kept["k"], predicted, former, len(rounds)


SCENARIOS = (  # name, cost kind, method, requests per round, tokens per request
    ("linear", "linear", "eagle3", 10, 128),
    ("knee", "knee", "eagle3", 10, 128),
    ("non-linear", "nonlinear", "eagle3", 10, 128),
    ("n-gram", None, "ngram", 10, 128),
    ("noisy counters", None, "eagle3", None, None),
)


def run_synthetic(name, kind, method, requests, tokens, cases, rng, round_cv):
    out = []
    for _case in range(cases):
        kind_i = kind or rng.choice(("linear", "knee", "nonlinear"))
        method_i = method if name != "noisy counters" else rng.choice(("eagle3", "ngram"))
        case = Synthetic(rng, kind_i, method_i, requests or rng.randint(4, 6), tokens or rng.randint(32, 64))
        out.append(score(case, rng.choice((3, 5)), rng, round_cv))
    return out


def score(case, start, rng, round_cv):
    truth = dict((k, case.true_throughput(k)) for k in range(0, K_MAX + 1))
    oracle = max(range(1, K_MAX + 1), key=lambda k: truth[k])
    kept, predicted, former, measured = tune(case, start, rng, round_cv)
    return {"kept": truth[kept] / truth[oracle], "predicted": truth[predicted] / truth[oracle],
            "former": truth[former] / truth[oracle], "rounds": measured, "oracle": oracle, "k": kept,
            "start": start, "raised_low": kept > start and acceptance(case, start) <= 0.6
            and truth[kept] < truth[start]}


def acceptance(case, k):
    return ((case.length(k) if hasattr(case, "length") else expected_length(case.curve, k)) - 1.0) / k


def report(rows):
    print("| scenario | cases | kept k within 5 % of the best | worst loss | prediction alone: within 5 % / worst "
          "| former (one probe): within 5 % / worst | candidate rounds per host: mean / max | raised above a "
          "start with acceptance <= 0.6 and slower |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    for name, cases in rows:
        n = float(len(cases))

        def share(key):
            return 100.0 * sum(1 for c in cases if c[key] >= 0.95) / n

        def worst(key):
            return 100.0 * (min(c[key] for c in cases) - 1.0)
        ok = ok and share("kept") >= 97.0 and worst("kept") >= -10.0
        print("| %s | %d | %.1f %% | %+.1f %% | %.1f %% / %+.1f %% | %.1f %% / %+.1f %% | %.2f / %d | %d |" % (
            name, len(cases), share("kept"), worst("kept"), share("predicted"), worst("predicted"),
            share("former"), worst("former"), sum(c["rounds"] for c in cases) / n, max(c["rounds"] for c in cases),
            sum(1 for c in cases if c["raised_low"])))
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--cases", type=int, default=400, help="cases per synthetic scenario (default 400)")
    parser.add_argument("--round-cv", type=float, default=0.02,
                        help="SD of the per-round clock factor (log scale), default 0.02")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-profiles", action="store_true", help="skip the simulator-profile scenario (~3 min)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    started = time.time()
    rng = random.Random(args.seed)
    rows = []
    for name, kind, method, requests, tokens in SCENARIOS:
        rows.append((name, run_synthetic(name, kind, method, requests, tokens, args.cases, rng, args.round_cv)))
    if not args.no_profiles:
        rows.append(("profiles (simulator)", [score(case, start, rng, args.round_cv) for case, start in profile_cases()]))
    rows.append(("all", [c for dummy, cases in rows for c in cases]))
    print("round-to-round clock CV %.1f %%, seed %d" % (100 * args.round_cv, args.seed))
    print("")
    ok = report(rows)
    print("")
    print("%.0f s" % (time.time() - started))
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
