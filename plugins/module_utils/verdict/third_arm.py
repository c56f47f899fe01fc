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
not to regress. The powers of two between that level and the regressing one that no round measured (2 and 4
with the default levels [1, 8]) are ``probe_levels``: the rollout measures both arms there once (the
threshold probe, not a round of the verdict, as the k probe is not) and ``plan`` with ``probe`` raises the
threshold over every probed level that did not regress, up to the first that did.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

from ansible_collections.jetson.specdec.plugins.module_utils.launch.batch_schedule import (
    ScheduleError, build_schedule, describe, supports_schedule)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.gates import parse_version
from ansible_collections.jetson.specdec.plugins.module_utils.verdict import evidence, inputs


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


def levels_between(threshold, first, measured):
    """The powers of two above ``threshold`` and below ``first`` (the first regressing level) that no round
    measured: where the threshold probe measures both arms."""
    out, level = [], 2
    while level < first:
        if level > threshold and level not in measured:
            out.append(level)
        level *= 2
    return out


class ProbeError(ValueError):
    """A threshold probe that cannot be read (a level missing or measuring nothing): the third arm is off."""


def probe_changes(probe, levels):
    """{level: {baseline_tok_s, candidate_tok_s, change, baseline_failed, candidate_failed}} from the threshold
    probe's two benchmarks (``probe``: {"baseline": vllm_bench result, "candidate": vllm_bench result}), with the
    verdict's own throughput estimate of a level (verdict/evidence.py)."""
    out = {}
    for level in levels:
        level_out = {}
        for arm in ("baseline", "candidate"):
            run = evidence.find_run((probe or {}).get(arm), level)
            if run is None:
                raise ProbeError("schedule.probe_failed: the %s's probe benchmark has no level %d" % (arm, level))
            ev = evidence.level_evidence(run, "threshold probe %s c=%d" % (arm, level), 0.25)
            if ev["thr"] is None:
                raise ProbeError("schedule.probe_failed: the %s's probe at concurrency %d completed no request"
                                 % (arm, level))
            level_out[arm + "_tok_s"] = round(math.exp(ev["thr"]), 4)
            level_out[arm + "_failed"] = ev["failed"]
        level_out["change"] = round(level_out["candidate_tok_s"] / level_out["baseline_tok_s"] - 1.0, 4)
        out[level] = level_out
    return out


def threshold_with_probe(threshold, first, changes, tolerance):
    """The threshold raised over every probed level, in order, that did not regress (change at or above
    -tolerance, and no more failed requests than the baseline's), up to the first that did."""
    for level in sorted(changes):
        if level <= threshold:
            continue
        if level >= first:
            break
        measured = changes[level]
        if measured["change"] < -tolerance or measured["candidate_failed"] > measured["baseline_failed"]:
            break
        threshold = level
    return threshold


def probe_words(changes):
    """The threshold probe's changes ({level: {change, ...}}, levels as ints or, from a record, strings) in words:
    "measured between: c=2 +18 %, c=4 -9 %", or "" when none is a number. The plan's reason and the report say it."""
    words = []
    for level in sorted(changes or {}, key=int):
        change = (changes[level] or {}).get("change")
        if isinstance(change, (int, float)) and not isinstance(change, bool):
            words.append("c=%s %+.0f %%" % (level, 100 * change))
    return "measured between: %s" % ", ".join(words) if words else ""


def plan(verdict, params, enabled, version, method, k, max_batch=256, probe=None, measure_between=True):
    """Whether to try the third arm after the candidate's ``verdict``: {"try", "reason", and when tried
    "threshold", "k", "schedule", "line", "probe_levels", "probe"}. ``params``: the verdict's thresholds
    (rollout_settings.verdict); ``version``: the serving vLLM's version string or None; ``method``: the
    candidate's method; ``k``: the k the candidate ran (the schedule's k up to the threshold); ``max_batch``:
    vllm_server_max_num_seqs. ``measure_between`` (rollout_third_arm_measure_between): list the unmeasured
    levels below the regressing one as ``probe_levels`` (the threshold is provisional until they are measured);
    ``probe``: the threshold probe's {baseline, candidate} results at those levels, which sets the threshold.
    A probe that cannot be read turns the third arm off (``schedule.probe_failed``)."""
    out = {"try": False, "reason": None, "threshold": None, "k": None, "schedule": None, "line": None,
           "probe_levels": [], "probe": None}
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
    low, high = _levels(verdict)
    between = levels_between(threshold, first, [low] + high) if measure_between else []
    probed = ""
    if between and probe is not None:
        try:
            changes = probe_changes(probe, between)
        except (ProbeError, inputs.InputError) as exc:
            out["reason"] = str(exc) if str(exc).startswith("schedule.") else "schedule.probe_failed: %s" % exc
            return out
        threshold = threshold_with_probe(threshold, first, changes,
                                         float((params or {}).get("c8_regression_tolerance", 0.05)))
        out["probe"] = {"levels": between, "changes": dict((str(level), changes[level]) for level in between)}
        probed = "; %s; threshold %d" % (probe_words(changes), threshold)
        between = []
    try:
        schedule = build_schedule(int(threshold), int(k), max_batch)
    except (ScheduleError, TypeError, ValueError) as exc:
        out["reason"] = "schedule.invalid: %s" % exc
        return out
    out.update({"try": True, "threshold": threshold, "k": int(k), "schedule": schedule, "regressed_at": first,
                "probe_levels": between,
                "reason": "the candidate gains %+.0f %% at concurrency %d and regresses at concurrency %d%s"
                          % (100 * gain["point"], low, first, probed),
                "line": describe(threshold)})
    return out


def dry_run_line(enabled, version, method, measure_between=True):
    """The check-mode plan's sentence about the third arm."""
    if not enabled:
        return None
    refusal = supports_schedule(parse_version(version) if version else None, method)
    if refusal:
        return "no third arm (%s)" % refusal.split(":", 1)[0]
    return ("would try a third arm if it wins at the judged level and regresses above it: speculation up to a "
            "batch-size threshold, none above (vLLM's num_speculative_tokens_per_batch_size)"
            + (", the levels between measured first on both arms" if measure_between else ""))
