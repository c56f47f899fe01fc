# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The per-host record of a rollout run: what the report, the summary callback and
the spool on the controller read.

Small pure functions, one per event of a host's rollout; each returns a new record
and never changes its input. The rollout role reaches them through the
``jetson.specdec.rollout_record`` filter; ``fleet_report`` and the summary callback
read records with ``normalize``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import math

from ansible_collections.jetson.specdec.plugins.module_utils.launch.ladder import apply_kept_utilization, next_rung
from ansible_collections.jetson.specdec.plugins.module_utils.record.wave import WaveError, wave
from ansible_collections.jetson.specdec.plugins.module_utils.verdict import energy
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.third_arm import dry_run_line

# What the benchmark module returns that the record keeps (the rest is Ansible's bookkeeping).
BENCH_KEYS = ("runs", "spec_decode", "server", "bench_warnings", "simulated", "config", "workload",
              "conditions", "answers", "wall_s")
CONNECTION_ERRORS = ("deserialization failed", "is not running", "failed to connect", "unreachable")
POLICY_OFF = "policy.speculation_off: vllm_server_speculation is false for this host."
NO_RECORD_ERROR = "no record: the host was unreachable, or the run stopped before it"
FINAL_STATUSES = ("kept", "reverted", "refused", "off", "unchanged", "held", "planned", "failed", "unreachable")


class RecordError(ValueError):
    """An event the record cannot take (the message names it)."""


def _copy(record):
    return copy.deepcopy(dict(record or {}))


def new_record(host, run_id, jetson, facts_root="/"):
    """The record of a host whose facts were just read (status ``started``).

    ``simulated`` is decided here, once: facts read from a sysroot (facts_root other
    than /) only happen on simulated boards; a benchmark answered by the stand-in
    turns it on later (``bench``).
    """
    jetson = jetson or {}
    l4t = jetson.get("l4t") or {}
    power = jetson.get("power_mode") or {}
    return {
        "host": host, "run_id": run_id, "simulated": (facts_root or "/") != "/", "status": "started",
        "facts": {"family": jetson.get("family"), "variant": jetson.get("variant"), "model": jetson.get("model"),
                  "l4t": l4t.get("release"), "jetpack": jetson.get("jetpack"),
                  "memory_total_bytes": jetson.get("memory_total_bytes"), "power_mode": power.get("name"),
                  "memory_bandwidth_gbps": jetson.get("memory_bandwidth_gbps"),
                  "warnings": list(jetson.get("warnings") or [])},
        "attempts": [], "reasons": [],
    }


def bench_result(result):
    """The part of a vllm_bench result the record and the state file keep."""
    return dict((k, v) for k, v in (result or {}).items() if k in BENCH_KEYS)


def _drifted(drift):
    return bool(drift and drift.get("action"))


def from_stored(record, stored, check_mode=False, refusal="", launch=None, settings=None, wave_key=None,
                wave_percent=100, policy_off="", drift=None):
    """The record after reading the host's state: unchanged, held (outside this run's wave),
    planned (check mode) or queued.

    ``stored`` is the result of ``rollout_state state=read`` (needs_rollout,
    needs_rollout_reason, rollout_state). In check mode, ``launch`` (the host's
    ``vllm_server_launch``) and ``settings`` (``rollout_settings``) make the record's ``plan``:
    what a real run would start and how long it may measure (``dry_run_plan``).
    ``wave_key`` and ``wave_percent``: the staged rollout (record/wave.py); a host that needs a
    rollout outside the wave is ``held`` and left as it is. ``policy_off``: why the inventory turns
    speculation off on this host ("" when it does not); a real run would only apply the baseline.
    ``drift`` (jetson.specdec.rollout_drift): what runs on a converged host differs from its last good
    config; the host is queued (never unchanged) to put the recorded config back or to be evaluated again.
    """
    try:
        in_wave = wave(wave_key, wave_percent) if wave_key is not None else None
    except WaveError as exc:
        raise RecordError(str(exc))
    out = _copy(record)
    if in_wave is not None:
        out["wave"] = in_wave
    state = stored.get("rollout_state") or {}
    info = state.get("info") or {}
    benchmarks = state.get("benchmarks") or {}
    reason = stored.get("needs_rollout_reason")
    needs = bool(stored.get("needs_rollout"))
    out["previous_status"] = state.get("status")
    if not needs and _drifted(drift):
        needs = True
        reason = drift.get("message") or "; ".join(drift.get("findings") or []) or "drift"
        out["drift"] = {"findings": list(drift.get("findings") or []), "action": drift.get("action"),
                        "rule": drift.get("rule")}
        out["warnings"] = list(out.get("warnings") or []) + [reason]
    # The plan's warnings (k above the board's start, an uncompared vocabulary, ...) reach the console
    # summary and the report through the record, not only the -v output of the preflight.
    inputs = roofline_inputs(launch)
    if inputs:
        out["roofline_inputs"] = inputs
    if (settings or {}).get("hold_clocks") and out.get("facts"):
        out["facts"]["warnings"] = [held_power_mode(w) for w in out["facts"].get("warnings") or []]
    plan_warnings = launch_warnings(launch)
    if plan_warnings:
        out["warnings"] = [w for w in out.get("warnings") or [] if w not in plan_warnings] + plan_warnings
    if not needs:
        out.update(status="unchanged", verdict=state.get("verdict"), baseline=benchmarks.get("baseline"),
                   candidate=benchmarks.get("candidate"), rounds=benchmarks.get("rounds") or [],
                   config_after=info.get("config_after"), decided_at=state.get("updated_at"),
                   simulated=bool(info.get("simulated", False)), reasons=[reason])
    elif in_wave is not None and not in_wave["in_wave"]:
        out.update(status="held", config_after=info.get("config_after"),
                   reasons=["Needs a rollout (%s), %s." % (reason, in_wave["reason"])])
    elif check_mode:
        # A rollout cannot be simulated (it needs two live benchmarks), so check mode only says what it would do.
        plan = dry_run_plan(launch, settings, refusal, policy_off)
        if (out.get("drift") or {}).get("action") == "reapply":
            plan["line"] = "put back the last good config (%s), without a benchmark" % (info.get("config_after") or "baseline")
        out.update(status="planned", config_after=info.get("config_after"), plan=plan,
                   reasons=["check mode: a real run would %s (%s)" % (plan["line"], reason)]
                   + ([policy_off] if policy_off else [refusal] if refusal else []))
    else:
        out.update(status="queued",
                   reasons=["Needs a rollout (%s); the run stopped before this host was rolled out "
                            "(max_fail_percentage) if this record is still here." % reason])
    return out


def held_power_mode(warning):
    """The facts' power-mode warning, told that rollout_bench_hold_clocks measures at MAXN anyway."""
    if warning.startswith("The power mode is "):
        return ("%s (rollout_bench_hold_clocks holds MAXN and jetson_clocks while benchmarking and puts "
                "this mode back afterwards.)" % warning.split(";")[0])
    return warning


def roofline_inputs(launch):
    """What the report's roofline needs from the plan: the bytes a decode step reads (target and
    drafter weights, KV per token, from the memory headroom check) and the planned k; None when the
    headroom was not measured."""
    candidate = (launch or {}).get("candidate") or {}
    headroom = candidate.get("headroom") if isinstance(candidate.get("headroom"), dict) else {}
    headroom = headroom.get("breakdown") if isinstance(headroom.get("breakdown"), dict) else headroom
    if not headroom.get("target_weight_bytes"):
        return None
    spec = (candidate.get("plan") or {}).get("speculative_config") or {}
    return {"target_weight_bytes": headroom.get("target_weight_bytes"),
            "draft_weight_bytes": headroom.get("speculative_weight_bytes") or 0,
            "kv_bytes_per_token": headroom.get("kv_bytes_per_token") or 0,
            "k": spec.get("num_speculative_tokens") or 0}


def roofline_limit(record):
    """The verdict's roofline input (verdict/params.py ``roofline``) from the record: the board's bandwidth
    (facts) and the bytes a step reads (the plan's headroom), with the k the candidate runs; None without."""
    inputs = (record or {}).get("roofline_inputs")
    facts = (record or {}).get("facts")
    bandwidth = facts.get("memory_bandwidth_gbps") if isinstance(facts, dict) else None
    if not isinstance(inputs, dict) or not bandwidth or not inputs.get("target_weight_bytes"):
        return None
    tuned = record.get("k_tuning") if isinstance(record.get("k_tuning"), dict) else {}
    return {"bandwidth_gbps": bandwidth, "target_weight_bytes": inputs["target_weight_bytes"],
            "draft_weight_bytes": inputs.get("draft_weight_bytes") or 0,
            "kv_bytes_per_token": inputs.get("kv_bytes_per_token") or 0,
            "k": int(tuned.get("k") or inputs.get("k") or 0)}


def launch_warnings(launch):
    """The warnings of both planned arms of ``vllm_server_launch``, each once, baseline first."""
    out = []
    for arm in ("baseline", "candidate"):
        for text in ((launch or {}).get(arm) or {}).get("warnings") or []:
            if text and text not in out:
                out.append(str(text))
    return out


def _first_refusal(refusal):
    """The first rule line of a preflight refusal (its first line is the header naming the host)."""
    lines = [line.strip() for line in str(refusal or "").splitlines() if line.strip()]
    rules = [line for line in lines[1:] if not line.startswith("Fix")] or lines
    return rules[0] if rules else "refused"


def _levels(verdict):
    high = verdict.get("high_concurrency")
    levels = [verdict.get("low_concurrency")] + (list(high) if isinstance(high, list) else [high])
    return " and ".join(str(level) for level in levels if level is not None) or "?"


def dry_run_plan(launch, settings, refusal="", policy_off=""):
    """What a real run would do on a host, for check mode: the speculation it would start (method,
    model, k, utilization), the ladder it would walk if that does not start, and the round budget.

    ``launch``: the host's ``vllm_server_launch`` (may be None: then only the action is known);
    ``settings``: ``rollout_settings`` (its ``verdict`` holds the rounds, prompts and time budget).
    ``line`` is the sentence the summary callback and the report print.
    """
    if policy_off:
        # The operator's choice comes before the rules: nothing is benchmarked, so nothing is refused.
        return {"would": "off", "reason": policy_off,
                "line": "keep speculation off by policy (vllm_server_speculation: false), run the baseline"}
    if refusal:
        first = _first_refusal(refusal)
        return {"would": "refuse", "reason": first, "line": "refuse speculation, run the baseline: %s" % first}
    candidate = (launch or {}).get("candidate") or {}
    baseline = (launch or {}).get("baseline") or {}
    spec = (candidate.get("plan") or {}).get("speculative_config") or {}
    verdict = (settings or {}).get("verdict") or {}
    rungs = [r.get("label") for r in candidate.get("rungs") or [] if isinstance(r, dict) and r.get("label")]
    plan = {"would": "benchmark", "method": spec.get("method"), "model": spec.get("model") or None,
            "k": spec.get("num_speculative_tokens"), "utilization": candidate.get("gpu_memory_utilization"),
            "baseline_utilization": baseline.get("gpu_memory_utilization"), "ladder": rungs[1:],
            "min_rounds": verdict.get("min_rounds"), "max_rounds": verdict.get("max_rounds"),
            "round_prompts": verdict.get("round_prompts"), "max_wall_s": verdict.get("max_wall_s")}
    if not spec:
        plan["line"] = "benchmark and judge speculation"
        return plan
    what = "benchmark %s%s, k=%s, utilization %s (baseline %s)" % (
        plan["method"], " " + plan["model"] if plan["model"] else "", plan["k"],
        plan["utilization"], plan["baseline_utilization"])
    if plan["ladder"]:
        what += "; if it does not start: %s" % " -> ".join(plan["ladder"])
    if plan["min_rounds"] is not None:
        what += "; %s to %s rounds of %s prompts at concurrency %s, at most %s min" % (
            plan["min_rounds"], plan["max_rounds"], plan["round_prompts"], _levels(verdict),
            int(round(float(plan["max_wall_s"] or 0) / 60.0)))
    if (settings or {}).get("hold_clocks"):
        what += "; at MAXN with jetson_clocks held, then put back as it was"
    third = (settings or {}).get("third_arm") or {}
    third_line = dry_run_line(bool(third.get("enabled")), third.get("vllm_version"), plan["method"],
                              bool(third.get("measure_between", True)))
    if third_line:
        plan["third_arm"] = third_line
        what += "; " + third_line
    plan["line"] = what
    return plan


def lock_broken(record, lock):
    """Note the lock of an interrupted run this run cleared (rollout_break_lock)."""
    out = _copy(record)
    if lock:
        out["lock_broken"] = lock
    return out


def locked(record, lock, stored, refusal="", policy_off="", drift=None):
    """Under the lock, the state read again: the lock this run broke (if any), and a host another
    run converged in the meantime (unchanged), one the inventory turns off (off) or one whose
    speculation is refused. A converged host that drifted (``drift`` action reapply) stays queued:
    the run puts its recorded config back (``drift_corrected``)."""
    out = lock_broken(record, lock)
    if not stored.get("needs_rollout"):
        if (drift or {}).get("action") == "reapply":
            return out
        return from_stored(out, stored)
    if policy_off:
        return off_by_policy(out, policy_off)
    return refused(out, refusal) if refusal else out


def drift_corrected(record, stored, drift):
    """A converged host whose recorded config was put back (drift, action reapply): its recorded
    outcome again, with what differed as a warning and the reason."""
    state = (stored or {}).get("rollout_state") or {}
    info = state.get("info") or {}
    benchmarks = state.get("benchmarks") or {}
    verdict = state.get("verdict") or {}
    message = (drift or {}).get("message") or "; ".join((drift or {}).get("findings") or []) or "drift"
    out = _copy(record)
    out.update(status=state.get("status") or "reverted", verdict=verdict, baseline=benchmarks.get("baseline"),
               candidate=benchmarks.get("candidate"), rounds=benchmarks.get("rounds") or [],
               config_after=info.get("config_after") or "baseline", simulated=bool(info.get("simulated", False)),
               reasons=["Drift corrected: %s" % message] + list(verdict.get("reasons") or []),
               drift=dict((k, (drift or {}).get(k)) for k in ("findings", "action", "rule")))
    out["drift"]["corrected"] = True
    if message not in (out.get("warnings") or []):
        out["warnings"] = list(out.get("warnings") or []) + [message]
    return out


def touched(record, stored):
    """The run changes the host from here on: what ran before, and whether a pending run is resumed."""
    state = (stored or {}).get("rollout_state") or {}
    out = _copy(record)
    out.update(config_before=(state.get("info") or {}).get("config_after") or "none recorded",
               resumed_pending=state.get("status") == "pending")
    return out


def bench(record, rounds):
    """The benchmark rounds so far ([{phase, result}]): a stand-in that answered one
    (X-Jetson-Simulated) makes the record simulated."""
    out = _copy(record)
    out["simulated"] = bool(out.get("simulated")) or any(bool((r.get("result") or {}).get("simulated"))
                                                         for r in rounds or [])
    return out


def last_round(rounds, phase):
    """The latest benchmark of ``phase`` (baseline or candidate) that measured every level, or None. A round the
    verdict asked at its open levels only (``levels``: the others were settled) is taken only when no round of the
    phase measured them all: the record's arms show every level."""
    mine = [r for r in rounds or [] if r.get("phase") == phase]
    full = [r for r in mine if not r.get("levels")]
    return (full or mine)[-1].get("result") if mine else None


def phase_results(rounds, phase):
    """Every benchmark of ``phase``, in order (the verdict pools repeats)."""
    return [r.get("result") for r in rounds or [] if r.get("phase") == phase]


def ladder(record, rungs):
    """Where the fallback ladder stands: the first rung, or the rung the last failed attempt
    named as next (that one runs once it started). The last rung (speculation off) is never
    "tried": it is the baseline. Returns {next: rung index, rung: that rung or None, exhausted}."""
    rungs = list(rungs or [])
    failed = [a for a in (record or {}).get("attempts") or [] if a.get("result") == "failed"]
    index = failed[-1].get("next_rung", failed[-1].get("rung", -1) + 1) if failed else 0
    tried = rungs[:-1]
    rung = next((r for r in tried if r.get("rung") == index), None)
    if rung is not None and failed and failed[-1].get("next_utilization"):
        # a KV-cache shortfall: the smaller speculation at the utilization that failed, not a lower one
        rung = apply_kept_utilization(rung, failed[-1]["next_utilization"])
    return {"next": index, "rung": rung, "exhausted": rung is None}


def add_attempt(record, rung, started, cause=None, message=None, rungs=None, headroom=None):
    """One rung of the fallback ladder started or failed (with its classified cause).

    A failed rung also records the rung to try next and why (launch/ladder.py decides it
    from the cause: memory walks down the ladder, a rejected config goes straight to off).
    """
    out = _copy(record)
    label = rung.get("label")
    attempt = {"rung": rung.get("rung"), "label": label, "result": "started" if started else "failed"}
    if started:
        attempt["summary"] = "Rung %s (%s) started." % (rung.get("rung"), label)
    else:
        attempt.update(cause=cause or "unknown",
                       summary="Rung %s (%s) failed: %s." % (rung.get("rung"), label, cause or "unknown"),
                       message=str(message or "")[:1500])
        if rungs:
            step = next_rung(rungs, rung, cause or "unknown", message, headroom)
            attempt.update(next_rung=step["rung"], next=step["why"])
            if step.get("utilization"):
                attempt["next_utilization"] = step["utilization"]
    out["attempts"] = list(out.get("attempts") or []) + [attempt]
    return out


def k_tuned(record, choice, probe_k):
    """What k tuning found (the evaluation's k phases): the probe's k, the chosen k and the prediction, or why it failed."""
    choice = choice if isinstance(choice, dict) else {}
    out = _copy(record)
    if choice.get("failed"):
        out["k_tuning"] = {"probe_k": probe_k, "k": None, "failed": str(choice["failed"])[:1500]}
    else:
        out["k_tuning"] = dict((key, choice.get(key)) for key in (
            "k", "predicted_speedup", "measured_speedup", "acceptance_length", "beats_baseline",
            "larger_k_may_help", "reasons", "predicted_k", "start_k", "measured_k", "measured_by_k",
            "round_speedup", "acceptance_at_start"))
        out["k_tuning"]["probe_k"] = probe_k
    return out


def ladder_exhausted_verdict(record):
    """The verdict when no rung of the ladder started: speculation off, flagged (with why the ladder stopped)."""
    attempts = record.get("attempts") or []
    last_why = [attempts[-1]["next"]] if attempts and attempts[-1].get("next") else []
    return {"decision": "revert", "action": "revert", "flagged": True,
            "reasons": ["No speculative configuration started; every rung of the fallback ladder failed, so "
                        "speculation is off."] + [a.get("summary") for a in attempts] + last_why}


def broken_candidate_verdict(message):
    """The verdict when the candidate crashed or stalled while it was measured."""
    return {"decision": "revert", "action": "revert", "flagged": True,
            "reasons": ["The speculative server failed during its benchmark, so it is reverted: %s"
                        % str(message or "benchmark failed")[:1500]]}


def _seconds(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        return None
    return float(value)


def decide_rounds(rounds):
    """The role's rounds ([{phase, result, serving}], in the order they ran) as spec_decide reads them.

    A round's board time (``wall_s``) is the benchmark's own wall time (``result.wall_s``: discovery, warm-up,
    every level, the answers) plus, when the arm changed before it, how long vLLM did not serve across that
    switch (``serving.serving_gap_s``, measured by the switch's wait): the restart as it really took.  When
    either is unknown (an older benchmark, a switch without a measured gap) the round has no ``wall_s`` and
    spec_decide estimates it from the levels' durations and ``restart_s``.  ``switch_s`` is the measured
    restart alone, from which the next round's restart is planned.
    """
    out = []
    previous = None
    for r in rounds or []:
        result = r.get("result") or {}
        item = {"arm": r.get("phase"), "result": result}
        if r.get("levels"):
            item["levels"] = list(r["levels"])  # the verdict asked for these levels only (the others were settled)
        switched = previous is not None and r.get("phase") != previous
        gap = _seconds((r.get("serving") or {}).get("serving_gap_s")) if switched else 0.0
        bench = _seconds(result.get("wall_s"))
        if switched and gap is not None:
            item["switch_s"] = gap
        if bench is not None and gap is not None:
            item["wall_s"] = round(bench + gap, 3)
        out.append(item)
        previous = r.get("phase")
    return out


def schedule_rounds(rounds, params):
    """The third arm's evidence (verdict/third_arm.py): the baseline's rounds and the schedule's, the schedule as
    the candidate arm, with the budget the baseline's rounds used added, so the schedule gets the budget a
    candidate gets (the candidate's own rounds are not its evidence)."""
    kept = [r for r in rounds or [] if r.get("phase") in ("baseline", "schedule")]
    base = [r.get("result") or {} for r in kept if r.get("phase") == "baseline"]
    runs = [run for result in base for run in result.get("runs") or [] if isinstance(run, dict)]
    requests = sum(int(run.get("completed") or 0) + int(run.get("failed") or 0) for run in runs)
    # the baseline's rounds as the budget counts them: their whole benchmark when measured, else the levels
    seconds = sum(_seconds(result.get("wall_s")) if _seconds(result.get("wall_s")) is not None
                  else sum(float(run.get("duration_s") or 0.0) for run in result.get("runs") or []
                           if isinstance(run, dict))
                  for result in base)
    out = dict(params)
    for key, add, cap in (("max_rounds", len(base), 100), ("max_requests", requests, 10 ** 7),
                          ("max_wall_s", seconds, 7 * 86400.0)):
        if out.get(key) is not None:
            out[key] = min(cap, type(out[key])(out[key] + add)) if isinstance(out[key], (int, float)) else out[key]
    return ([dict({"phase": "candidate" if r.get("phase") == "schedule" else "baseline", "result": r.get("result"),
                   "serving": r.get("serving")}, **({"levels": r["levels"]} if r.get("levels") else {}))
             for r in kept], out)


def run_verdict(record, rounds, rungs, broke, params, ttft=None):
    """The verdict of the run so far, the one place it is decided.

    No rung started: revert (flagged). The candidate broke during a benchmark: revert
    (flagged). Otherwise the sequential verdict (verdict/decide.py) on every round so far:
    ``continue`` with ``next_round.arm`` while the evidence does not settle keep or revert
    and the budget in ``params`` allows another round; then keep, revert, marginal or
    inconclusive (revert, flagged). Once the third arm runs (rounds of phase ``schedule``), the
    verdict is the schedule's against the baseline (``schedule_rounds``). ``ttft`` ({tolerance, action}): the TTFT guard on a kept
    candidate (verdict/ttft.py).
    """
    from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import spec_decide
    from ansible_collections.jetson.specdec.plugins.module_utils.verdict.ttft import apply_ttft

    if ladder(record, rungs)["exhausted"]:
        return ladder_exhausted_verdict(record)
    if broke:
        return broken_candidate_verdict(broke)
    params = dict(params or {})
    if params.get("roofline") is None:
        params["roofline"] = roofline_limit(record)
    if any(r.get("phase") == "schedule" for r in rounds or []):
        rounds, params = schedule_rounds(rounds, params)
    data = decide_rounds(rounds)
    verdict = spec_decide(data, **params)
    verdict = apply_ttft(verdict, data, (verdict.get("metrics") or {}).get("low_concurrency") or 1, ttft or {})
    verdict["thresholds"] = verdict_thresholds(params)
    return verdict


# The verdict's settings the report states once for the run (its thresholds and budget).
THRESHOLD_KEYS = ("keep_throughput_gain", "keep_tpot_drop", "revert_throughput_gain", "c8_regression_tolerance",
                  "marginal_action", "low_concurrency", "high_concurrency", "z", "regression_z", "min_rounds",
                  "max_rounds", "max_requests", "max_wall_s", "round_prompts")


def verdict_thresholds(params):
    """The thresholds and budget a verdict was judged with (defaults filled in), for the report."""
    from ansible_collections.jetson.specdec.plugins.module_utils.verdict.params import validate

    p = validate(dict(params or {}))
    return dict((key, p.get(key)) for key in THRESHOLD_KEYS)


def compact_result(result):
    """A benchmark result without its per-request lists: what the state file and the report keep."""
    if not isinstance(result, dict):
        return result
    out = dict(result)
    out["runs"] = [dict((k, v) for k, v in run.items() if k != "requests") if isinstance(run, dict) else run
                   for run in result.get("runs") or []]
    return out


def round_summary(rounds):
    """One line per round (arm, whether the server reported speculative decoding, each level's throughput and
    TPOT p50, when it started, the prompt set it drew): the evidence, in order. ``speculating`` shows that a
    candidate round measured a speculating server."""
    out = []
    for rnd in rounds or []:
        result = rnd.get("result") or {}
        runs = result.get("runs") or []
        line = {"arm": rnd.get("phase"), "speculating": bool(result.get("spec_decode")),
                "levels": [dict((k, run.get(k)) for k in ("concurrency", "throughput_tok_s", "tpot_ms_p50",
                                                          "completed", "failed"))
                           for run in runs if isinstance(run, dict)]}
        if isinstance(rnd.get("at"), (int, float)) and not isinstance(rnd.get("at"), bool):
            line["at"] = round(float(rnd["at"]), 1)  # when its benchmark started (UTC epoch seconds)
        prompt_set = (result.get("config") or {}).get("prompt_set")
        if isinstance(prompt_set, int) and not isinstance(prompt_set, bool):
            line["prompt_set"] = prompt_set  # the prompts it drew: the i-th round of each arm draws set i
        out.append(line)
    return out


def serving_gaps(waits):
    """Seconds without service of each restart, once per restart, in order: from vllm_wait
    results (or the two keys the rollout keeps of them: ``serving_gap_s`` and
    ``stopped_at_monotonic``; two waits after one restart share the latter)."""
    seen, out = set(), []
    for wait in waits or []:
        gap = wait.get("serving_gap_s") if isinstance(wait, dict) else None
        if not isinstance(gap, (int, float)) or isinstance(gap, bool):
            continue
        if wait.get("stopped_at_monotonic") in seen:
            continue
        seen.add(wait.get("stopped_at_monotonic"))
        out.append(round(float(gap), 1))
    return out


def prefetched(result):
    """What jetson.specdec.vllm_prefetch did before the candidate's start (one entry per model), or None."""
    if not isinstance(result, dict) or result.get("skipped") or not isinstance(result.get("models"), list):
        return None
    keys = ("model", "status", "seconds", "cause", "line", "fix")
    return [dict((k, m.get(k)) for k in keys if m.get(k) is not None) for m in result["models"] if isinstance(m, dict)]


def third_arm_record(third_arm, kept):
    """What the record keeps of the third arm (verdict/third_arm.py's plan, with the candidate's own verdict
    before it): whether it was tried and why (not), the threshold, the schedule and the sentence."""
    arm = dict((k, third_arm.get(k)) for k in ("try", "reason", "threshold", "k", "schedule", "regressed_at", "line",
                                               "probe"))
    arm["tried"] = bool(arm.pop("try"))
    arm["kept"] = bool(kept and arm["tried"])
    first = third_arm.get("candidate_verdict") or {}
    if first:
        arm["candidate_verdict"] = dict((k, first.get(k)) for k in ("decision", "action", "reasons", "metrics"))
    return arm


def judged(record, verdict, rounds, rung, stored, waits=None, prefetch=None, k_choice=None, probe_k=None,
           third_arm=None):
    """The verdict is in: kept (the candidate runs) or reverted (the baseline runs).

    ``rung`` is the rung that started (None when the ladder ended with speculation off);
    the record keeps the latest benchmark of each arm. ``waits``: the serving gaps of the
    run's restarts (``serving_gaps``); ``prefetch``: vllm_prefetch's result (``prefetched``);
    ``k_choice``: what k tuning chose at ``probe_k`` (``k_tuned``), None when k was not tuned;
    ``third_arm``: the third arm's plan (verdict/third_arm.py) when the rollout considered one, the verdict
    then being the schedule's when it was tried.
    """
    if not isinstance(verdict, dict) or verdict.get("action") not in ("keep", "revert"):
        raise RecordError("the verdict must have action keep or revert, got %r" % (verdict,))
    kept = verdict["action"] == "keep"
    out = touched(bench(record, rounds), stored)
    if rung:
        out = add_attempt(out, rung, True)
    candidate = compact_result(last_round(rounds, "candidate"))
    out.update(status="kept" if kept else "reverted", verdict=verdict, reasons=list(verdict.get("reasons") or []),
               rounds=round_summary(rounds),
               baseline=compact_result(last_round(rounds, "baseline")), candidate=candidate,
               spec_decode=(candidate or {}).get("spec_decode"),
               config_after=(rung or {}).get("label") if kept else "baseline",
               serving_gaps=serving_gaps(waits))
    if rung and rung.get("vllm_server_speculative_model"):
        out["speculative_model"] = rung["vllm_server_speculative_model"]  # the head or draft it measured
    if isinstance(third_arm, dict) and third_arm.get("reason"):
        out["third_arm"] = third_arm_record(third_arm, kept)
        if out["third_arm"]["kept"]:
            schedule = compact_result(last_round(rounds, "schedule"))
            out.update(candidate=schedule, spec_decode=(schedule or {}).get("spec_decode"),
                       config_after="%s, %s" % ((rung or {}).get("label"), out["third_arm"]["line"]))
    spent = energy.summary(rounds)
    if spent:
        out["energy"] = spent
    fetched = prefetched(prefetch)
    if fetched is not None:
        out["prefetch"] = fetched
    if k_choice is not None:
        out = k_tuned(out, k_choice, probe_k)
    return out


def state_outcome(record, applied_argv, baseline_argv, rung, family, model, run_id):
    """What the host's state file records once the host is done: a refusal, or the verdict
    with what runs now (``applied_argv``: the launch applied last, the kept rung's or the
    baseline's), both benchmarks and the ladder's attempts."""
    status = record.get("status")
    if status in ("refused", "off"):
        # Speculation refused by the rules, or off by the operator's policy: the rollout applied the
        # baseline, which is the last good config.
        return {"status": status, "verdict": {"decision": status, "reasons": record.get("reasons") or []},
                "last_good": {"kind": "baseline", "argv": baseline_argv},
                "info": {"family": family, "model": model, "run_id": run_id, "simulated": bool(record.get("simulated")),
                         "config_after": "baseline"}}
    if status not in ("kept", "reverted"):
        raise RecordError("only a refused, off, kept or reverted host has an outcome to write, got %r" % (status,))
    kept = status == "kept"
    return {"status": status, "verdict": record.get("verdict"),
            "last_good": ({"kind": "candidate", "argv": applied_argv, "rung": (rung or {}).get("label")} if kept
                          else {"kind": "baseline", "argv": baseline_argv}),
            "benchmarks": {"baseline": record.get("baseline"), "candidate": record.get("candidate"),
                           "rounds": record.get("rounds") or []},
            "attempts": record.get("attempts") or [],
            "info": {"family": family, "model": model,
                     "method": (rung or {}).get("vllm_server_speculative_method") if kept else None,
                     "run_id": run_id, "simulated": bool(record.get("simulated")),
                     "config_after": record.get("config_after"), "k_tuning": record.get("k_tuning")}}


def refused(record, refusal):
    """Speculation is off by policy on this host: one reason per rule (the first line names the
    host). The rollout runs the baseline on it (roles/rollout/tasks/main.yml)."""
    lines = str(refusal or "refused").split("\n")
    out = _copy(record)
    out.update(status="refused", reasons=lines[1:] or lines, config_after="baseline")
    return out


def off_by_policy(record, reason):
    """The inventory turns speculation off on this host (vllm_server_speculation: false): the baseline
    runs, nothing is benchmarked. A status of its own (``off``), not a refusal: the operator chose it."""
    out = _copy(record)
    out.update(status="off", reasons=[line for line in str(reason or POLICY_OFF).split("\n") if line.strip()],
               config_after="baseline")
    return out


def is_connection_failure(message):
    text = str(message or "").lower()
    return any(error in text for error in CONNECTION_ERRORS)


def failed(record, error, failed_task="", host=None, run_id=None, jetson=None, facts_root="/",
           unreachable=False, stored=None, rounds=None):
    """The run failed on this host.

    Without a record yet: with the board's facts (``jetson``) the record starts from them;
    without them the first module never answered, and ``unreachable`` or a connection error
    in the message makes the host ``unreachable`` (a stopped container under the docker
    connection fails this way instead of being reported unreachable). ``stored`` is given
    once the run changed the host: the record then says what ran before, and that the
    baseline is being put back (``restore_failed`` corrects it).
    """
    if record:
        out = _copy(record)
    elif jetson:
        out = new_record(host, run_id, jetson, facts_root)
    else:
        out = {"host": host, "run_id": run_id, "attempts": [], "reasons": []}
    no_answer = not record and not jetson and (bool(unreachable) or is_connection_failure(error))
    out = bench(out, rounds) if rounds else out
    if stored is not None:
        out = touched(out, stored)
        out["config_after"] = "baseline"
    out.update(status="unreachable" if no_answer else "failed", error=str(error or "unknown failure"),
               failed_task=failed_task or "")
    return out


def restore_failed(record, error=None):
    """After a failure the baseline did not come back either: what runs is unknown."""
    out = _copy(record)
    out.update(config_after="unknown", error="%s Restoring the baseline failed too: %s"
               % (out.get("error") or "", str(error or "unknown failure")[:1000]))
    return out


def finish(record, started, now):
    """The record as published: with the host's wall time."""
    out = _copy(record)
    try:
        seconds = round(float(now) - float(started), 1)
    except (TypeError, ValueError):
        seconds = None
    out["timings"] = {"seconds": seconds}
    return out


def no_record(host):
    """The record of an expected host that never spooled one."""
    return {"host": host, "status": "unreachable", "error": NO_RECORD_ERROR}


def normalize(record):
    """A record as its readers see it: a status always, ``simulated`` a bool."""
    out = dict(record or {})
    out["status"] = out.get("status") or ("failed" if out.get("error") else "unknown")
    out["simulated"] = bool(out.get("simulated"))
    return out


def with_missing(records, expected_hosts):
    """Every record, plus a no-record entry for each expected host without one (order: records, then missing)."""
    records = [normalize(r) for r in records or []]
    seen = set(r.get("host") for r in records)
    return records + [no_record(h) for h in expected_hosts or [] if h not in seen]


def stored_acceptance(state_text):
    """The draft acceptance rate the host's last verdict measured, from its state file's text; None when there is none.

    The launch plan allows a k above the family's start only on a measured rate above 0.6 (the skill); the
    verdict advises raising k on that same measurement, so the rollout passes it to the plan
    (vllm_server_measured_acceptance). A missing, unreadable or corrupt state file has none.
    """
    if not isinstance(state_text, str) or not state_text.strip():
        return None
    try:
        state = json.loads(state_text)
    except ValueError:
        return None
    verdict = state.get("verdict") if isinstance(state, dict) else None
    metrics = verdict.get("metrics") if isinstance(verdict, dict) else None
    rate = metrics.get("acceptance_rate") if isinstance(metrics, dict) else None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
        return None
    return float(rate)
