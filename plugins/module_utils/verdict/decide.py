# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Sequential keep / revert verdict from interleaved benchmark rounds (filter spec_decide).

Input: the rounds in the order they ran, each ``{"arm": "baseline" | "candidate",
"result": <vllm_bench result>}`` (optionally ``"wall_s"``: the round's measured
wall time including any restart before it, and ``"levels"``: the concurrency
levels it was asked to measure, ``next_round.levels``).  Output: a decision, an action and,
while the evidence does not settle the action, the next round to run.

Statistics (docs/verdict.md explains them for an operator):

* Every round gives, per metric (c=1 throughput, c=1 TPOT median, c=8
  throughput), a log value and the variance its requests imply
  (module_utils/verdict/evidence.py).
* Failed requests cost each arm the time they held a stream, charged at the
  arm's failure rate pooled over all its levels and rounds (the same for
  every round; evidence.failure_charge), with that rate's uncertainty in the
  interval.  A round's own count of hangs is mostly chance.
* A round also moves as a whole when clocks or temperature move ("drift").
  The variance of one round's value is estimated from repeated rounds of the
  same arm (pooled over both arms), shrunk towards ``drift_prior`` plus the
  request noise with a weight of ``drift_prior_rounds`` rounds, and never below
  what the requests alone imply.
* The effect is the difference of the arms' mean log values; its interval is
  ``± z`` standard errors.  Rounds interleave B C C B B C ..., so a linear drift
  cancels once both arms have as many rounds.
* A round measured under other board conditions than the reference (the first
  round that saw none of these): held clocks lower, a throttle, another power
  mode, jetson_clocks switched (jetson/conditions.py on the samples vllm_bench
  took before and during it) is set aside: it costs budget but is not evidence,
  and its arm is measured again.
* Once every level was measured in ``min_rounds`` rounds, ``next_round.levels``
  names only the levels whose comparisons are still open (settled at 1.5 times
  the deciding width, SKIP_Z_FACTOR; ``skip_settled_levels``).  A round that
  carries ``levels`` is evidence at those levels only.
* The skill's rule is applied to the intervals: a comparison whose interval
  lies wholly on one side of its threshold is settled, otherwise open.  When
  every way of resolving the open comparisons leads to the same action the
  verdict stops; else it asks for another round, until the budget (rounds,
  requests, wall time with restarts) is spent: then ``inconclusive``, action
  revert, flagged (speculation stays off unless shown to help).

Pure standard library, Python 3.8+.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import itertools
import math

from ansible_collections.jetson.specdec.plugins.module_utils.bench.roofline import limit_roofline
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import conditions
from ansible_collections.jetson.specdec.plugins.module_utils.verdict import energy
from ansible_collections.jetson.specdec.plugins.module_utils.verdict import evidence as ev
from ansible_collections.jetson.specdec.plugins.module_utils.verdict import inputs
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.params import high_levels, validate

ARMS = ("baseline", "candidate")
DECISIONS = ("keep", "revert", "marginal", "continue", "inconclusive")
COMPARISONS = ("gain_keep", "drop_keep", "gain_revert_ok", "c8_regressed")
LABELS = {
    "gain_keep": "the %s throughput keep threshold at concurrency %s",
    "drop_keep": "the %s TPOT keep threshold at concurrency %s",
    "gain_revert_ok": "the %s throughput revert threshold at concurrency %s",
    "c8_regressed": "the regression check at concurrency %s (tolerance %s)",
}


# --------------------------------------------------------------------------- formatting

def _pct(fraction):
    return "%+.1f%%" % (fraction * 100.0)


def _thr(fraction):
    return "%g%%" % round(fraction * 100.0, 2)


def _interval(est):
    return "%s (%s to %s)" % (_pct(est["point"]), _pct(est["low"]), _pct(est["high"]))


# --------------------------------------------------------------------------- rounds -> evidence

def _round_roofline(rnd, p):
    """A candidate round's roofline at the judged level (board time), or None: the baseline's is not judged,
    and the board's limit (p["roofline"]) may be unknown."""
    if rnd["arm"] != "candidate":
        return None
    return limit_roofline(rnd["result"], p.get("roofline"), True, p["low_concurrency"])


def _rounds_evidence(rounds, p):
    """Validate the rounds and extract per-level evidence; raise ValueError on malformed input."""
    if not isinstance(rounds, (list, tuple)):
        raise ValueError("spec_decide: the input must be the list of rounds, got %s" % type(rounds).__name__)
    # the judged level first, then every regression-check level (docs/verdict.md states the rule)
    levels = [p["low_concurrency"]] + high_levels(p)
    out = []
    for i, rnd in enumerate(rounds):
        if not isinstance(rnd, dict) or rnd.get("arm") not in ARMS or not isinstance(rnd.get("result"), dict):
            raise ValueError("spec_decide: round %d must be {'arm': 'baseline'|'candidate', 'result': "
                             "<vllm_bench result>}, got %r" % (i + 1, rnd if not isinstance(rnd, dict)
                                                               else sorted(rnd)))
        wall = ev.number(rnd.get("wall_s"), "round %d wall_s" % (i + 1))
        switch = ev.number(rnd.get("switch_s"), "round %d switch_s" % (i + 1))
        if rnd["result"].get("spec_decode") is not None:
            inputs.check_spec(rnd["result"]["spec_decode"], "round %d (%s) spec_decode" % (i + 1, rnd["arm"]))
        samples = rnd["result"].get("conditions")
        foreign = [(run.get("concurrency"), (run.get("traffic") or {}).get("foreign_requests"))
                   for run in rnd["result"].get("runs") or [] if isinstance(run, dict)
                   and isinstance(run.get("traffic"), dict)]
        item = {"arm": rnd["arm"], "levels": {}, "wall_s": wall, "switch_s": switch,
                "roofline": _round_roofline(rnd, p),
                "foreign": [(c, n) for c, n in foreign if isinstance(n, int) and not isinstance(n, bool) and n > 0],
                "acceptance": ev.acceptance_rate(rnd["result"]), "requests": 0,
                "tokens_per_step": ev.tokens_per_step(rnd["result"]),
                "conditions": [s for s in samples if isinstance(s, dict)] if isinstance(samples, list) else []}
        item["asked"] = _asked_levels(rnd.get("levels"), levels, i)
        for c in levels:
            run = ev.find_run(rnd["result"], c) if c in item["asked"] else None
            where = "round %d (%s) concurrency %d" % (i + 1, rnd["arm"], c)
            item["levels"][c] = None if run is None else ev.level_evidence(run, where, p["request_cv_prior"])
            if run is not None:
                item["requests"] += item["levels"][c]["completed"] + item["levels"][c]["failed"]
        out.append(item)
    return out, levels


def _asked_levels(asked, levels, i):
    """The judged levels round ``i`` was asked to measure (its ``levels``, from ``next_round.levels``; every level
    when not given). A level the round was not asked for is not evidence there, nor missing. ValueError when
    ``levels`` is not a non-empty list of concurrency levels."""
    if asked is None:
        return list(levels)
    if not isinstance(asked, (list, tuple)) or not asked \
            or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in asked):
        raise ValueError("spec_decide: round %d levels must be a non-empty list of concurrency levels (the verdict's "
                         "next_round.levels), got %r" % (i + 1, asked))
    return [c for c in levels if c in asked]


def _set_aside(rounds, p):
    """(rounds used as evidence, [{round, arm, reasons}] set aside): each round's condition samples
    against the reference, the first round whose own samples are consistent (no throttle, no
    change within it).  Rounds without samples (an older vllm_bench, no sensors) are used."""
    limits = {"gpu_freq_drop": p["condition_freq_drop"], "emc_freq_drop": p["condition_freq_drop"],
              "max_temp_c": p["condition_max_temp_c"]}
    used, aside, reference = [], [], None
    for i, rnd in enumerate(rounds):
        if rnd.get("foreign"):
            # vllm_bench's traffic watch saw requests the benchmark did not send: a shared server was measured
            aside.append({"round": i + 1, "arm": rnd["arm"], "reasons": [
                "foreign traffic (up to %s requests besides the benchmark's at concurrency %s)"
                % (max(n for _c, n in rnd["foreign"]), ", ".join(str(c) for c, _n in rnd["foreign"]))]})
            continue
        samples = rnd["conditions"]
        if samples:
            check = conditions.comparable(reference if reference is not None else samples, samples, limits)
            if not check["comparable"]:
                aside.append({"round": i + 1, "arm": rnd["arm"], "reasons": check["reasons"]})
                continue
            if reference is None:
                reference = samples
        used.append(rnd)
    return used, aside


def _aside_sentences(aside):
    return ["Round %d (%s) is set aside, not evidence: %s." % (a["round"], a["arm"], "; ".join(a["reasons"]))
            for a in aside]


def _unusable(rounds, levels):
    """(arm, sentence) for the first round lacking a level or a number, else None."""
    for i, rnd in enumerate(rounds):
        for c in rnd["asked"]:
            lvl = rnd["levels"][c]
            if lvl is None:
                return rnd["arm"], "Round %d (%s) has no run at concurrency %d." % (i + 1, rnd["arm"], c)
            if lvl["thr"] is None:
                total = lvl["failed"] + lvl["completed"]
                return rnd["arm"], ("Round %d (%s) reports zero or missing throughput at concurrency %d "
                                    "(%d of %d requests failed)." % (i + 1, rnd["arm"], c, lvl["failed"], total))
            if c == levels[0] and lvl["tpot"] is None:
                return rnd["arm"], ("Round %d (%s) has no TPOT at concurrency %d, so the TPOT rule cannot be "
                                    "checked." % (i + 1, rnd["arm"], c))
    return None


def _failures(rounds):
    out = {}
    for arm in ARMS:
        done = sum(lvl["completed"] for r in rounds if r["arm"] == arm for lvl in r["levels"].values() if lvl)
        bad = sum(lvl["failed"] for r in rounds if r["arm"] == arm for lvl in r["levels"].values() if lvl)
        out[arm] = (bad, done + bad)
    return out


def fisher_greater(bad_c, n_c, bad_b, n_b):
    """One-sided Fisher exact test: P(the candidate fails >= bad_c of n_c requests) when both arms
    fail at one common rate, given bad_c + bad_b failures among n_c + n_b requests (hypergeometric
    tail, in logs so 2,400 requests do not overflow)."""
    total, failures = n_c + n_b, bad_c + bad_b

    def log_comb(n, k):
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)

    denom = log_comb(total, n_c)
    top = min(failures, n_c)
    return min(1.0, math.fsum(math.exp(log_comb(failures, x) + log_comb(total - failures, n_c - x) - denom)
                              for x in range(bad_c, top + 1)))


# --------------------------------------------------------------------------- estimates

def failure_charges(rounds, level):
    """{arm: (penalty, variance, info)}: what failed requests cost each arm's throughput at ``level``
    (evidence.failure_charge: the arm's failures pooled over every level and round it ran, charged to
    every round alike), and the share of the arm's rounds at ``level`` that are charged (those with
    per-request data; the others' tokens / duration holds the time already)."""
    out = {}
    for arm in ARMS:
        mine = [r for r in rounds if r["arm"] == arm]
        at = [r["levels"][level] for r in mine if r["levels"][level] is not None]
        penalty, var, info = ev.failure_charge([lvl for r in mine for lvl in r["levels"].values() if lvl], at)
        share = float(sum(1 for lvl in at if lvl and lvl["per_request"])) / len(at) if at else 0.0
        out[arm] = (penalty * share, var * share * share, info)
    return out


def _effect(rounds, level, key, p):
    """Difference candidate - baseline of the arms' mean log ``key`` at ``level``: (diff, se, drift).

    For the throughput the rounds' values are the successful requests' rates; each arm's pooled failure
    charge is subtracted from its mean, and the charge's own uncertainty (a rate from a few failures) adds
    to the standard error.  The drift is measured on the rates alone: a hang in one round is no longer
    scatter between rounds."""
    values = dict((arm, [(r["levels"][level][key], r["levels"][level][key + "_var"])
                         for r in rounds if r["arm"] == arm and r["levels"][level] is not None]) for arm in ARMS)
    within = [v for arm in ARMS for _y, v in values[arm]]
    mean_within = math.fsum(within) / len(within)
    ss, df = 0.0, 0
    for arm in ARMS:
        ys = [y for y, _v in values[arm]]
        if len(ys) > 1:
            m = math.fsum(ys) / len(ys)
            ss += math.fsum((y - m) ** 2 for y in ys)
            df += len(ys) - 1
    nu0 = p["drift_prior_rounds"]
    prior = mean_within + p["drift_prior"] ** 2
    if nu0 + df > 0:
        round_var = (nu0 * prior + ss) / (nu0 + df)
    else:
        round_var = prior
    round_var = max(round_var, mean_within)
    means = dict((arm, math.fsum(y for y, _v in values[arm]) / len(values[arm])) for arm in ARMS)
    se2 = round_var * (1.0 / len(values["baseline"]) + 1.0 / len(values["candidate"]))
    drift = math.sqrt(max(0.0, round_var - mean_within))
    if key == "thr":
        charges = failure_charges(rounds, level)
        for arm in ARMS:
            means[arm] -= charges[arm][0]
            se2 += charges[arm][1]
    return means["candidate"] - means["baseline"], math.sqrt(se2), drift


def change_key(level, levels):
    """The estimate's name of the throughput change at a regression level: ``c8_throughput_change`` for the
    highest (the skill's c=8 check, the name records and reports read), ``throughput_change_c<N>`` for
    every other level checked."""
    return "c8_throughput_change" if level == max(levels[1:]) else "throughput_change_c%d" % level


def regression_estimates(est, levels):
    """[(level, estimate)] of every regression level, lowest level first."""
    return [(level, est[change_key(level, levels)]) for level in levels[1:] if change_key(level, levels) in est]


def _estimates(rounds, levels, p):
    z = p["z"]
    out = {}
    diff, se, drift = _effect(rounds, levels[0], "thr", p)
    out["c1_throughput_gain"] = {"point": math.exp(diff) - 1, "low": math.exp(diff - z * se) - 1,
                                 "high": math.exp(diff + z * se) - 1, "round_drift": drift}
    diff, se, drift = _effect(rounds, levels[0], "tpot", p)
    out["c1_tpot_drop"] = {"point": 1 - math.exp(diff), "low": 1 - math.exp(diff + z * se),
                           "high": 1 - math.exp(diff - z * se), "round_drift": drift}
    zr = p["regression_z"] if p["regression_z"] is not None else z
    for level in levels[1:]:
        diff, se, drift = _effect(rounds, level, "thr", p)
        out[change_key(level, levels)] = {"point": math.exp(diff) - 1, "low": math.exp(diff - zr * se) - 1,
                                          "high": math.exp(diff + zr * se) - 1, "round_drift": drift}
    return out


# --------------------------------------------------------------------------- the rule on intervals

def _side(est, threshold):
    """True when the interval lies at or above ``threshold``, False below it, None when it straddles."""
    if est["low"] >= threshold:
        return True
    if est["high"] < threshold:
        return False
    return None


def _tri_states(est, p, levels):
    """Settled (True/False) or open (None) per comparison; c8_regressed over every regression level:
    a regression as soon as one level's interval lies below -tolerance, none once every level's lies above."""
    sides = [_side(change, -p["c8_regression_tolerance"]) for _level, change in regression_estimates(est, levels)]
    if not sides or all(side is True for side in sides):
        regressed = False
    elif any(side is False for side in sides):
        regressed = True
    else:
        regressed = None
    return {
        "gain_keep": _side(est["c1_throughput_gain"], p["keep_throughput_gain"]),
        "drop_keep": _side(est["c1_tpot_drop"], p["keep_tpot_drop"]),
        "gain_revert_ok": _side(est["c1_throughput_gain"], p["revert_throughput_gain"]),
        "c8_regressed": regressed,
    }


def rule_decision(gain_keep, drop_keep, gain_revert_ok, c8_regressed):
    """The skill's rule on settled comparisons (gain_revert_ok: gain >= the revert threshold)."""
    if c8_regressed or not gain_revert_ok:
        return "revert"
    if gain_keep and drop_keep:
        return "keep"
    return "marginal"


def possible_decisions(tri):
    """Every decision reachable by settling the open (None) comparisons either way."""
    open_names = [k for k in COMPARISONS if tri[k] is None]
    found = set()
    for combo in itertools.product((True, False), repeat=len(open_names)):
        vals = dict(tri)
        vals.update(zip(open_names, combo))
        if vals["gain_keep"] and not vals["gain_revert_ok"]:
            continue  # one gain cannot be >= the keep and < the revert threshold
        found.add(rule_decision(vals["gain_keep"], vals["drop_keep"], vals["gain_revert_ok"], vals["c8_regressed"]))
    return open_names, found


# --------------------------------------------------------------------------- budget and schedule

def next_arm(rounds, last_arm=None):
    """B C C B B C ...: the arm with fewer rounds; on a tie stay on the last arm (no restart).

    ``rounds`` are the rounds used as evidence; ``last_arm`` the arm of the last round run when
    that one was set aside (its arm is then short of a round and measured again, without a restart)."""
    last_arm = last_arm or (rounds[-1]["arm"] if rounds else None)
    if not last_arm:
        return "baseline"
    counts = dict((arm, sum(1 for r in rounds if r["arm"] == arm)) for arm in ARMS)
    if counts["baseline"] != counts["candidate"]:
        return min(ARMS, key=lambda a: counts[a])
    return last_arm


def next_prompts(rounds, p):
    """Prompts of the next round: always round_prompts.  Equal rounds keep the drift estimate simple
    (every round weighs the same); growing rounds were tried and settled fewer near-threshold cases
    for the same requests (docs/verdict.md)."""
    return p["round_prompts"]


def _usage(rounds, p):
    restarts = sum(1 for a, b in zip(rounds, rounds[1:]) if a["arm"] != b["arm"])
    walls, switches = [], []
    for i, rnd in enumerate(rounds):
        changed = i > 0 and rounds[i - 1]["arm"] != rnd["arm"]
        if rnd["wall_s"] is not None:
            walls.append(rnd["wall_s"])
            switches.append((rnd.get("switch_s") or 0.0) if changed else 0.0)
        else:
            walls.append(sum(lvl["duration_s"] for lvl in rnd["levels"].values() if lvl)
                         + (p["restart_s"] if changed else 0.0))
            switches.append(p["restart_s"] if changed else 0.0)
    return {"rounds": len(rounds), "restarts": restarts, "last_arm": rounds[-1]["arm"] if rounds else None,
            "requests": sum(r["requests"] for r in rounds),
            "requests_by_arm": dict((arm, sum(r["requests"] for r in rounds if r["arm"] == arm)) for arm in ARMS),
            "wall_s": round(math.fsum(walls), 3), "switch_s": round(math.fsum(switches), 3)}


def restart_estimate(rounds, p):
    """Seconds the next switch between arms will cost: the mean of the switches measured so far on this
    host (``switch_s``: how long vLLM did not serve), ``restart_s`` before any was measured."""
    measured = [r["switch_s"] for r in rounds if r.get("switch_s") is not None]
    return math.fsum(measured) / len(measured) if measured else p["restart_s"]


def _budget_left(rounds, usage, p, levels):
    """None when one more round (at ``levels``) fits the budget, else the sentence saying what ran out."""
    arm = next_arm(rounds, usage["last_arm"])
    more_requests = next_prompts(rounds, p) * len(levels)
    # a request's share of the time spent measuring (the switches are planned apart)
    per_request = (usage["wall_s"] - usage["switch_s"]) / usage["requests"] if usage["requests"] else 0.0
    more_wall = per_request * more_requests + (restart_estimate(rounds, p)
                                               if usage["last_arm"] not in (None, arm) else 0.0)
    if p["final"]:
        return "final=true: no more rounds will be run"
    if usage["rounds"] >= p["max_rounds"]:
        return "the round budget is spent (%d of max_rounds %d)" % (usage["rounds"], p["max_rounds"])
    if usage["requests"] + more_requests > p["max_requests"]:
        return ("the request budget is spent (%d used, another round needs %d, max_requests %d)"
                % (usage["requests"], more_requests, p["max_requests"]))
    if usage["wall_s"] + more_wall > p["max_wall_s"]:
        return ("the time budget is spent (%.0f s used, another round needs about %.0f s, max_wall_s %.0f)"
                % (usage["wall_s"], more_wall, p["max_wall_s"]))
    return None


# --------------------------------------------------------------------------- main entry

def _result(decision, action, p, reasons, usage, estimates=None, rounds=None, flagged=None, open_names=(),
            rule=None, next_levels=None):
    out = {
        "decision": decision,
        "action": action,
        # the id of the rule that ended the verdict (verdict.failure_rate, ...), None for the plain keep/revert rule
        "rule": rule,
        "flagged": bool(flagged) if flagged is not None else decision in ("marginal", "inconclusive"),
        "next_round": None,
        "estimates": estimates or {},
        "open": list(open_names),
        "reasons": reasons,
        "advisories": [],
        "rounds_used": usage["rounds"],
        "requests_used": usage["requests"],
        "requests_by_arm": usage["requests_by_arm"],
        "restarts": usage["restarts"],
        "wall_s_used": usage["wall_s"],
        "set_aside": [],
        "metrics": {
            "c1_throughput_gain": None, "c1_tpot_drop": None, "c8_throughput_change": None,
            "acceptance_rate": None, "low_concurrency": p["low_concurrency"],
            "high_concurrency": max(high_levels(p)) if high_levels(p) else None,
            "regression_levels": high_levels(p),
        },
    }
    for key, est in (estimates or {}).items():
        out["metrics"][key] = round(est["point"], 6)
        for part in ("point", "low", "high", "round_drift"):
            est[part] = round(est[part], 6)
    if action == "measure_more":
        out["next_round"] = {"arm": next_arm(rounds, usage["last_arm"]), "num_prompts": next_prompts(rounds, p),
                             "levels": list(next_levels or [p["low_concurrency"]] + high_levels(p))}
    if rounds:
        rates = [r["acceptance"] for r in rounds if r["arm"] == "candidate" and r["acceptance"] is not None]
        if rates:
            acceptance = round(sorted(rates)[len(rates) // 2], 6)
            out["metrics"]["acceptance_rate"] = acceptance
            # Advice about a higher k only makes sense for a kept candidate.
            if action == "keep" and acceptance > p["acceptance_advisory"]:
                out["advisories"].append(
                    "Draft acceptance rate is %.2f (> %.2f): consider raising num_speculative_tokens and "
                    "benchmarking again (advisory only)." % (acceptance, p["acceptance_advisory"]))
    return out


def _continue_or_stop(rounds, usage, p, levels, reasons, estimates=None, open_names=(), unsettled=None,
                      next_levels=None):
    """Ask for another round (at ``next_levels``, default every level), or stop as inconclusive when the budget is
    spent (``unsettled``: the thresholds the interval still straddles, named in the conclusion: the report leads
    with it)."""
    next_levels = next_levels or levels
    spent = _budget_left(rounds, usage, p, next_levels)
    if spent is None:
        return _result("continue", "measure_more", p, reasons, usage, estimates, rounds, False, open_names,
                       next_levels=next_levels)
    reasons.append("Inconclusive: %s%s. Reverting as the conservative default (speculation stays off unless it "
                   "is shown to help); flagged for a human look."
                   % (spent, ", and the interval still straddles " + unsettled if unsettled else ""))
    return _result("inconclusive", "revert", p, reasons, usage, estimates, rounds, True, open_names,
                   rule="verdict.inconclusive")


# A level stops being measured only when its comparisons are settled with intervals this many times wider than the
# ones that decide. A comparison settled by one lucky look near its threshold is then measured on (and may open
# again) instead of being frozen while another level is still open: with the deciding intervals, slower candidates
# kept rose from 2 to 7 in 2,500 "typical" cases of tests/bench/decision_quality.py (c=8 just past the tolerance,
# kept once a lucky c=8 look met a frozen c=1), docs/verdict.md.
SKIP_Z_FACTOR = 1.5


def _open_levels(data, p, levels):
    """The levels the next round measures: every level, or (skip_settled_levels) those whose comparisons are not
    settled at SKIP_Z_FACTOR times the deciding intervals' width. A level counts as settled only once it was measured
    in min_rounds rounds (before that its interval rests on the drift prior)."""
    if not p["skip_settled_levels"]:
        return list(levels)
    seen = dict((c, sum(1 for r in data if r["levels"][c] is not None)) for c in levels)
    wide = dict(p, z=p["z"] * SKIP_Z_FACTOR,
                regression_z=(p["regression_z"] if p["regression_z"] is not None else p["z"]) * SKIP_Z_FACTOR)
    est = _estimates(data, levels, wide)
    tri = _tri_states(est, wide, levels)
    judged_open = any(tri[k] is None for k in ("gain_keep", "drop_keep", "gain_revert_ok"))
    still = [levels[0]] if judged_open or seen[levels[0]] < p["min_rounds"] else []
    tolerance = -p["c8_regression_tolerance"]
    for level, change in regression_estimates(est, levels):
        if _side(change, tolerance) is None or seen[level] < p["min_rounds"]:
            still.append(level)
    return still or list(levels)


def _budget_end_look(data, usage, p, levels, still, counts):
    """(decision, action, sentence) of the last look when the budget is spent with comparisons open, or None.

    Not with ``final`` (the caller's own last look keeps its intervals) or ``budget_end_z`` null, and not before
    min_rounds. The c=1 comparisons at ``budget_end_z`` standard errors, the regression check at the wider of its
    own width and ``z`` (a host that reached the budget's end has been looked at many times, and a late c=8 interval
    holds its truth less often than an early one): one action left -> that action (a keep only when it is
    believable, _implausible_keep); else None (inconclusive, as before)."""
    spent = _budget_left(data, usage, p, still)
    if spent is None or p["final"] or p["budget_end_z"] is None or len(data) < p["min_rounds"]:
        return None
    narrow = dict(p, z=p["budget_end_z"], regression_z=max(p["regression_z"] or p["z"], p["z"]))
    est = _estimates(data, levels, narrow)
    open_names, possible = possible_decisions(_tri_states(est, narrow, levels))
    actions = set(p["marginal_action"] if d == "marginal" else d for d in possible)
    if len(actions) != 1:
        return None
    action = actions.pop()
    decision = possible.pop() if len(possible) == 1 else "marginal"
    if action == "keep" and _implausible_keep(data, est, counts, p) is not None:
        return None
    width = ("%g standard errors" % p["budget_end_z"]) if p["budget_end_z"] else "their point estimates"
    outcome = "below the keep bar, %s (marginal_action)" % action if decision == "marginal" else action
    return decision, action, (
        "Budget's end (verdict.budget_end): %s; the last look judges the same rounds with intervals of %s: "
        "c=1 throughput %+.1f %% [%+.1f, %+.1f], TPOT %+.1f %% [%+.1f, %+.1f] -> %s (flagged for a human look)."
        % (spent, width, 100 * est["c1_throughput_gain"]["point"], 100 * est["c1_throughput_gain"]["low"],
           100 * est["c1_throughput_gain"]["high"], -100 * est["c1_tpot_drop"]["point"],
           -100 * est["c1_tpot_drop"]["high"], -100 * est["c1_tpot_drop"]["low"], outcome))


def _count_of(number, noun):
    """'1 restart', '3 restarts'."""
    return "%d %s%s" % (number, noun, "" if number == 1 else "s")


def _describe(est, p):
    out = ["Throughput at concurrency %d changed %s (interval %s to %s); keep needs at least +%s, below +%s "
           "reverts." % (p["low_concurrency"], _pct(est["c1_throughput_gain"]["point"]),
                         _pct(est["c1_throughput_gain"]["low"]), _pct(est["c1_throughput_gain"]["high"]),
                         _thr(p["keep_throughput_gain"]), _thr(p["revert_throughput_gain"])),
           # A negative drop is a slower TPOT: say "rose" rather than "dropped -62%".
           "TPOT p50 at concurrency %d %s %s (drop interval %s to %s); keep needs a drop of at least %s."
           % (p["low_concurrency"], "dropped" if est["c1_tpot_drop"]["point"] >= 0 else "rose",
              _pct(abs(est["c1_tpot_drop"]["point"])).lstrip("+"), _pct(est["c1_tpot_drop"]["low"]),
              _pct(est["c1_tpot_drop"]["high"]), _thr(p["keep_tpot_drop"]))]
    levels = [p["low_concurrency"]] + high_levels(p)
    if len(levels) == 1:
        out.append("No regression check: no level above concurrency %d was measured (high_concurrency is null)."
                   % p["low_concurrency"])
    for level, change in regression_estimates(est, levels):
        out.append("Throughput at concurrency %d changed %s (interval %s to %s); a drop beyond %s is a "
                   "regression, within it none." % (level, _pct(change["point"]), _pct(change["low"]),
                                                    _pct(change["high"]), _thr(p["c8_regression_tolerance"])))
    return out


def _failure_sentence(data, levels):
    """What failed requests cost each arm (failure_charges), or None when neither arm failed."""
    charges = dict((c, failure_charges(data, c)) for c in levels)
    parts = []
    for arm in ("candidate", "baseline"):
        info = charges[levels[0]][arm][2]
        if not info["failed"]:
            parts.append("the %s failed none of its %d" % (arm, info["requests"]))
            continue
        costs = ["%.1f%% at concurrency %d" % (100.0 * (1.0 - math.exp(-charges[c][arm][0])), c) for c in levels]
        parts.append("the %s failed %d of %d (%.1f%%), each charged %.1f s on average, which costs its "
                     "throughput %s" % (arm, info["failed"], info["requests"],
                                        100.0 * info["failed"] / info["requests"], info["held_ms"] / 1000.0,
                                        " and ".join(costs)))
    if all(charges[levels[0]][arm][2]["failed"] == 0 for arm in ARMS):
        return None
    return ("Failed requests cost the arm that failed them the time they held a stream (at least a typical "
            "request's), charged at the arm's failure rate over all its rounds and levels: %s." % "; ".join(parts))


def _open_sentence(open_names, p, est=None):
    levels = [p["low_concurrency"]] + high_levels(p)
    straddling = [str(level) for level, change in regression_estimates(est or {}, levels)
                  if _side(change, -p["c8_regression_tolerance"]) is None] or [str(c) for c in levels[1:]]
    args = {"gain_keep": (_thr(p["keep_throughput_gain"]), p["low_concurrency"]),
            "drop_keep": (_thr(p["keep_tpot_drop"]), p["low_concurrency"]),
            "gain_revert_ok": (_thr(p["revert_throughput_gain"]), p["low_concurrency"]),
            "c8_regressed": (", ".join(straddling), _thr(p["c8_regression_tolerance"]))}
    return ", ".join(LABELS[n] % args[n] for n in open_names)


def spec_decide(rounds, **params):
    """Decide from ``rounds`` (see the module docstring); bad parameters or data raise ValueError."""
    p = validate(params)
    everything, levels = _rounds_evidence(rounds or [], p)
    usage = _usage(everything, p)
    fails = _failures(everything)
    # From here on "data" is the evidence: the rounds measured under the reference's conditions.
    data, aside = _set_aside(everything, p)
    verdict = _decide(data, aside, usage, fails, levels, p)
    if verdict["action"] == "keep" and p["energy_regression_tolerance"] is not None:
        verdict = _energy_rule(verdict, rounds, p)
    bottleneck = _ttft_bottleneck(rounds, p)
    if bottleneck and verdict["action"] in ("keep", "revert"):
        verdict["advisories"] = list(verdict["advisories"]) + [bottleneck]
    verdict["set_aside"] = aside
    if aside:
        verdict["reasons"][:0] = _aside_sentences(aside)
    return verdict


# How far above the tokens a speculative step emits the measured single-stream speedup may be before it is
# doubted: a draft step costs something, so the speedup stays below the tokens per step; 25 % covers the noise
# of a few hundred requests and of the counters (a throttled baseline, not speculation, makes a 3x "gain").
PLAUSIBLE_SPEEDUP_SLACK = 1.25
# No config decodes faster than the board streams what a step reads. The bandwidth is a data-sheet number and
# the bytes an estimate from the plan, so a measured rate a third beyond the limit is wrong, not fast.
ROOFLINE_SLACK = 1.33


def _implausible_keep(data, est, counts, p):
    """Why a keep is not yet believable, or None. Two checks (issue 30 item 6):

    * at least two baseline rounds: the drift between the baseline's own rounds is what tells a board that
      slowed down (throttled, shared) from a candidate that helps; with one, that drift is only the prior;
    * the speedup is bounded by the tokens per step: TPOT can drop at most by the factor of tokens a step
      emits (vLLM's mean acceptance length), since a verify step costs at least a plain decode step."""
    # Not when the operator measures each arm once (rollout_repeat_on_noise: false, max_rounds 2 or 3) or this
    # is the last look (final): then the budget has no room for it and the check would only turn keeps into
    # inconclusive reverts.
    if counts["baseline"] < 2 and p["max_rounds"] >= 4 and not p["final"]:
        return ("verdict.one_baseline_round: the keep rests on one baseline round; a second one is measured before "
                "keeping, so the baseline's own drift is known")
    steps = sorted(r["tokens_per_step"] for r in data if r["arm"] == "candidate" and r.get("tokens_per_step"))
    tpot = est.get("c1_tpot_drop")
    if steps and tpot and tpot["point"] < 1.0:
        median = steps[len(steps) // 2]
        speedup = 1.0 / (1.0 - tpot["point"])
        if speedup > median * PLAUSIBLE_SPEEDUP_SLACK:
            return ("verdict.implausible_speedup: TPOT p50 fell %.0f %% (a %.2fx speedup), but the candidate's steps "
                    "emit %.2f tokens on average (vLLM's mean acceptance length), which bounds the speedup; the "
                    "baseline was likely measured slower than the board is (throttled, shared or cold), so more "
                    "rounds are measured" % (100 * tpot["point"], speedup, median))
    return _beyond_roofline(data)


def _beyond_roofline(data):
    """Why the candidate's measured decode rate is beyond the board's memory-bandwidth limit, or None."""
    lines = sorted((r["roofline"] for r in data if r.get("roofline")),
                   key=lambda line: line["achieved_fraction"])
    if not lines:
        return None
    line = lines[len(lines) // 2]
    if line["achieved_fraction"] <= ROOFLINE_SLACK:
        return None
    return ("verdict.beyond_roofline: the candidate decoded at %.0f %% of the board's memory-bandwidth limit (median "
            "of %d round(s): %.1f tok/s where %.2f tokens per step allow %.1f), and no config decodes faster than "
            "the board reads its weights; the measurement is wrong (outputs shorter than asked, answers from a "
            "cache, another board's bandwidth in the facts), so more rounds are measured"
            % (100 * line["achieved_fraction"], len(lines), line["achieved_fraction"] * line["limit_tok_s"],
               line["tokens_per_step"], line["limit_tok_s"]))


# The skill asks first whether TPOT is the bottleneck: speculation shortens the decode, not the prefill.
TTFT_BOTTLENECK_SHARE = 0.5


def _ttft_bottleneck(rounds, p):
    """An advisory when the baseline's own requests spend half their time or more before the first token
    (TTFT p50 over end-to-end latency p50 at the judged level, median over its rounds), else None."""
    shares = []
    for rnd in rounds or []:
        if rnd.get("arm") != "baseline":
            continue
        run = ev.find_run(rnd.get("result"), p["low_concurrency"])
        ttft, e2e = (run or {}).get("ttft_ms_p50"), (run or {}).get("e2e_latency_ms_p50")
        if isinstance(ttft, (int, float)) and isinstance(e2e, (int, float)) and e2e > 0:
            shares.append(float(ttft) / float(e2e))
    if not shares:
        return None
    share = sorted(shares)[len(shares) // 2]
    if share < TTFT_BOTTLENECK_SHARE:
        return None
    return ("TTFT is the bottleneck here, not TPOT: the baseline's requests spend %.0f %% of their time before the "
            "first token at concurrency %d. Speculative decoding shortens the decode only; prefix caching, shorter "
            "prompts or chunked prefill address the rest (advisory only)." % (100 * share, p["low_concurrency"]))


def _energy_rule(verdict, rounds, p):
    """The operator's opt-in energy rule on a keep: more joules per token than the tolerance reverts."""
    spent = energy.summary([{"phase": r.get("arm"), "result": r.get("result")} for r in rounds or []])
    reason = energy.check(spent, p["low_concurrency"], p["energy_regression_tolerance"])
    if reason is None:
        return verdict
    out = dict(verdict, decision="revert", action="revert", rule="verdict.energy", flagged=True, advisories=[])
    out["reasons"] = list(verdict["reasons"]) + ["Revert (verdict.energy): the time it saves costs more energy than "
                                                 "the operator allows; " + reason + "."]
    return out


def _decide(data, aside, usage, fails, levels, p):
    """spec_decide on the rounds used as evidence (``aside``: how many others ran)."""
    counts = dict((arm, sum(1 for r in data if r["arm"] == arm)) for arm in ARMS)

    bad, total = fails["candidate"]
    if total and bad > p["max_failed_ratio"] * total:
        return _result("revert", "revert", p, [
            "Revert (verdict.failed_ratio): the candidate failed %d of %d requests (%.1f%% > max_failed_ratio %s)."
            % (bad, total, 100.0 * bad / total, _thr(p["max_failed_ratio"]))], usage, None, data, True,
            rule="verdict.failed_ratio")
    bad, total = fails["candidate"]
    bad_b, total_b = fails["baseline"]
    if total and total_b and bad * total_b > bad_b * total:
        # Failures beyond the baseline's, beyond chance: a revert reason of its own.  Fast failures
        # barely move throughput per occupied second, and no user wants the errors.
        pvalue = fisher_greater(bad, total, bad_b, total_b)
        if pvalue < p["failure_alpha"]:
            sentence = ("Revert (verdict.failure_rate): the candidate failed %d of %d requests (%.1f%%) against the "
                        "baseline's %d of %d (%.1f%%), more than chance explains (one-sided Fisher exact test "
                        "p = %.2g < failure_alpha %g)." % (bad, total, 100.0 * bad / total, bad_b, total_b,
                                                           100.0 * bad_b / total_b, pvalue, p["failure_alpha"]))
            return _result("revert", "revert", p, [sentence], usage, None, data, True, rule="verdict.failure_rate")
    bad, total = fails["baseline"]
    if total and bad > p["max_failed_ratio"] * total:
        reasons = ["The baseline itself failed %d of %d requests (%.1f%% > max_failed_ratio %s); the host "
                   "needs attention before speculation can be judged." % (bad, total, 100.0 * bad / total,
                                                                          _thr(p["max_failed_ratio"]))]
        return _continue_or_stop(data, usage, p, levels, reasons)

    broken = _unusable(data, levels)
    if broken is not None:
        arm, sentence = broken
        if arm == "candidate":
            return _result("revert", "revert", p, [sentence + " The candidate is reverted."], usage, None, data, True)
        return _result("inconclusive", "revert", p, [
            sentence + " The baseline cannot be measured, so the candidate is reverted (flagged)."],
            usage, None, data, True)

    if not counts["baseline"] or not counts["candidate"]:
        missing = "baseline" if not counts["baseline"] else "candidate"
        return _continue_or_stop(data, usage, p, levels, ["No %s round yet." % missing])

    # Every level needs a round of each arm (the first rounds measure every level; a round set aside or a third
    # arm judged on the baseline's rounds may leave a level without one): measure every level again.
    missing = [(arm, c) for c in levels for arm in ARMS
               if not any(r["arm"] == arm and r["levels"][c] is not None for r in data)]
    if missing:
        return _continue_or_stop(data, usage, p, levels, ["No %s round at concurrency %d yet." % missing[0]])

    est = _estimates(data, levels, p)
    reasons = _describe(est, p)
    charged = _failure_sentence(data, levels)
    if charged:
        reasons.append(charged)
    tri = _tri_states(est, p, levels)
    open_names, possible = possible_decisions(tri)
    actions = set(p["marginal_action"] if d == "marginal" else d for d in possible)
    reasons.append("%d rounds (%d baseline, %d candidate%s), %d requests, %s; per-round drift about "
                   "%.1f%%; intervals are %g standard errors wide on each side."
                   % (usage["rounds"], counts["baseline"], counts["candidate"],
                      ", %d set aside" % len(aside) if aside else "", usage["requests"],
                      _count_of(usage["restarts"], "restart"), 100 * est["c1_throughput_gain"]["round_drift"], p["z"]))
    if len(actions) > 1:
        reasons.append("Not settled yet: the interval still straddles %s." % _open_sentence(open_names, p, est))
        still = _open_levels(data, p, levels)
        if still != levels:
            reasons.append("Settled at concurrency %s: the next rounds measure concurrency %s only."
                           % (", ".join(str(c) for c in levels if c not in still), ", ".join(str(c) for c in still)))
        last = _budget_end_look(data, usage, p, levels, still, counts)
        if last is not None:
            decision, action, sentence = last
            reasons.append(sentence)
            return _result(decision, action, p, reasons, usage, est, data, True, open_names, rule="verdict.budget_end")
        return _continue_or_stop(data, usage, p, levels, reasons, est, open_names,
                                 unsettled=_open_sentence(open_names, p, est), next_levels=still)
    if len(data) < p["min_rounds"] and not p["final"]:
        # Every interval rests on the drift between rounds; until one arm has been measured twice
        # that is only the prior, and a board that wanders 15 % between rounds would be judged on 3 %.
        looks_like = possible.pop() if len(possible) == 1 else "marginal"
        reasons.append("Looks like '%s', but %d rounds are needed before a decision (min_rounds), so the "
                       "drift between rounds is measured." % (looks_like, p["min_rounds"]))
        return _continue_or_stop(data, usage, p, levels, reasons, est, open_names)
    action = actions.pop()
    decision = possible.pop() if len(possible) == 1 else "marginal"
    rule = None
    if decision == "marginal" and action == "keep":
        # Only with marginal_action: keep, the operator's choice: the skill's keep bar was not shown.
        rule = "verdict.below_keep_bar"
        reasons.append("Kept below the keep bar (verdict.below_keep_bar): the skill keeps only when throughput "
                       "gains at least +%s and TPOT drops at least %s over the whole interval, which %s; kept "
                       "because marginal_action is keep (the operator's choice; the default reverts)."
                       % (_thr(p["keep_throughput_gain"]), _thr(p["keep_tpot_drop"]),
                          "was not settled for " + _open_sentence(open_names, p, est) if open_names
                          else "the interval shows it falls short of"))
    elif decision == "marginal":
        if open_names:
            reasons.append("Revert, below the keep bar: %s is not settled, but every outcome leads to the same "
                           "action '%s' (marginal_action), so no more rounds are needed."
                           % (_open_sentence(open_names, p, est), action))
        else:
            reasons.append("Revert, below the keep bar: between the revert and keep thresholds or short of the "
                           "TPOT target; action is '%s' (marginal_action)." % action)
    elif decision == "keep":
        doubt = _implausible_keep(data, est, counts, p)
        if doubt is not None:
            reasons.append(doubt)
            return _continue_or_stop(data, usage, p, levels, reasons, est, open_names,
                                     unsettled="whether the gain is real (%s)" % doubt.split(": ", 1)[0])
        reasons.append("Keep: every keep condition holds over the whole interval.")
    else:
        reasons.append("Revert: the interval shows a revert condition.")
    return _result(decision, action, p, reasons, usage, est, data, None, open_names, rule=rule)
