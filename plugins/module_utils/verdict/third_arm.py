# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The third arm: speculation up to a batch-size threshold, none above it (docs/verdict.md), pure stdlib.

A candidate that wins at the judged level (c=1) and regresses at a higher one is reverted by the skill's
rule: its low-load users lose the speedup because of its high-load users. vLLM 0.32 schedules speculation
by batch size (launch/batch_schedule.py), so the rollout tries a third arm before it reverts: the
candidate's k at batch sizes up to a threshold, k = 0 above it. The schedule has costs of its own (vLLM
issue #49548: TPOT +6..22 % at k = 0), so it is judged like any candidate, by the same sequential verdict
against the baseline at every level, and kept only when it wins at c=1 and regresses nowhere.

``plan`` says whether to try it and with which threshold: the highest measured level below the lowest
level that regressed, so every batch size the schedule speculates at up to a measured level was measured
not to regress (the levels between it and the regressing level were not measured: rollout_bench_concurrency
[1, 2, 4, 8] gives a finer threshold than [1, 8]).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.launch.batch_schedule import (
    ScheduleError, build_schedule, describe, supports_schedule)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.gates import parse_version


def _levels(verdict):
    metrics = verdict.get("metrics") or {}
    low = metrics.get("low_concurrency") or 1
    high = metrics.get("regression_levels") or []
    return int(low), sorted(int(level) for level in high)


def _change(estimates, level, levels):
    """The estimate of the throughput change at a regression level (verdict/decide.py's names)."""
    key = "c8_throughput_change" if level == max(levels) else "throughput_change_c%d" % level
    return estimates.get(key)


def choose_threshold(verdict, tolerance):
    """(threshold, first regressing level) from the candidate's verdict, or (None, None) when no level regressed.

    A level regressed when its throughput change is below -tolerance (the point estimate: the verdict stops as
    soon as one level's interval settles it, the others may still straddle). The threshold is the highest
    measured level below the first regressing one, at least the judged level."""
    low, high = _levels(verdict)
    estimates = verdict.get("estimates") or {}
    first = None
    for level in high:
        change = _change(estimates, level, high)
        if change is not None and change.get("point") is not None and change["point"] < -tolerance:
            first = level
            break
    if first is None:
        return None, None
    below = [level for level in [low] + high if level < first]
    return max(below), first


def plan(verdict, params, enabled, version, method, k, max_batch=256):
    """Whether to try the third arm after the candidate's ``verdict``: {"try", "reason", and when tried
    "threshold", "k", "schedule", "line"}. ``params``: the verdict's thresholds (rollout_settings.verdict);
    ``version``: the serving vLLM's version string or None; ``method``: the candidate's method; ``k``: the
    k the candidate ran (the schedule's k up to the threshold); ``max_batch``: vllm_server_max_num_seqs."""
    out = {"try": False, "reason": None, "threshold": None, "k": None, "schedule": None, "line": None}
    if not enabled:
        out["reason"] = "rollout_third_arm is off"
        return out
    verdict = verdict or {}
    if verdict.get("action") != "revert" or verdict.get("decision") != "revert" or verdict.get("rule"):
        # a keep needs nothing; an inconclusive, failed, broken or energy revert is not about batch size
        out["reason"] = "the candidate was not reverted by the regression rule"
        return out
    gain = (verdict.get("estimates") or {}).get("c1_throughput_gain") or {}
    keep_gain = float((params or {}).get("keep_throughput_gain", 0.3))
    if gain.get("point") is None or gain["point"] < keep_gain:
        out["reason"] = "the candidate did not win at the judged level"
        return out
    threshold, first = choose_threshold(verdict, float((params or {}).get("c8_regression_tolerance", 0.05)))
    if threshold is None:
        out["reason"] = "no level regressed"
        return out
    refusal = supports_schedule(parse_version(version) if version else None, method)
    if refusal:
        out["reason"] = refusal
        return out
    try:
        schedule = build_schedule(int(threshold), int(k), max_batch)
    except (ScheduleError, TypeError, ValueError) as exc:
        out["reason"] = "schedule.invalid: %s" % exc
        return out
    out.update({"try": True, "threshold": threshold, "k": int(k), "schedule": schedule, "regressed_at": first,
                "reason": "the candidate gains %+.0f %% at concurrency %d and regresses at concurrency %d"
                          % (100 * gain["point"], _levels(verdict)[0], first),
                "line": describe(threshold)})
    return out


def dry_run_line(enabled, version, method):
    """The check-mode plan's sentence about the third arm."""
    if not enabled:
        return None
    refusal = supports_schedule(parse_version(version) if version else None, method)
    if refusal:
        return "no third arm (%s)" % refusal.split(":", 1)[0]
    return ("would try a third arm if it wins at the judged level and regresses above it: speculation up to a "
            "batch-size threshold, none above (vLLM's num_speculative_tokens_per_batch_size)")
