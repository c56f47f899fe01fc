# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Keep / revert verdict for one host's speculative-decoding candidate (stdlib only).

The rule comes from the jetson-speculative-decoding skill:

* keep    when, at the low concurrency (1), throughput rises >= 30 % AND TPOT p50
          drops >= 20 %, AND throughput at the high concurrency (8) does not regress;
* revert  when the low-concurrency throughput gain is < 10 % OR the high
          concurrency regresses;
* otherwise ``marginal`` (default action: keep, flagged).

Noise: each comparison is a difference of two measurements, so its noise is
``z * cv * sqrt(2)`` (the "band").  A measured value inside the band around a
threshold could land on the other side if measured again.  When such an
ambiguous comparison would change the decision we answer ``repeat`` instead of
guessing; on the repeated (``final``) measurement we decide on the medians and
say so.  A high-concurrency drop that is not larger than the band is not a
regression (that is measurement jitter, not a cost of speculation).

Everything here is pure: no I/O, no Ansible imports, Python 3.8+.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import itertools
import math

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.params import to_bool
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.evidence import find_run
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.params import DEFAULTS as DECIDE_DEFAULTS

# The thresholds are the sequential verdict's (one home: verdict/params.py, from common/policy.py);
# the noise band and the repeat round are this superseded verdict's own.
DEFAULTS = dict((key, DECIDE_DEFAULTS[key]) for key in (
    "keep_throughput_gain", "keep_tpot_drop", "revert_throughput_gain", "c8_regression_tolerance",
    "marginal_action", "low_concurrency", "high_concurrency", "acceptance_advisory"))
DEFAULTS.update(noise_cv=0.03, z=2.0, final=False)
# The superseded verdict keeps its own defaults for the two the sequential one changed (#31, #30): its
# point-estimate rule has no equivalence margin and no budget to settle a keep bar with.
DEFAULTS.update(c8_regression_tolerance=0.0, marginal_action="keep")

DECISIONS = ("keep", "revert", "marginal", "repeat")


# --------------------------------------------------------------------------- helpers

def median(values):
    """Median of the non-None numbers in ``values``; None when there are none."""
    data = sorted(v for v in values if v is not None)
    if not data:
        return None
    mid = len(data) // 2
    if len(data) % 2:
        return float(data[mid])
    return (data[mid - 1] + data[mid]) / 2.0


def sample_cv(values):
    """Sample coefficient of variation (ddof=1); None with < 2 values or mean 0."""
    data = [float(v) for v in values if v is not None]
    if len(data) < 2:
        return None
    m = math.fsum(data) / len(data)
    if m == 0:
        return None
    var = math.fsum((v - m) ** 2 for v in data) / (len(data) - 1)
    return math.sqrt(var) / abs(m)


def _num(value):
    """Float or None; bools and junk are not numbers."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(out) or math.isinf(out):
        return None
    return out


def as_repeats(bench):
    """A bench result or a list of repeats -> list of bench dicts (Nones dropped)."""
    if bench is None:
        return []
    if isinstance(bench, dict):
        return [bench]
    if isinstance(bench, (list, tuple)):
        return [b for b in bench if isinstance(b, dict)]
    return []


def pool_level(bench, concurrency):
    """Pool one concurrency level over repeats.

    Returns a dict with the median ``throughput_tok_s`` and ``tpot_ms_p50``,
    their run-to-run CVs (None with a single repeat), summed ``completed`` and
    ``failed`` counts and ``repeats``; None when no repeat has this level.
    """
    runs = [r for r in (find_run(b, concurrency) for b in as_repeats(bench)) if r is not None]
    if not runs:
        return None
    thr = [_num(r.get("throughput_tok_s")) for r in runs]
    tpot = [_num(r.get("tpot_ms_p50")) for r in runs]
    for name, values in (("throughput_tok_s", thr), ("tpot_ms_p50", tpot)):
        if any(v is not None and v < 0 for v in values):
            raise ValueError("spec_verdict: %s at concurrency %d is negative (%r); a benchmark cannot measure "
                             "that, check where the result came from" % (name, int(concurrency), values))
    return {
        "concurrency": int(concurrency),
        "repeats": len(runs),
        "throughput_tok_s": median(thr),
        "tpot_ms_p50": median(tpot),
        "throughput_cv": sample_cv(thr),
        "tpot_cv": sample_cv(tpot),
        "completed": int(sum(_num(r.get("completed")) or 0 for r in runs)),
        "failed": int(sum(_num(r.get("failed")) or 0 for r in runs)),
    }


def pooled_acceptance(bench):
    """Median spec-decode acceptance rate over repeats, or None."""
    rates = []
    for b in as_repeats(bench):
        sd = b.get("spec_decode")
        if isinstance(sd, dict):
            rates.append(_num(sd.get("acceptance_rate")))
    return median(rates)


def _pct(fraction):
    return "%.1f%%" % (fraction * 100.0)


def _thr_pct(fraction):
    # thresholds are usually round: print "30%", not "30.0%"
    return "%g%%" % round(fraction * 100.0, 2)


def _fmt(value):
    return "%.1f" % value


# --------------------------------------------------------------------------- validation

def validate_params(params):
    """Merge ``params`` over DEFAULTS and check them; raise ValueError naming rule and fix."""
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError("spec_verdict: unknown parameter(s) %s; valid ones are %s"
                         % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    p = dict(DEFAULTS)
    p.update({k: v for k, v in params.items() if v is not None or k == "high_concurrency"})
    for key in ("keep_throughput_gain", "keep_tpot_drop", "revert_throughput_gain",
                "c8_regression_tolerance", "noise_cv", "z", "acceptance_advisory"):
        val = _num(p[key])
        if val is None or val < 0:
            raise ValueError("spec_verdict: %s must be a non-negative number, got %r; "
                             "pass e.g. %s=%r" % (key, p[key], key, DEFAULTS[key]))
        p[key] = val
    if p["keep_tpot_drop"] >= 1:
        raise ValueError("spec_verdict: keep_tpot_drop is a fraction below 1 (0.20 = 20%%), got %r"
                         % (p["keep_tpot_drop"],))
    if p["revert_throughput_gain"] > p["keep_throughput_gain"]:
        raise ValueError("spec_verdict: revert_throughput_gain (%r) must not exceed keep_throughput_gain "
                         "(%r); otherwise no result can be marginal. Lower revert_throughput_gain."
                         % (p["revert_throughput_gain"], p["keep_throughput_gain"]))
    if p["marginal_action"] not in ("keep", "revert"):
        raise ValueError("spec_verdict: marginal_action must be 'keep' or 'revert', got %r"
                         % (p["marginal_action"],))
    for key in ("low_concurrency", "high_concurrency"):
        if key == "high_concurrency" and p[key] is None:
            continue  # the caller chose not to check a high-concurrency level
        try:
            p[key] = int(p[key])
        except (TypeError, ValueError):
            p[key] = 0
        if p[key] < 1:
            raise ValueError("spec_verdict: %s must be a positive integer (a benchmarked "
                             "concurrency level), got %r" % (key, params.get(key)))
    if p["high_concurrency"] is not None and p["high_concurrency"] == p["low_concurrency"]:
        raise ValueError("spec_verdict: high_concurrency must differ from low_concurrency; "
                         "set high_concurrency=null to skip the regression check")
    # bool("false") is True: read strings as Ansible does
    try:
        p["final"] = to_bool(p["final"], "final")
    except ValueError as exc:
        raise ValueError(str(exc).replace("spec_decide", "spec_verdict"))
    # a CV of 3 instead of 0.03 would widen the band past every threshold and
    # silently disable the checks
    for key, high in (("noise_cv", 0.5), ("z", 6.0)):
        if p[key] > high:
            raise ValueError("spec_verdict: %s must be at most %g, got %r (0.03 means 3%%)" % (key, high, p[key]))
    return p


# --------------------------------------------------------------------------- comparisons

def _above(value, threshold, band):
    """Tri-state ``value >= threshold``: True/False when clear, None inside the band."""
    if value >= threshold + band:
        return True
    if value < threshold - band:
        return False
    return None


def _regressed(change, tolerance, band):
    """Tri-state "high concurrency regressed".

    A drop no larger than ``tolerance`` is accepted outright; a drop past the
    tolerance but within the noise band is ambiguous (None); only a drop beyond
    tolerance + band is a clear regression.
    """
    if change >= -tolerance:
        return False
    if change < -(tolerance + band):
        return True
    return None


def _decide(gain_keep, drop_keep, gain_revert_ok, c8_regressed):
    """Decision from resolved booleans (gain_revert_ok: gain >= revert threshold)."""
    if c8_regressed or not gain_revert_ok:
        return "revert"
    if gain_keep and drop_keep:
        return "keep"
    return "marginal"


def _possible_decisions(tri):
    """All decisions reachable by resolving the ambiguous (None) comparisons."""
    names = [k for k in ("gain_keep", "drop_keep", "gain_revert_ok", "c8_regressed") if tri[k] is None]
    found = set()
    for combo in itertools.product((True, False), repeat=len(names)):
        vals = dict(tri)
        vals.update(zip(names, combo))
        # one gain cannot be >= 30% and < 10% at once
        if vals["gain_keep"] and not vals["gain_revert_ok"]:
            continue
        found.add(_decide(vals["gain_keep"], vals["drop_keep"], vals["gain_revert_ok"], vals["c8_regressed"]))
    return names, found


def _decisive(tri, names):
    """Ambiguous comparisons whose resolution alone changes the decision."""
    out = []
    for name in names:
        outcomes = set()
        for val in (True, False):
            sub = dict(tri)
            sub[name] = val
            _n, dec = _possible_decisions(sub)
            outcomes.add(frozenset(dec))
        if len(outcomes) > 1:
            out.append(name)
    return out or names


# --------------------------------------------------------------------------- main entry

def _revert(reasons, metrics, p, advisories=None):
    return {
        "decision": "revert",
        "action": "revert",
        "flagged": False,
        "final": p["final"],
        "ambiguous": [],
        "reasons": reasons,
        "advisories": advisories or [],
        "metrics": metrics,
    }


def _level_problem(arm, level, c):
    if level is None:
        return "The %s benchmark has no run at concurrency %d, so the rule cannot be checked." % (arm, c)
    if level["failed"] > 0:
        return ("%d request(s) failed in the %s benchmark at concurrency %d; a failing arm cannot be judged."
                % (level["failed"], arm, c))
    if not level["throughput_tok_s"]:
        return "The %s benchmark reports zero or missing throughput at concurrency %d." % (arm, c)
    return None


def spec_verdict(baseline, candidate, **params):
    """Judge ``candidate`` against ``baseline`` (each a bench result or a list of repeats).

    Returns ``{decision, action, flagged, final, ambiguous, reasons, advisories, metrics}``.
    Unusable bench data gives ``revert`` with a reason; bad parameters raise ValueError.
    """
    p = validate_params(params)
    lo, hi = p["low_concurrency"], p["high_concurrency"]
    metrics = {
        "c1_throughput_gain": None,
        "c1_tpot_drop": None,
        "c8_throughput_change": None,
        "acceptance_rate": pooled_acceptance(candidate),
        "noise_band": None,
        "noise_cv": None,
        "low_concurrency": lo,
        "high_concurrency": hi,
    }

    levels = {}
    problems = []
    for arm, bench in (("baseline", baseline), ("candidate", candidate)):
        if not as_repeats(bench):
            problems.append("The %s benchmark result is missing." % arm)
            continue
        for c in [lo] + ([hi] if hi is not None else []):
            levels[(arm, c)] = pool_level(bench, c)
            problem = _level_problem(arm, levels[(arm, c)], c)
            if problem:
                problems.append(problem)
    if problems:
        return _revert(problems + ["Reverting because speculation could not be shown to help."], metrics, p)

    b_lo, c_lo = levels[("baseline", lo)], levels[("candidate", lo)]
    if not b_lo["tpot_ms_p50"] or not c_lo["tpot_ms_p50"]:
        return _revert(["TPOT p50 at concurrency %d is missing or zero, so the TPOT rule cannot be checked." % lo,
                        "Reverting because speculation could not be shown to help."], metrics, p)

    # Noise: the caller's CV, raised to what the repeats themselves show.
    observed = [x for lvl in levels.values() for x in (lvl["throughput_cv"], lvl["tpot_cv"]) if x is not None]
    cv = max([p["noise_cv"]] + observed)
    band = p["z"] * cv * math.sqrt(2.0)
    metrics["noise_cv"] = round(cv, 6)
    metrics["noise_band"] = round(band, 6)

    gain = c_lo["throughput_tok_s"] / b_lo["throughput_tok_s"] - 1.0
    drop = 1.0 - c_lo["tpot_ms_p50"] / b_lo["tpot_ms_p50"]
    metrics["c1_throughput_gain"] = round(gain, 6)
    metrics["c1_tpot_drop"] = round(drop, 6)
    c8 = None
    if hi is not None:
        b_hi, c_hi = levels[("baseline", hi)], levels[("candidate", hi)]
        c8 = c_hi["throughput_tok_s"] / b_hi["throughput_tok_s"] - 1.0
        metrics["c8_throughput_change"] = round(c8, 6)

    tri = {
        "gain_keep": _above(gain, p["keep_throughput_gain"], band),
        "drop_keep": _above(drop, p["keep_tpot_drop"], band),
        "gain_revert_ok": _above(gain, p["revert_throughput_gain"], band),
        "c8_regressed": False if c8 is None else _regressed(c8, p["c8_regression_tolerance"], band),
    }
    names, possible = _possible_decisions(tri)

    reasons = _describe(p, band, gain, drop, c8, b_lo, c_lo,
                        levels.get(("baseline", hi)), levels.get(("candidate", hi)))
    advisories = _advisories(p, metrics["acceptance_rate"])

    if len(possible) > 1 and not p["final"]:
        decisive = _decisive(tri, names)
        reasons.append("Within the noise band (±%s) of %s; the verdict could flip if measured again, "
                       "so repeat the benchmark and decide with final=true."
                       % (_pct(band), ", ".join(_LABELS[n] for n in decisive)))
        return {"decision": "repeat", "action": "repeat", "flagged": True, "final": False,
                "ambiguous": decisive, "reasons": reasons, "advisories": advisories, "metrics": metrics}

    ambiguous = list(names)
    resolved = dict(tri)
    for name in ambiguous:
        if name == "c8_regressed":
            resolved[name] = False  # a drop within the noise is not a regression
        else:
            resolved[name] = {"gain_keep": gain >= p["keep_throughput_gain"],
                              "drop_keep": drop >= p["keep_tpot_drop"],
                              "gain_revert_ok": gain >= p["revert_throughput_gain"]}[name]
    decision = _decide(resolved["gain_keep"], resolved["drop_keep"], resolved["gain_revert_ok"],
                       resolved["c8_regressed"])
    if ambiguous and len(possible) > 1:
        reasons.append("The result was within noise (band ±%s) for %s even on the repeated measurement; "
                       "decided on the median numbers." % (_pct(band), ", ".join(_LABELS[n] for n in ambiguous)))

    if decision == "marginal":
        action = p["marginal_action"]
        reasons.append("Marginal result: between the %s revert and %s keep throughput thresholds or short "
                       "of the TPOT target; action is '%s' (marginal_action)."
                       % (_thr_pct(p["revert_throughput_gain"]), _thr_pct(p["keep_throughput_gain"]), action))
    else:
        action = decision
    if action != "keep":
        advisories = []  # raising k is advice for a candidate that stays, not for a reverted one
    return {"decision": decision, "action": action, "flagged": decision == "marginal", "final": p["final"],
            "ambiguous": ambiguous if len(possible) > 1 else [], "reasons": reasons,
            "advisories": advisories, "metrics": metrics}


_LABELS = {
    "gain_keep": "the throughput keep threshold",
    "drop_keep": "the TPOT keep threshold",
    "gain_revert_ok": "the throughput revert threshold",
    "c8_regressed": "the high-concurrency regression check",
}


def _describe(p, band, gain, drop, c8, b_lo, c_lo, b_hi, c_hi):
    lo = p["low_concurrency"]
    reasons = []
    verb = "rose" if gain >= 0 else "fell"
    if gain >= p["keep_throughput_gain"]:
        where = "above the %s keep threshold" % _thr_pct(p["keep_throughput_gain"])
    elif gain >= p["revert_throughput_gain"]:
        where = "between the %s revert and %s keep thresholds" % (
            _thr_pct(p["revert_throughput_gain"]), _thr_pct(p["keep_throughput_gain"]))
    else:
        where = "below the %s revert threshold" % _thr_pct(p["revert_throughput_gain"])
    reasons.append("Throughput at concurrency %d %s %s (%s → %s tok/s), %s."
                   % (lo, verb, _pct(abs(gain)), _fmt(b_lo["throughput_tok_s"]), _fmt(c_lo["throughput_tok_s"]), where))
    verb = "dropped" if drop >= 0 else "rose"
    where = "meeting" if drop >= p["keep_tpot_drop"] else "short of"
    reasons.append("TPOT p50 at concurrency %d %s %s (%s → %s ms), %s the %s keep target."
                   % (lo, verb, _pct(abs(drop)), _fmt(b_lo["tpot_ms_p50"]), _fmt(c_lo["tpot_ms_p50"]),
                      where, _thr_pct(p["keep_tpot_drop"])))
    if c8 is None:
        reasons.append("No high-concurrency check was requested (high_concurrency is null).")
    else:
        hi = p["high_concurrency"]
        tol = p["c8_regression_tolerance"]
        if c8 >= -tol:
            verdict = "no regression"
        elif c8 < -(tol + band):
            verdict = "a regression beyond the noise band (±%s)" % _pct(band)
        else:
            verdict = "a drop within the noise band (±%s)" % _pct(band)
        reasons.append("Throughput at concurrency %d changed %+.1f%% (%s → %s tok/s): %s."
                       % (hi, c8 * 100.0, _fmt(b_hi["throughput_tok_s"]), _fmt(c_hi["throughput_tok_s"]), verdict))
    return reasons


def _advisories(p, acceptance):
    if acceptance is not None and acceptance > p["acceptance_advisory"]:
        return ["Draft acceptance rate is %.2f (> %.2f): consider raising num_speculative_tokens "
                "and benchmarking again (advisory only)." % (acceptance, p["acceptance_advisory"])]
    return []
