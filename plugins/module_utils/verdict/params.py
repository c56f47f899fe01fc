# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Parameters of the sequential verdict (spec_decide): defaults, ranges, refusals.

Every refusal names the parameter, the value and the allowed range, so a bad
playbook fails before any host changes.  Pure standard library.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import (
    ACCEPTANCE_FOR_HIGHER_K, HIGH_CONCURRENCY, KEEP_THROUGHPUT_GAIN, KEEP_TPOT_DROP, LOW_CONCURRENCY,
    REVERT_THROUGHPUT_GAIN,
)

DEFAULTS = {
    "keep_throughput_gain": KEEP_THROUGHPUT_GAIN,
    "keep_tpot_drop": KEEP_TPOT_DROP,
    "revert_throughput_gain": REVERT_THROUGHPUT_GAIN,
    # "No regression" at the higher levels is an equivalence within this tolerance: settled when the
    # interval's lower bound is above -tolerance, a regression when its upper bound is below it. At 0 a
    # truly unchanged c=8 (the common case) was never settled and good hosts ran out of budget.
    "c8_regression_tolerance": 0.05,
    # The skill keeps only when the keep bar is met: a marginal result (between the revert and keep
    # thresholds, or short of the TPOT drop) reverts unless the operator chooses keep, and while the
    # interval straddles the bar more rounds run (with keep, a +10 % gain was enough to stay).
    "marginal_action": "revert",
    "low_concurrency": LOW_CONCURRENCY,
    "high_concurrency": HIGH_CONCURRENCY,
    # Two-sided interval half-width in standard errors, used at every look;
    # the looks are bounded by max_rounds (see docs/verdict.md for the tuning).
    "z": 2.0,
    # Half-width of the regression check's intervals in standard errors. "No regression" within the
    # tolerance is an equivalence test: the standard one (two one-sided tests at 5 % each) uses the
    # 90 % interval, z = 1.645. Measured (tests/bench/decision_quality.py): a good candidate with a truly
    # unchanged c=8 kept in 99 % (clocks held) at 114 requests per arm and level, against 96 % at 141
    # with z = 2, and no truly slower c=8 kept either way. null: use z.
    "regression_z": 1.645,
    # Prior for the round-to-round drift (relative SD of one round's value)
    # before repeated rounds of one arm have measured it; worth
    # drift_prior_rounds rounds of evidence.
    "drift_prior": 0.03,
    "drift_prior_rounds": 2.0,
    # Per-request CV assumed for results without per-request data.
    "request_cv_prior": 0.3,
    "round_prompts": 30,
    # Rounds before any decision: B C C, so one arm has been measured twice and
    # the drift between rounds is measured, not only assumed (a board whose
    # clocks wander 15 % between rounds looked as steady as the prior at B C).
    "min_rounds": 3,
    "max_rounds": 40,
    "max_requests": 2400,
    "max_wall_s": 14400.0,
    "restart_s": 120.0,
    "max_failed_ratio": 0.1,
    # A candidate whose requests fail more often than the baseline's, beyond what chance explains
    # (one-sided Fisher exact test on the pooled counts at this level), is reverted on that alone.
    "failure_alpha": 0.01,
    # Off (None) unless the operator opts in: a candidate whose energy per output token at the judged
    # level is higher than the baseline's by more than this fraction is reverted (verdict/energy.py).
    "energy_regression_tolerance": None,
    "final": False,
    # A level whose comparisons are settled (each measured in at least min_rounds rounds) is not measured again
    # while another level is still open: a good c=1 candidate whose c=8 is about unchanged spends its further
    # rounds at c=8 only (docs/verdict.md, "Settled levels").
    "skip_settled_levels": True,
    # When the budget ends (rounds, requests or board time) with the interval still straddling a threshold, one
    # last look judges the same evidence with intervals this many standard errors wide (on each side; 0: the point
    # estimates) instead of reverting as inconclusive; still open at that width, the host is reverted as
    # inconclusive. The regression check (c=8) is not narrowed but judged at the deciding width z (its own 1.645 is
    # for a check at every look; narrowed too, 1-3 % of truly slower c=8 configs were kept in
    # tests/bench/decision_quality.py). null: no such look. docs/verdict.md, "The budget's end".
    "budget_end_z": 1.0,
    "acceptance_advisory": ACCEPTANCE_FOR_HIGHER_K,
    # Board conditions (a vllm_bench result's "conditions", jetson/conditions.py): a round whose held
    # GPU or memory clock sat more than this fraction below the reference round's, that saw a
    # throttle, another power mode or jetson_clocks switched, or (when set) a zone hotter than
    # condition_max_temp_c, is set aside and measured again.
    "condition_freq_drop": 0.05,
    "condition_max_temp_c": None,
    # The board's memory-bandwidth limit (record.run_verdict fills it from the facts and the plan's headroom):
    # {bandwidth_gbps, target_weight_bytes, draft_weight_bytes, kv_bytes_per_token, k}; a keep whose candidate
    # decodes well beyond it is not believed (_implausible_keep). None: not checked.
    "roofline": None,
}

# Parameters added after hosts were converged: at their default the rollout leaves them out of the settings it
# hashes (verdict/settings.py), so a converged host's config hash stays what it was and an upgrade does not judge
# every host again; set otherwise they are part of it.
HASH_NEUTRAL_DEFAULTS = ("skip_settled_levels", "budget_end_z")

# name -> (low, high, low inclusive): the ranges that make sense.
FRACTIONS = {
    "keep_throughput_gain": (0.0, 10.0, True),
    "keep_tpot_drop": (0.0, 1.0, True),
    "revert_throughput_gain": (-1.0, 10.0, False),
    "c8_regression_tolerance": (0.0, 1.0, True),
    "z": (0.5, 6.0, True),
    "drift_prior": (0.0, 0.5, True),
    "drift_prior_rounds": (0.0, 100.0, True),
    "request_cv_prior": (0.01, 3.0, True),
    "max_wall_s": (0.0, 7 * 86400.0, False),
    "restart_s": (0.0, 86400.0, True),
    "max_failed_ratio": (0.0, 1.0, True),
    "failure_alpha": (0.0, 0.5, False),
    "acceptance_advisory": (0.0, 1.0, True),
    "condition_freq_drop": (0.0, 1.0, True),
}
INTEGERS = {
    "round_prompts": (5, 100000),
    "min_rounds": (2, 100),
    "max_rounds": (2, 100),
    "max_requests": (10, 10 ** 7),
}

TRUE_WORDS = ("true", "yes", "on", "1", "y")
FALSE_WORDS = ("false", "no", "off", "0", "n", "")


def to_bool(value, name):
    """Ansible-style boolean: the string 'false' is False (bool('false') is True)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    raise ValueError("spec_decide: %s must be a boolean (true/false), got %r" % (name, value))


def _float(name, value):
    if isinstance(value, bool):
        value = None
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = float("nan")
    low, high, inclusive = FRACTIONS[name]
    bad = math.isnan(out) or out > high or out < low or (out == low and not inclusive)
    if bad:
        raise ValueError("spec_decide: %s must be a number %s %g and <= %g, got %r; the default is %r"
                         % (name, ">=" if inclusive else ">", low, high, value, DEFAULTS[name]))
    return out


def _int(name, value):
    low, high = INTEGERS[name]
    try:
        out = int(value) if not isinstance(value, bool) and float(value) == int(float(value)) else None
    except (TypeError, ValueError):
        out = None
    if out is None or not low <= out <= high:
        raise ValueError("spec_decide: %s must be an integer from %d to %d, got %r; the default is %r"
                         % (name, low, high, value, DEFAULTS[name]))
    return out


ROOFLINE_KEYS = ("bandwidth_gbps", "target_weight_bytes", "draft_weight_bytes", "kv_bytes_per_token", "k")


def _roofline(value):
    """The roofline inputs, checked: positive bandwidth and target bytes, non-negative draft, KV and k."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - set(ROOFLINE_KEYS):
        raise ValueError("spec_decide: roofline must be null or a dict with %s, got %r" % (", ".join(ROOFLINE_KEYS), value))
    out = {}
    for key in ROOFLINE_KEYS:
        number = value.get(key) or 0
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) \
                or number < 0 or (key in ("bandwidth_gbps", "target_weight_bytes") and number <= 0):
            raise ValueError("spec_decide: roofline.%s must be a %s number, got %r"
                             % (key, "positive" if key in ("bandwidth_gbps", "target_weight_bytes") else "non-negative",
                                value.get(key)))
        out[key] = number
    return out


def validate(params):
    """Merge ``params`` over DEFAULTS and check each; raise ValueError naming the parameter."""
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError("spec_decide: unknown parameter(s) %s; valid ones are %s"
                         % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    p = dict(DEFAULTS)
    # null means "the default" except where null is a setting of its own (no high level; no last look)
    p.update((k, v) for k, v in params.items() if v is not None or k in ("high_concurrency", "budget_end_z"))
    for name in FRACTIONS:
        p[name] = _float(name, p[name])
    for name in INTEGERS:
        p[name] = _int(name, p[name])
    p["final"] = to_bool(p["final"], "final")
    p["skip_settled_levels"] = to_bool(p["skip_settled_levels"], "skip_settled_levels")
    # Optional numbers: null means "not used" (z instead, off, no limit); otherwise a number in a range.
    _optional_number(p, "regression_z", 0.5, 6.0, "null (use z) or a number from 0.5 to 6")
    _optional_number(p, "budget_end_z", 0.0, 6.0, "null (no last look) or a number from 0 to 6")
    _optional_number(p, "energy_regression_tolerance", 0.0, 10.0, "null (off) or a fraction from 0 to 10 (0.05 = 5 %)")
    _optional_number(p, "condition_max_temp_c", 20.0, 150.0, "null (no limit) or degrees C from 20 to 150")
    p["roofline"] = _roofline(p["roofline"])
    if p["min_rounds"] > p["max_rounds"]:
        raise ValueError("spec_decide: min_rounds (%d) must not exceed max_rounds (%d)" % (p["min_rounds"], p["max_rounds"]))
    if p["revert_throughput_gain"] > p["keep_throughput_gain"]:
        raise ValueError("spec_decide: revert_throughput_gain (%r) must not exceed keep_throughput_gain (%r); "
                         "lower revert_throughput_gain" % (p["revert_throughput_gain"], p["keep_throughput_gain"]))
    if p["marginal_action"] not in ("keep", "revert"):
        raise ValueError("spec_decide: marginal_action must be 'keep' or 'revert', got %r" % (p["marginal_action"],))
    value = p["low_concurrency"]
    if not _level_ok(value):
        raise ValueError("spec_decide: low_concurrency must be a positive integer (a benchmarked concurrency level), "
                         "got %r" % (value,))
    p["low_concurrency"] = int(value)
    p["high_concurrency"] = _high_levels(p["high_concurrency"], p["low_concurrency"])
    return p


def _optional_number(p, name, low, high, what):
    """Check p[name]: None stays None, else a number from low to high (a bool is not one), as a float."""
    value = p[name]
    if value is None:
        return
    try:
        ok = not isinstance(value, bool) and low <= float(value) <= high
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError("spec_decide: %s must be %s, got %r" % (name, what, value))
    p[name] = float(value)


def _level_ok(value):
    try:
        return not isinstance(value, bool) and int(value) == float(value) and int(value) >= 1
    except (TypeError, ValueError):
        return False


def _high_levels(value, low):
    """high_concurrency checked: None (no regression check), one level, or a list of levels (every one
    is checked; the rollout passes every measured level above the judged one, docs/verdict.md)."""
    if value is None:
        return None  # the caller chose not to check a high-concurrency level
    many = isinstance(value, (list, tuple))
    items = list(value) if many else [value]
    if not items or not all(_level_ok(v) for v in items):
        raise ValueError("spec_decide: high_concurrency must be a positive integer (a benchmarked concurrency level), "
                         "a list of them, or null, got %r" % (value,))
    levels = sorted(set(int(v) for v in items))
    if low in levels:
        raise ValueError("spec_decide: high_concurrency must differ from low_concurrency; "
                         "set high_concurrency=null to skip the regression check")
    return levels if len(levels) > 1 else levels[0]


def high_levels(p):
    """The regression-check levels of validated params, as a list (empty: no check)."""
    value = p["high_concurrency"]
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]
