# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Choose num_speculative_tokens (k) from one measured candidate (stdlib only).

Why one measurement is enough: vLLM's per-position counters give r_i, the share
of draft steps whose first i drafted tokens were all accepted.  With chain
drafting (EAGLE/EAGLE-3, MTP, a draft model, n-gram) the first k' drafted tokens
do not depend on k, so a run at the probe k gives the expected tokens per step
of every smaller k' by truncation: E[L(k')] = 1 + r_1 + ... + r_k'.

The cost side comes from the measured step times at concurrency 1:

* baseline TPOT is one target step, T_base (one token per step);
* candidate step time is candidate TPOT x measured acceptance length
  (TPOT spreads a step over the tokens it emitted);
* the difference, spread over the k drafted positions, is the draft plus
  widened-verification cost per drafted token, d.  For the n-gram proposer the
  lookup cost does not grow with k, so the whole difference is one fixed cost.

Predicted TPOT(k') = (T_base + k' d) / E[L(k')] (Leviathan et al.'s model with
measured per-position acceptance instead of a constant rate).  Throughput at
concurrency 1 also pays the first token, so the prediction uses
n / (TTFT + (n - 1) TPOT) per request, then is scaled so that at the measured k
it equals the measured throughput ratio: the model only has to be right about
the *shape* over k, not about the client's overheads.

Ties: like vLLM's own k tuner, the smallest k within ``tie_tolerance`` of the
best prediction wins (a smaller k costs less memory and degrades less at high
concurrency).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

from ansible_collections.jetson.specdec.plugins.module_utils.verdict import inputs

# n-gram lookup runs on the CPU once per step whatever k is
CONSTANT_COST_METHODS = ("ngram", "ngram_gpu", "suffix")


class ChooseKError(ValueError):
    """The inputs cannot support a k choice; the message says what is missing."""


def _checked(check, value, where):
    """verdict/inputs.py's check, its InputError as a ChooseKError (the filter's error)."""
    try:
        return check(value, where)
    except inputs.InputError as exc:
        raise ChooseKError(str(exc))


def _median(values):
    data = sorted(v for v in values if v is not None)
    if not data:
        return None
    mid = len(data) // 2
    return data[mid] if len(data) % 2 else (data[mid - 1] + data[mid]) / 2.0


def _as_list(result, role="candidate"):
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    for item in items:
        if item and not isinstance(item, dict):
            raise ChooseKError("%s: the %s result must be a vllm_bench result (a mapping) or a list of them, got %r "
                               "(%s)" % (inputs.NUMBER_RULE, role, item, type(item).__name__))
    return [r for r in items if r]


def _level(result, concurrency, role="candidate"):
    for run in (result or {}).get("runs") or []:
        if isinstance(run, dict) and run.get("concurrency") == concurrency:
            return _checked(inputs.check_run, run, "the %s result's concurrency %d" % (role, concurrency))
    return None


def _level_numbers(results, concurrency, role):
    """Median TPOT, TTFT (seconds), throughput, tokens per request over repeats."""
    runs = [_level(r, concurrency, role) for r in _as_list(results, role)]
    runs = [r for r in runs if r and r.get("completed")]
    if not runs:
        raise ChooseKError("the %s result has no completed run at concurrency %d: benchmark it at "
                           "concurrency %d first" % (role, concurrency, concurrency))
    tpot = _median(r.get("tpot_ms_p50") for r in runs)
    if not tpot or tpot <= 0:
        raise ChooseKError("the %s result has no TPOT p50 at concurrency %d (outputs of one token?): "
                           "benchmark with output_len of at least 2" % (role, concurrency))
    ttft = _median(r.get("ttft_ms_p50") for r in runs) or 0.0
    tput = _median(r.get("throughput_tok_s") for r in runs)
    per_request = _median(float(r.get("output_tokens") or 0) / r["completed"] for r in runs)
    mean = _mean_tpot_ms(runs, concurrency) if len(runs) == 1 else None
    tpot = mean or tpot
    return {"tpot": tpot / 1000.0, "ttft": ttft / 1000.0, "throughput": tput,
            "tokens": per_request}


def _mean_tpot_ms(runs, concurrency):
    """The mean TPOT of one level at concurrency 1: request time (tokens per request / throughput)
    less the TTFT, over the tokens after the first.  Times the round's acceptance length it is the
    step time of the whole round, so the acceptance drawn in that round cancels; the p50 of the
    per-request TPOTs does not cancel it (one request's share of the steps).  None when a number
    is missing or the result is not plausible (then the p50 is used)."""
    run = runs[0]
    tokens, tput = run.get("output_tokens"), run.get("throughput_tok_s")
    if concurrency != 1 or not tokens or not tput or not run.get("completed"):
        return None
    per_request = float(tokens) / run["completed"]
    if per_request < 2:
        return None
    tpot = (per_request / float(tput) - (run.get("ttft_ms_p50") or 0.0) / 1000.0) / (per_request - 1.0)
    return 1000.0 * tpot if tpot > 0 else None


def _spec_counts(results, concurrency, role="candidate"):
    """(drafts, per-position rates) pooled over repeats, preferring the level's counters.

    Pooling weights each repeat by its draft steps, which is what one longer run
    would have counted."""
    drafts_total = 0.0
    weighted = []
    for result in _as_list(results, role):
        run = _level(result, concurrency, role) or {}
        spec = run.get("spec_decode") or result.get("spec_decode")
        if spec:
            _checked(inputs.check_spec, spec, "the %s result's spec_decode" % role)
        if not spec or not spec.get("drafts"):
            continue
        drafts = float(spec["drafts"])
        rates = [float(x or 0.0) for x in (spec.get("per_position") or [])]
        for i, rate in enumerate(rates):
            if i == len(weighted):
                weighted.append(0.0)
            weighted[i] += rate * drafts
        drafts_total += drafts
    if not drafts_total:
        return 0.0, []
    return drafts_total, [w / drafts_total for w in weighted]


def acceptance_lengths(per_position, k_max):
    """E[L(k)] for k = 0..k_max by truncating the per-position rates.

    Positions the server did not report (none accepted there) count as 0.  The
    rates are made non-increasing first: position i+1 can only be accepted after
    position i, so a rise is counting noise."""
    rates = []
    ceiling = 1.0
    for i in range(k_max):
        rate = per_position[i] if i < len(per_position) else 0.0
        rate = min(max(rate, 0.0), ceiling)
        rates.append(rate)
        ceiling = rate
    lengths = [1.0]
    for rate in rates:
        lengths.append(lengths[-1] + rate)
    return lengths


def _step_cost(k, knots, constant_cost, t_base=None):
    """Extra step time at k, interpolated between measured (k, extra) knots.

    Below the smallest knot the cost runs along a line from (0, fixed) to that knot
    (fixed_cost), or along the roofline when both knots lie past a compute knee
    (_knee_below).

    Between two knots the cost follows the roofline of the verification (``t_base``, one
    target step, given): when the knots rise faster than the line before the left knot
    (a compute knee between them), the cost keeps to that line while verifying k + 1
    tokens stays memory bound, and rises by the compute of one more token per k after it.
    That compute (p per token) is fitted so the curve meets the right knot:
    line(k2) + max(0, (k2 + 1) p - t_base) = cost(k2); the knee is where (k + 1) p = t_base.
    A straight chord between the knots would spread the knee's cost over every k between
    them and hide a k at the knee.  The chord stays an upper bound (the cost is convex
    there), so the roofline only ever lowers the cost between the knots."""
    first_k, first_cost = knots[0]
    below = _knee_below(knots[0], knots[1], constant_cost, t_base) if len(knots) > 1 else None
    if k <= first_k:
        fixed = fixed_cost(knots, constant_cost)
        chord = fixed + (first_cost - fixed) * k / float(first_k)
        return min(chord, below(k)) if below else chord
    left = (0, fixed_cost(knots, constant_cost))
    for (k1, c1), (k2, c2) in zip(knots, knots[1:]):
        if k <= k2:
            chord = c1 + (c2 - c1) * (k - k1) / float(k2 - k1)
            if below and k1 == first_k:
                return chord  # both knots past the knee: a straight line between them
            return min(chord, _roofline(k, left, (k1, c1), (k2, c2), t_base))
        left = (k1, c1)
    return knots[-1][1]


def _knee_below(knot1, knot2, constant_cost, t_base):
    """The roofline below knot1 when both knots are compute bound (see _step_cost): a function of k,
    or None when the knots do not show it.

    The line through the knots meets k=0 below zero: both knots may lie past the knee.  Then that
    line is a + b k + (k + 1) p - t_base, the memory-bound cost a + b k meets it at the knee, and its
    slope is b + p.  The fixed part a is 0 for a drafter (it runs per drafted token) and b is 0 for the
    n-gram proposer (one lookup per step); the other follows from the line's value at k = -1.  The
    knots show it only when that knee, t_base / p - 1, lies below knot1."""
    (k1, c1), (k2, c2) = knot1, knot2
    if not t_base or t_base <= 0 or k2 <= k1:
        return None
    slope = (c2 - c1) / float(k2 - k1)

    def line(at):
        return c1 + slope * (at - k1)

    if line(0) >= 0:
        return None  # the knots are consistent with a fixed cost and a straight line
    if constant_cost:
        fixed, per_k = min(max(t_base + line(-1), 0.0), c1), 0.0
    else:
        fixed, per_k = 0.0, min(max(-t_base - line(-1), 0.0), c1 / float(k1))
    per_token = slope - per_k
    if per_token <= 0 or t_base / per_token - 1.0 >= k1:
        return None  # that knee would lie at or past knot1: the knee is not below it
    return lambda k: max(fixed + per_k * k, line(k))


def _roofline(k, left, knot1, knot2, t_base):
    """The roofline cost at k between knot1 and knot2 (see _step_cost); inf when it does not apply."""
    (k0, c0), (k1, c1), (k2, c2) = left, knot1, knot2
    if not t_base or t_base <= 0 or k1 <= k0:
        return float("inf")
    slope = (c1 - c0) / float(k1 - k0)

    def line(at):
        return c1 + slope * (at - k1)

    if c2 <= line(k2):
        return float("inf")  # no knee: the knots do not rise faster than the line before them
    per_token = (c2 - line(k2) + t_base) / float(k2 + 1)
    if (k1 + 1) * per_token > t_base:
        return float("inf")  # that knee would lie below knot1: not a knee between the knots
    return line(k) + max(0.0, (k + 1) * per_token - t_base)


def fixed_cost(knots, constant_cost):
    """The per-step cost that does not grow with k (seconds).

    With two or more knots it is measured: the line through the two smallest knots,
    extended to k=0, at most the first knot's cost (the n-gram lookup, a draft pass's
    launch cost).  With one knot, or when that line meets k=0 below zero (a compute knee
    between or below the knots: the line says nothing of k=0), it is assumed: the whole
    first knot's cost for the n-gram proposer (one lookup per step), 0 for drafters that
    run once per drafted token."""
    first_k, first_cost = knots[0]
    if len(knots) < 2:
        return first_cost if constant_cost else 0.0
    (k1, c1), (k2, c2) = knots[0], knots[1]
    intercept = c1 - (c2 - c1) * k1 / float(k2 - k1)
    if intercept < 0:  # a knee between or below the knots: the line says nothing of k=0, assume as with one
        return first_cost if constant_cost else 0.0
    return min(intercept, first_cost)


def predict(lengths, base, cand, k_measured, constant_cost=False, other_steps=(), own_length=None):
    """Per k: predicted TPOT (s) and throughput ratio over the baseline (unscaled).

    ``other_steps`` are (k, measured step seconds) of other candidate rounds.  ``own_length`` is the
    acceptance length the measured round itself counted (default: ``lengths[k_measured]``): its TPOT
    times its own length is its step time, as for the other rounds; the pooled length would carry
    the other rounds' acceptance into this round's step time (a round that drew lucky acceptance
    would then look as fast as its luck at every k)."""
    t_base = base["tpot"]
    step_measured = cand["tpot"] * (own_length or lengths[k_measured])
    extra = max(0.0, step_measured - t_base)
    knots = dict((k, max(0.0, step - t_base)) for k, step in other_steps if 0 < k < k_measured)
    knots[k_measured] = extra
    knots = sorted(knots.items())
    n = max(cand["tokens"] or base["tokens"] or 1.0, 1.0)

    def throughput(ttft, tpot):
        return n / (ttft + (n - 1) * tpot)

    base_tput = throughput(base["ttft"], t_base)
    out = {}
    for k in range(1, k_measured + 1):
        tpot = (t_base + _step_cost(k, knots, constant_cost, t_base)) / lengths[k]
        out[k] = (tpot, throughput(cand["ttft"], tpot) / base_tput)
    return out, extra


def _larger_k_may_help(lengths, base, cand, k_measured, constant_cost, extra, preds):
    """Whether k_measured + 1 would beat k_measured, extrapolating the last conditional rate.

    This is what decides whether a probe at a larger k is worth a benchmark round."""
    last = lengths[k_measured] - lengths[k_measured - 1]
    before = lengths[k_measured - 1] - lengths[k_measured - 2] if k_measured > 1 else 1.0
    if last <= 0:
        return False
    next_rate = last * min(1.0, last / before) if before > 0 else 0.0
    cost = extra if constant_cost else extra * (k_measured + 1) / float(k_measured)
    tpot = (base["tpot"] + cost) / (lengths[k_measured] + next_rate)
    return tpot < preds[k_measured][0]


def _other_steps(others, k_measured, concurrency):
    """(k, step seconds) of rounds measured at other k, and their counters for pooling."""
    steps, pooled = [], []
    if others is not None and not isinstance(others, (list, tuple)):
        raise ChooseKError("others must be a list of {k: <num_speculative_tokens>, result: <vllm_bench result>} "
                           "entries, got %r (%s)" % (others, type(others).__name__))
    for item in others or ():
        if not isinstance(item, dict) or "k" not in item or "result" not in item:
            raise ChooseKError("others must be a list of {k: <num_speculative_tokens>, result: <vllm_bench "
                               "result>} entries")
        k = item["k"]
        if isinstance(k, bool) or not isinstance(k, int) or not 0 < k < k_measured:
            raise ChooseKError("others: k=%r must be an integer between 1 and k_measured - 1 (%d)"
                               % (k, k_measured - 1))
        numbers = _level_numbers(item["result"], concurrency, "k=%d" % k)
        drafts, rates = _spec_counts(item["result"], concurrency, "k=%d" % k)
        if drafts:
            length = acceptance_lengths(rates, k)[k]
            steps.append((k, numbers["tpot"] * length))
            pooled.append((drafts, rates[:k]))
    return steps, pooled


def _pool_positions(drafts, per_position, pooled):
    """The probe's per-position rates with the other rounds' counters pooled in.

    A position the other rounds drafted too is pooled by draft steps.  A deeper position only the
    probe drafted keeps the probe's own conditional rate beyond the deepest shared position m:
    r_i = pooled r_m x (probe r_i / probe r_m).  The probe's requests may have been easier or harder to
    draft for than the others'; that lifts or lowers every deep position with r_m, so taking the deep
    positions as they are would carry that one round's draw into every k above m."""
    own = list(per_position)
    out = list(per_position)
    weights = [drafts] * len(out)
    shared = 0
    for extra_drafts, rates in pooled:
        for i, rate in enumerate(rates[:len(out)]):
            out[i] = (out[i] * weights[i] + rate * extra_drafts) / (weights[i] + extra_drafts)
            weights[i] += extra_drafts
        shared = max(shared, min(len(rates), len(out)))
    if 0 < shared < len(out) and own[shared - 1] > 0:
        ratio = out[shared - 1] / own[shared - 1]
        for i in range(shared, len(out)):
            out[i] = own[i] * ratio
    return out


def _check_options(method, concurrency):
    if method is not None and not isinstance(method, str):
        raise ChooseKError("method must be the speculative method (a string such as eagle3 or ngram) or null, got %r"
                           % (method,))
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ChooseKError("concurrency must be a benchmarked concurrency level (an integer >= 1), got %r"
                           % (concurrency,))


def choose_k(candidate, baseline, k_measured, method=None, concurrency=1, tie_tolerance=0.01,
             others=None):
    """Return the k choice; see the module docstring.  Raises ChooseKError.

    ``others``: rounds of the same pair at smaller k ({k, result} each): their step
    times refine the cost curve and their counters add to the acceptance of the
    positions they drafted (the chain property makes those positions the same)."""
    if isinstance(k_measured, bool) or not isinstance(k_measured, int) or k_measured < 1:
        raise ChooseKError("k_measured must be the num_speculative_tokens the candidate ran with "
                           "(an integer >= 1), got %r" % (k_measured,))
    tie_tolerance = _fraction(tie_tolerance, "tie_tolerance", 0.0, 0.5)
    _check_options(method, concurrency)
    base = _level_numbers(baseline, concurrency, "baseline")
    cand = _level_numbers(candidate, concurrency, "candidate")
    drafts, per_position = _spec_counts(candidate, concurrency)
    if not drafts:
        raise ChooseKError("the candidate result has no spec-decode counters (drafts = 0): the "
                           "server exposed no vllm:spec_decode_* metrics or speculation was off")
    other_steps, pooled = _other_steps(others, k_measured, concurrency)
    own_length = acceptance_lengths(per_position, k_measured)[k_measured]
    per_position = _pool_positions(drafts, per_position, pooled)
    reasons = []
    if len(per_position) < k_measured:
        reasons.append("the server reported acceptance for %d of %d positions; the rest count as 0"
                       % (len(per_position), k_measured))
    lengths = acceptance_lengths(per_position, k_measured)
    constant_cost = method in CONSTANT_COST_METHODS
    preds, extra = predict(lengths, base, cand, k_measured, constant_cost, other_steps, own_length)
    ratio_at_k = preds[k_measured][1]
    scale = 1.0
    if base["throughput"] and cand["throughput"] and ratio_at_k > 0:
        scale = (cand["throughput"] / base["throughput"]) / ratio_at_k
    speedup = dict((k, preds[k][1] * scale) for k in preds)
    best_value = max(speedup.values())
    best = min(k for k in speedup if speedup[k] >= best_value * (1.0 - tie_tolerance))
    top = max(speedup, key=lambda k: (speedup[k], -k))

    rates = ", ".join("%.2f" % (lengths[i + 1] - lengths[i]) for i in range(k_measured))
    reasons.append("measured at k=%d over %d draft steps: acceptance length %.2f, per-position "
                   "acceptance %s" % (k_measured, int(drafts), lengths[k_measured], rates))
    cost_text = ("a fixed %.2f ms per step (n-gram lookup)" % (extra * 1000.0) if constant_cost else
                 "%.1f %% of a target step per drafted token" % (
                     100.0 * extra / k_measured / base["tpot"]))
    reasons.append("draft and verification cost %s: candidate step %.2f ms (TPOT %.2f ms x "
                   "the round's acceptance length %.2f) against the baseline step %.2f ms"
                   % (cost_text, 1000.0 * cand["tpot"] * own_length, 1000.0 * cand["tpot"],
                      own_length, 1000.0 * base["tpot"]))
    if best != top:
        reasons.append("k=%d predicted %.3fx, within %.1f %% of the best (k=%d, %.3fx): the smaller "
                       "k is chosen" % (best, speedup[best], 100.0 * tie_tolerance, top, speedup[top]))
    else:
        reasons.append("k=%d has the highest predicted speedup, %.3fx" % (best, speedup[best]))
    if speedup[best] <= 1.0:
        reasons.append("no k up to %d is predicted to beat the baseline at concurrency %d"
                       % (k_measured, concurrency))
    larger = _larger_k_may_help(lengths, base, cand, k_measured, constant_cost, extra, preds)
    if larger:
        reasons.append("k=%d+1 is predicted faster still if acceptance keeps falling at the rate "
                       "measured at the last position: measure a larger k to know" % k_measured)
    return {
        "k": best,
        "k_measured": k_measured,
        "predicted_speedup": dict((str(k), round(v, 4)) for k, v in sorted(speedup.items())),
        "predicted_tpot_ms": dict((str(k), round(preds[k][0] * 1000.0, 4)) for k in sorted(preds)),
        "acceptance_length": dict((str(k), round(lengths[k], 4)) for k in range(1, k_measured + 1)),
        "measured_speedup": round(cand["throughput"] / base["throughput"], 4)
        if base["throughput"] and cand["throughput"] else None,
        "draft_cost_ms": round(extra * 1000.0, 4),
        "beats_baseline": speedup[best] > 1.0,
        "larger_k_may_help": larger,
        "confirm_k": best if best not in set([k_measured] + [k for k, dummy in other_steps]) else None,
        "reasons": reasons,
    }


# The skill's rule: raise k above the board's start only when acceptance at the start k is above this.
ACCEPTANCE_FOR_HIGHER_K = 0.6


def acceptance_rate(result, k, concurrency=1, role="candidate"):
    """vLLM's acceptance rate (accepted / drafted tokens) of a round at k, None without counters.

    From the per-position rates: the mean of the first k (a position not reported counts 0)."""
    drafts, rates = _spec_counts(result, concurrency, role)
    if not drafts:
        return None
    rates = (list(rates) + [0.0] * k)[:k]
    return sum(rates) / float(k)


def _measured_rounds(rounds, concurrency):
    if not isinstance(rounds, (list, tuple)) or not rounds:
        raise ChooseKError("rounds must be a non-empty list of {k: <num_speculative_tokens>, result: <vllm_bench "
                           "result>} entries, got %r" % (type(rounds).__name__,))
    out = {}
    for item in rounds:
        if not isinstance(item, dict) or "k" not in item or "result" not in item:
            raise ChooseKError("rounds must be a list of {k: <num_speculative_tokens>, result: <vllm_bench "
                               "result>} entries, got an entry %r" % (item,))
        k = item["k"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ChooseKError("rounds: k=%r must be an integer >= 1 (the num_speculative_tokens it ran with)" % (k,))
        if k in out:
            raise ChooseKError("rounds: k=%d is listed twice; pass each measured k once (repeats as a list "
                               "in its result)" % k)
        out[k] = item["result"]
    return out


def _fraction(value, field, low, high):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) \
            or not low <= value < high:
        raise ChooseKError("%s must be a number within [%g, %g), got %r" % (field, low, high, value))
    return float(value)


def keep_k(rounds, baseline, start_k, predicted_k=None, method=None, noise=0.06, concurrency=1,
           tie_tolerance=0.01):
    """Which measured k to keep, from rounds measured at several k (the evaluation's k probes and confirmation).

    ``rounds``: [{k, result}] measured at concurrency ``concurrency`` against ``baseline``;
    ``start_k`` (the board's start, which must be among them) and ``predicted_k`` (what
    spec_choose_k predicted; named in the reasons).  Only a measured k can be kept.  Each is
    judged by its own measured step time (TPOT x its acceptance length, which cancels the
    acceptance drawn in that round) over the acceptance length of the counters of every round
    pooled: one round of a few hundred draft steps carries several percent of counting noise
    in its throughput, the pooled counters much less.  The best k wins, or the smallest within
    ``tie_tolerance`` of it.  The skill's 0.6 rule: a k above the start is kept only when the
    start round's acceptance rate is above 0.6, or when that k is faster than the start k by more
    than ``noise`` (6 %: about twice the standard deviation of one comparison of two rounds at a
    clock CV of 2 %, counting noise aside) - the measured
    evidence that the larger k pays."""
    if isinstance(start_k, bool) or not isinstance(start_k, int) or start_k < 1:
        raise ChooseKError("start_k must be the board's start num_speculative_tokens (an integer >= 1), got %r"
                           % (start_k,))
    if predicted_k is not None and (isinstance(predicted_k, bool) or not isinstance(predicted_k, int)):
        raise ChooseKError("predicted_k must be an integer (spec_choose_k's k) or null, got %r" % (predicted_k,))
    noise = _fraction(noise, "noise", 0.0, 0.5)
    tie_tolerance = _fraction(tie_tolerance, "tie_tolerance", 0.0, 0.5)
    _check_options(method, concurrency)
    measured = _measured_rounds(rounds, concurrency)
    if start_k not in measured:
        raise ChooseKError("rounds must include the start k (%d): the 0.6 rule and the comparison need it; "
                           "measured: %s" % (start_k, ", ".join("k=%d" % k for k in sorted(measured))))
    base = _level_numbers(baseline, concurrency, "baseline")
    raw = {}
    for k, result in measured.items():  # every round checked under its own name first
        numbers = _level_numbers(result, concurrency, "k=%d" % k)
        _spec_counts(result, concurrency, "k=%d" % k)
        raw[k] = numbers["throughput"] / base["throughput"] if base["throughput"] and numbers["throughput"] else None
    top_k = max(measured)
    model = choose_k(measured[top_k], baseline, top_k, method=method, concurrency=concurrency,
                     tie_tolerance=tie_tolerance,
                     others=[{"k": k, "result": measured[k]} for k in sorted(measured) if k != top_k])
    speedup = dict((k, model["predicted_speedup"][str(k)]) for k in measured)
    acceptance = acceptance_rate(measured[start_k], start_k, concurrency, "k=%d" % start_k)
    above = acceptance is not None and acceptance > ACCEPTANCE_FOR_HIGHER_K
    reasons = ["measured c=%d speedup (throughput ratio of each round) %s; from each round's step time over the "
               "pooled acceptance %s" % (concurrency, ", ".join(
                   "k=%d %s" % (k, "%.3fx" % raw[k] if raw[k] is not None else "n/a") for k in sorted(raw)),
                   ", ".join("k=%d %.3fx" % (k, speedup[k]) for k in sorted(speedup)))]
    allowed = dict(speedup)
    if not above:
        for k in [k for k in speedup if k > start_k and speedup[k] <= speedup[start_k] * (1.0 + noise)]:
            del allowed[k]
        evidence = sorted(k for k in allowed if k > start_k)
        reasons.append("acceptance at the start k=%d is %s, not above %s (the skill's rule for raising k): %s"
                       % (start_k, "%.2f" % acceptance if acceptance is not None else "unknown",
                          ACCEPTANCE_FOR_HIGHER_K,
                          ("k=%s measured faster than k=%d by more than the noise of a comparison (%.1f %%), "
                           "the evidence that the larger k pays" % (
                               ", ".join(str(k) for k in evidence), start_k, 100.0 * noise)) if evidence else
                          "a k above it is kept only when it measured faster by more than %.1f %%, and none did"
                          % (100.0 * noise)))
    best = max(allowed.values())
    kept = min(k for k in allowed if allowed[k] >= best * (1.0 - tie_tolerance))
    top = max(allowed, key=lambda k: (allowed[k], -k))
    if kept != top:
        reasons.append("k=%d kept: within %.1f %% of the best measured (k=%d), and the smaller k wins a tie"
                       % (kept, 100.0 * tie_tolerance, top))
    else:
        reasons.append("k=%d kept: the best measured" % kept)
    if predicted_k is not None and predicted_k != kept:
        reasons.append("the prediction (k=%d) is not what measured best" % predicted_k)
    return {"k": kept, "start_k": start_k, "predicted_k": predicted_k,
            "measured_by_k": dict((str(k), round(v, 4)) for k, v in sorted(speedup.items())),
            "round_speedup": dict((str(k), round(v, 4) if v is not None else None) for k, v in sorted(raw.items())),
            "acceptance_at_start": round(acceptance, 4) if acceptance is not None else None,
            "reasons": reasons}


# At most this many candidate rounds at different k: the start, the probe, the prediction and one neighbour.
K_ROUNDS = 4
# A neighbour of the k that measured best is measured when the model puts it within this share of that k.
NEIGHBOUR_MARGIN = 0.03


def next_k(rounds, baseline, start_k, method=None, noise=0.06, concurrency=1, max_rounds=K_ROUNDS,
           margin=NEIGHBOUR_MARGIN):
    """Which k to measure next, after the rounds measured so far (the start and the probe at least; one round
    when the start k is the probe's).

    The model (choose_k over every measured round: each one's step time is a knot of the cost curve)
    predicts a k; an unmeasured prediction is measured first (the confirmation).  Once the prediction
    is measured, the measured rounds can still straddle a compute knee the model cannot see (a cost
    that jumps between two knots looks like a chord): the unmeasured neighbour (k - 1 or k + 1) of
    the k keep_k keeps is measured when the model puts it within ``margin`` of that k.  Measuring
    stops at ``max_rounds`` rounds.  Returns {k (None: measuring is done), why}."""
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 2:
        raise ChooseKError("max_rounds must be an integer >= 2 (the start and the probe), got %r" % (max_rounds,))
    margin = _fraction(margin, "margin", 0.0, 0.5)
    measured = _measured_rounds(rounds, concurrency)
    if len(measured) >= max_rounds:
        return {"k": None, "why": "%d rounds at different k measured, the most it measures" % len(measured)}
    top = max(measured)
    if start_k not in measured:
        raise ChooseKError("next_k needs the start k (%d) measured (the probe's round when the start is the probe "
                           "k); measured: %s" % (start_k, ", ".join("k=%d" % k for k in sorted(measured))))
    model = choose_k(measured[top], baseline, top, method=method, concurrency=concurrency,
                     others=[{"k": k, "result": measured[k]} for k in sorted(measured) if k != top])
    if model["k"] not in measured:
        return {"k": model["k"], "why": "the model over k=%s predicts k=%d best: measured to confirm"
                % (",".join(str(k) for k in sorted(measured)), model["k"])}
    kept = keep_k(rounds, baseline, start_k, model["k"], method=method, noise=noise, concurrency=concurrency)["k"]
    speedup = dict((int(k), v) for k, v in model["predicted_speedup"].items())
    near = [k for k in (kept - 1, kept + 1)
            if 1 <= k <= top and k not in measured and speedup[k] >= speedup[kept] * (1.0 - margin)]
    if not near:
        return {"k": None, "why": "k=%d measured best and no unmeasured neighbour is predicted within %.0f %% of it"
                % (kept, 100.0 * margin)}
    k = max(near, key=lambda n: (speedup[n], -n))
    return {"k": k, "why": "k=%d measured best; its neighbour k=%d is predicted within %.0f %% of it (%.3fx against "
            "%.3fx): measured, a knee between measured k hides from the model" % (
                kept, k, 100.0 * margin, speedup[k], speedup[kept])}
