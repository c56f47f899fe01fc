# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The rollout's benchmark and verdict settings, checked once before any host changes (``rollout_settings``).

The rollout's read-only check runs it (filter jetson.specdec.rollout_settings); the benchmark and the verdict
then take the checked settings. It stands on the benchmark's and the verdict's own rules, so this check and the
later steps never disagree. Pure standard library, Python 3.8+.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

from ansible_collections.jetson.specdec.plugins.module_utils.bench.equivalence import check_settings as check_equivalence
from ansible_collections.jetson.specdec.plugins.module_utils.bench.prompts import output_len_bounds
from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import HIGH_CONCURRENCY, SKILL_LOW_CONCURRENCY
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.params import DEFAULTS, HASH_NEUTRAL_DEFAULTS, validate
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.ttft import validate as validate_ttft


class SettingsError(ValueError):
    """A rollout setting that cannot work: the message names the variable and the fix."""


def _number(name, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise SettingsError("%s must be a number, got %r." % (name, value))


# The rollout variable behind each spec_decide parameter (a refusal names the variable to fix).
VERDICT_VARIABLES = {
    "keep_throughput_gain": "rollout_keep_throughput_gain", "keep_tpot_drop": "rollout_keep_tpot_drop",
    "revert_throughput_gain": "rollout_revert_throughput_gain",
    "c8_regression_tolerance": "rollout_c8_regression_tolerance", "marginal_action": "rollout_marginal_action",
    "energy_regression_tolerance": "rollout_energy_regression_tolerance",
    "z": "rollout_noise_z", "drift_prior": "rollout_noise_cv", "round_prompts": "rollout_bench_num_prompts",
    "max_failed_ratio": "rollout_bench_max_failed_ratio", "min_rounds": "rollout_verdict_min_rounds",
    "max_rounds": "rollout_verdict_max_rounds", "max_wall_s": "rollout_verdict_max_wall_s",
    "restart_s": "rollout_verdict_restart_s", "condition_freq_drop": "rollout_verdict_clock_drop",
    "condition_max_temp_c": "rollout_verdict_max_temp_c", "skip_settled_levels": "rollout_verdict_skip_settled_levels",
    "budget_end_z": "rollout_verdict_budget_end_z",
}


def judged_levels(levels, expected):
    """(levels to benchmark, the judged level, the regression-check levels): the rule, once.

    * The keep rule is judged at the lowest benchmarked level, or at the operator's expected
      concurrency when that is above the skill's low-concurrency range (1-2, SKILL_LOW_CONCURRENCY)
      and above the lowest level; an expected concurrency above the lowest level is benchmarked
      either way (expected 2 is measured and checked for a regression, the rule judged at 1).
    * The regression check covers every benchmarked level above the judged one. When none is above
      it (levels [1], or an expected concurrency at or above the highest level), one is added: the
      skill's 8 when that is above, else the next power of two above the judged level.
    """
    levels = sorted(set(levels))
    lowest = levels[0]
    if expected > lowest:
        levels = sorted(set(levels + [expected]))
    judge = expected if expected > max(lowest, SKILL_LOW_CONCURRENCY) else lowest
    above = [level for level in levels if level > judge]
    if not above:
        extra = HIGH_CONCURRENCY if HIGH_CONCURRENCY > judge else 2 ** int(math.floor(math.log(judge, 2)) + 1)
        levels = sorted(set(levels + [extra]))
        above = [extra]
    return levels, judge, above


def rollout_settings(bench, verdict, ttft=None):
    """The rollout's benchmark and verdict settings, checked before any host changes.

    ``bench``: output_len, output_range_ratio, concurrency (list), expected_concurrency (the plan's:
    above the lowest level it is measured too and is the level the keep rule judges), hold_clocks
    (rollout_bench_hold_clocks). ``verdict``: the
    rollout_* settings by their spec_decide names; ``ttft``: rollout_ttft_tolerance and
    rollout_ttft_action as {tolerance, action}. Returns ``{"verdict": params, "ttft": ..., "levels": [...]}``
    (every spec_decide parameter, checked; low/high concurrency from the benchmark's levels; the levels
    to benchmark) or
    raises SettingsError naming the variable and the fix: the benchmark's and the
    verdict's own rules, so this check and the later steps never disagree.
    """
    levels = bench.get("concurrency")
    if not isinstance(levels, list) or not levels:
        raise SettingsError("rollout_bench_concurrency must be a non-empty list of concurrency levels, got %r."
                            % (levels,))
    try:
        levels = sorted(set(int(level) for level in levels))
        if any(level < 1 for level in levels):
            raise ValueError("rollout_bench_concurrency levels must be >= 1, got %r." % (levels,))
        levels, judge, above = judged_levels(levels, int(bench.get("expected_concurrency") or 1))
        ratio = _number("rollout_bench_output_range_ratio", bench.get("output_range_ratio"))
        output_len_bounds(int(bench.get("output_len")), ratio)
    except (TypeError, ValueError) as exc:
        raise SettingsError("rollout_bench_%s" % exc if str(exc).startswith("output_range_ratio") else str(exc))
    params = dict(verdict, low_concurrency=judge, high_concurrency=above if len(above) > 1 else above[0])
    try:
        params = validate(params)
    except ValueError as exc:
        text = " %s " % exc
        named = sorted((text.find(" %s " % key), var) for key, var in VERDICT_VARIABLES.items() if " %s " % key in text)
        raise SettingsError("%s (set by %s)" % (exc, named[0][1] if named else "the matching rollout_* variable"))
    # what the config hash reads: a newer parameter at its default is left out (spec_decide fills it in again)
    params = dict((key, value) for key, value in params.items()
                  if not (key in HASH_NEUTRAL_DEFAULTS and value == DEFAULTS[key]))
    try:
        guard = validate_ttft(ttft or {})
        # the equivalence check's settings (bench/equivalence.py): their rule ids name the variables
        equivalence = check_equivalence(bench.get("equivalence"))
    except ValueError as exc:
        raise SettingsError(str(exc))
    third = bench.get("third_arm") or {}
    if not isinstance(third, dict) or not isinstance(third.get("enabled", True), bool):
        raise SettingsError("rollout_third_arm must be a boolean (true tries the batch-size schedule as a third "
                            "arm where vLLM supports it, false never does), got %r." % (third.get("enabled"),))
    if not isinstance(third.get("measure_between", True), bool):
        raise SettingsError("rollout_third_arm_measure_between must be a boolean (true measures both arms once at the "
                            "levels between the judged and the regressing one before the threshold is chosen, false "
                            "takes the threshold from the measured levels only), got %r." % (third.get("measure_between"),))
    return {"verdict": params, "ttft": guard, "levels": levels, "hold_clocks": bool(bench.get("hold_clocks", False)),
            "equivalence": equivalence,
            # the third arm (verdict/third_arm.py): on or off, and the serving vLLM's version its gate reads
            "third_arm": {"enabled": bool(third.get("enabled", True)), "vllm_version": third.get("vllm_version") or None,
                          "measure_between": bool(third.get("measure_between", True))}}
