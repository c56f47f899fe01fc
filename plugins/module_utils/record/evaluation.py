# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""One host's evaluation as a pure state machine (jetson.specdec.rollout_evaluate runs it).

The evaluation, in the order it runs on the host:

1. the baseline: switch to it, hold the clocks (rollout_bench_hold_clocks), benchmark it, mark the host
   pending, fetch the candidate's models (rollout_prefetch);
2. the fallback ladder: start the first rung as a trial; a rung that fails is recorded (with the rung its
   cause names next) and the next one tried, until one starts or none is left;
3. k tuning (rollout_tune_k): the start k, the probe k, the predicted k when no round measured it, the
   best measured k kept (docs/tuning.md);
4. the rounds of the sequential verdict, the arms interleaved as the verdict asks, until it settles;
5. the third arm (rollout_third_arm): a candidate reverted for a regression above the judged level is
   measured at the levels between (the threshold probe) and judged again as a batch-size schedule;
6. the final switch (keep the candidate as the unit's launch, or revert to the baseline) and the outcome
   written into the host's state.

``next_step(state, ctx)`` returns the state moved through the phases that need nothing from the host and
the next remote step (a dict whose ``do`` is switch, bench, write, prefetch, hold, skip_rung, hook, fail or
done); ``take(state, ctx, step, result)`` is the state after that step returned ``result``. Both are pure
(neither changes its arguments): the action executes the steps, a unit test drives every transition with
made-up results. The state is plain data, so the action can hand it to YAML at an operator's hook and
take it back.

``ctx`` holds what does not change during the evaluation: the plan's fallback rungs, the rollout's
settings, whether k is tuned, clocks held, models fetched, hooks run, and what the outcome records.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.jetson.specdec.plugins.module_utils.bench.equivalence import EquivalenceError, gate
from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec
from ansible_collections.jetson.specdec.plugins.module_utils.verdict import third_arm as third
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.choose_k import ChooseKError, choose_k, keep_k, next_k
from ansible_collections.jetson.specdec.plugins.module_utils.vllm.failure import classify_failure

PROBE = "probe"
THRESHOLD_PROBE = "threshold probe"
# Phases that are not rounds of the verdict: their results are kept apart (k_rounds, the threshold probe).
NOT_ROUNDS = (PROBE, THRESHOLD_PROBE)
MESSAGE_LIMIT = 1500


class EvaluationError(ValueError):
    """A context or state the machine cannot run (the message names the field)."""


def start(record):
    """The state before the first step: ``record`` is the host's record as the lock left it."""
    return {"phase": "baseline", "record": copy.deepcopy(dict(record or {})), "rounds": [], "verdict": None,
            "k_rounds": [], "k_start": None, "k_prediction": None, "k_next": None, "k_choice": None,
            "third_arm": None, "probe_arms": [], "probe": {}, "schedule": None,
            "waits": [], "prefetched": None, "speculating": None, "launch": None,
            "steps": 0, "hooked": -1, "notes": [], "printed": 0, "error": None, "written": None,
            "lock_lost": False}


def check_context(ctx):
    """``ctx`` with its shape checked: EvaluationError naming the first field that is wrong."""
    if not isinstance(ctx, dict):
        raise EvaluationError("the evaluation's context must be a dict, got %r" % (ctx,))
    rungs = ctx.get("rungs")
    if not isinstance(rungs, list) or not all(isinstance(r, dict) for r in rungs):
        raise EvaluationError("plan.candidate.rungs must be a list of rungs (the launch plan's fallback ladder)")
    settings = ctx.get("settings")
    if not isinstance(settings, dict) or not isinstance(settings.get("verdict"), dict) \
            or not isinstance(settings.get("levels"), list):
        raise EvaluationError("settings must be the checked rollout settings (jetson.specdec.rollout_settings: "
                              "verdict, ttft, equivalence, levels, third_arm)")
    tune = ctx.get("tune_k")
    if tune is not None and (not isinstance(tune, dict) or isinstance(tune.get("max"), bool)
                             or not isinstance(tune.get("max"), int) or tune["max"] < 1):
        raise EvaluationError("tune_k must be null (k not tuned) or {max: the probe k, a positive integer}, "
                              "got %r" % (tune,))
    return ctx


# -- what the machine reads -------------------------------------------------------------------------------

def ladder(state, ctx):
    """Where the fallback ladder stands (record.ladder): {next, rung, exhausted}."""
    return rec.ladder(state["record"], ctx["rungs"])


def current_k(state):
    """The k every candidate start uses: the tuned k once chosen (0 when tuning failed), else 0 (the board's)."""
    return int((state.get("k_choice") or {}).get("k") or 0)


def round_arm(state):
    """The arm the verdict asks the next round of."""
    return ((state.get("verdict") or {}).get("next_round") or {}).get("arm") or "candidate"


def round_levels(state, ctx):
    """The levels the next round measures: every measured level but those the verdict judges and did not ask for
    (``next_round.levels``: a settled level is not measured again while another is open). A level measured but not
    judged (c=1 when the operator's expected concurrency is judged) is measured in every round, as before."""
    verdict = state.get("verdict") or {}
    asked = (verdict.get("next_round") or {}).get("levels")
    levels = list(ctx["settings"]["levels"])
    metrics = verdict.get("metrics") or {}
    judged = [metrics.get("low_concurrency")] + list(metrics.get("regression_levels") or [])
    if not asked or not any(c in asked for c in levels):
        return levels
    return [c for c in levels if c in asked or c not in judged]


def in_schedule(state):
    """The third arm's schedule is being judged (its rounds are the candidate's)."""
    return bool((state.get("third_arm") or {}).get("try")) and state.get("schedule") is not None


def serving_of(state):
    """The last switch's wait (its serving gap): each benchmark keeps it, the record counts each restart once."""
    return dict(((state.get("launch") or {}).get("serving")) or {})


def baseline_compact(state):
    """The latest baseline round without per-request lists (what k tuning compares with)."""
    return rec.compact_result(rec.last_round(state["rounds"], "baseline"))


def failure_text(result, default):
    """A failed step's whole message (``detail`` when the switch shortened ``msg``), at most 1500 characters."""
    result = result or {}
    return str(result.get("detail") or result.get("msg") or default)[:MESSAGE_LIMIT]


def decide(state, ctx, broke=None):
    """The verdict of every round so far (record.run_verdict), then the equivalence gate (lossy)."""
    settings = ctx["settings"]
    if broke is not None:
        return rec.run_verdict(state["record"], state["rounds"], ctx["rungs"], broke, settings["verdict"])
    verdict = rec.run_verdict(state["record"], state["rounds"], ctx["rungs"], None, settings["verdict"],
                              settings.get("ttft"))
    return gate(verdict, state["rounds"], settings.get("equivalence"))


# -- the steps ----------------------------------------------------------------------------------------------

def _switch(state, ctx, arm, k=None, trial=None, final=False):
    """A switch to ``arm``; the candidate at ``k`` (None: the current k), a trial unless ``final``."""
    step = {"do": "switch", "arm": arm, "final": final}
    if arm == "candidate":
        rung = ladder(state, ctx)["rung"]
        step.update(rung=rung, label=(rung or {}).get("label"), k=current_k(state) if k is None else int(k),
                    trial=(not final) if trial is None else trial, schedule=state.get("schedule"), quiet=True)
    else:
        step.update(rung=None, label="baseline", k=current_k(state), trial=False, schedule=None, quiet=False)
    if ctx.get("hooks", {}).get("before_restart") and state["hooked"] != state["steps"]:
        # the operator's hook runs before every switch (rollout_hook_before_restart): YAML runs it
        return {"do": "hook", "event": "before_restart", "arm": arm, "label": step["label"], "then": step}
    return step


def _bench(state, ctx, phase, levels=None, k=None):
    settings = ctx["settings"]
    equivalence = settings.get("equivalence") or {}
    step = {"do": "bench", "phase": phase, "levels": list(levels or settings["levels"]), "answers": None}
    if equivalence.get("enabled") and phase not in NOT_ROUNDS:
        # the first baseline answers twice: the control of the equivalence check
        first = phase == "baseline" and not state["rounds"]
        step["answers"] = {"prompts": equivalence.get("prompts"), "max_tokens": equivalence.get("max_tokens"),
                           "passes": 2 if first else 1}
    if phase not in NOT_ROUNDS:
        step["prompt_set"] = prompt_set(state, phase)
    if k is not None:
        step["k"] = int(k)
    return step


def prompt_set(state, phase):
    """The prompts a round of ``phase`` draws (vllm_bench prompt_set): the i-th round of each arm draws set i, so
    every pair of a baseline and a candidate round meets prompts of the workload the earlier pairs did not, and
    both arms of the pair the same ones: the pair's comparison is free of which prompts it drew, the rounds
    together sample the workload (a fixed set would narrow the interval around that set's own effect)."""
    return sum(1 for entry in state["rounds"] if entry.get("phase") == phase)


def _copy(state):
    """A copy of ``state`` the machine may change: the lists it appends to and the dict it fills are new, the rest
    is shared (rounds, results and records are replaced, never changed in place). A deep copy of every per-request
    list at every step was most of the machine's controller CPU on a host with many rounds."""
    out = dict(state)
    for key in ("rounds", "k_rounds", "waits", "notes", "probe_arms"):
        out[key] = list(state.get(key) or [])
    out["probe"] = dict(state.get("probe") or {})
    return out


def next_step(state, ctx):
    """(state, step): ``state`` moved through the phases that need no remote step, and the next remote step."""
    state = _copy(state)
    return state, _next(state, ctx)


def _next(state, ctx):
    """The next remote step; phases that need none are run here, on ``state`` (a copy next_step made)."""
    phase = state["phase"]
    if phase == "failed":
        return {"do": "fail", "msg": state["error"], "lock_lost": state.get("lock_lost", False)}
    if phase == "done":
        return {"do": "done"}
    if phase == "baseline":
        return _switch(state, ctx, "baseline")
    if phase == "hold":
        return {"do": "hold"}
    if phase == "bench_baseline":
        return _bench(state, ctx, "baseline")
    if phase == "pending":
        return {"do": "write", "what": "pending"}
    if phase == "prefetch":
        return {"do": "prefetch"}
    if phase == "rung":
        where = ladder(state, ctx)
        if where["exhausted"]:
            state["verdict"] = decide(state, ctx)  # the ladder's revert (no rung started), flagged
            return _advance(state, ctx, "final")
        model = where["rung"].get("vllm_server_speculative_model")
        unavailable = (state.get("prefetched") or {}).get("unavailable") or {}
        if model and model in unavailable:
            # vLLM could not load it either: the rung fails without a restart
            return {"do": "skip_rung", "msg": str(unavailable[model])}
        return _switch(state, ctx, "candidate")
    if phase == "attempt":
        return {"do": "write", "what": "attempt"}
    if phase == "k_start":
        if state["k_start"] < ctx["tune_k"]["max"]:
            return _bench(state, ctx, PROBE, k=state["k_start"])
        return _advance(state, ctx, "k_probe_switch")
    if phase == "k_probe_switch":
        return _switch(state, ctx, "candidate", k=ctx["tune_k"]["max"])
    if phase == "k_probe_bench":
        return _bench(state, ctx, PROBE, k=ctx["tune_k"]["max"])
    if phase == "k_confirm_switch":
        return _switch(state, ctx, "candidate", k=state["k_next"])
    if phase == "k_confirm_bench":
        return _bench(state, ctx, PROBE, k=state["k_next"])
    if phase in ("k_kept_switch", "k_restore_switch"):
        return _switch(state, ctx, "candidate")
    if phase == "rounds":
        if (state.get("verdict") or {}).get("decision") != "continue":
            return _advance(state, ctx, "final" if in_schedule(state) else "third_arm")
        arm = round_arm(state)
        if state["speculating"] is not (arm == "candidate"):  # None (a start failed): switch
            return _switch(state, ctx, arm)
        return _bench(state, ctx, "schedule" if arm == "candidate" and in_schedule(state) else arm,
                      levels=round_levels(state, ctx))
    if phase == "third_arm":
        return _advance(state, ctx, "third_arm")
    if phase == "probe":
        arm = state["probe_arms"][0]
        if state["speculating"] is not (arm == "candidate"):
            return _switch(state, ctx, arm)
        return _bench(state, ctx, THRESHOLD_PROBE, levels=state["third_arm"]["probe_levels"])
    if phase == "schedule_start":
        return _switch(state, ctx, "candidate")
    if phase == "final":
        return _switch(state, ctx, "candidate" if (state.get("verdict") or {}).get("action") == "keep" else "baseline",
                       trial=False, final=True)
    if phase == "outcome":
        return {"do": "write", "what": "outcome"}
    raise EvaluationError("unknown phase %r" % (phase,))


def _advance(state, ctx, phase):
    """The next step after a phase that needs no remote step (``phase`` runs its pure part first)."""
    if phase == "third_arm":
        _plan_third_arm(state, ctx)
    else:
        state["phase"] = phase
    return _next(state, ctx)


# -- the results --------------------------------------------------------------------------------------------

def take(state, ctx, step, result):
    """The state after ``step`` returned ``result`` (a module's or action's result dict)."""
    state = _copy(state)
    result = result if isinstance(result, dict) else {"failed": True, "msg": "no result: %r" % (result,)}
    do = step["do"]
    if do == "hook":
        state["hooked"] = state["steps"]
        return state
    state["steps"] += 1
    if result.get("lock_lost") or result.get("heartbeat_failed"):
        # another run holds the host now: stop touching it (main.yml's rescue leaves it to that run)
        return _fail(state, failure_text(result, "this run lost its rollout lock"), lock_lost=True)
    if do == "switch":
        return _took_switch(state, ctx, step, result)
    if do == "bench":
        return _took_bench(state, ctx, step, result)
    if do == "skip_rung":
        return _rung_failed(state, ctx, step.get("msg"), classify_failure(step.get("msg") or ""))
    if do == "hold":
        if result.get("failed"):
            return _fail(state, failure_text(result, "holding the clocks failed"))
        state["phase"] = "bench_baseline"
        return state
    if do == "prefetch":
        if result.get("failed"):
            return _fail(state, failure_text(result, "the prefetch failed"))
        state["prefetched"] = _prefetch_kept(result)
        state["phase"] = "rung"
        return state
    if do == "write":
        if result.get("failed"):
            return _fail(state, failure_text(result, "writing the host's state failed"))
        if step["what"] == "pending":
            state["phase"] = "prefetch" if ctx.get("prefetch") else "rung"
        elif step["what"] == "attempt":
            state["phase"] = "rung"
        else:
            state["written"] = dict(result)
            state["phase"] = "done"
        return state
    raise EvaluationError("unknown step %r" % (do,))


def _fail(state, message, lock_lost=False):
    state.update(phase="failed", error=str(message), lock_lost=bool(lock_lost))
    return state


def _prefetch_kept(result):
    keep = ("models", "unavailable", "changed", "skipped", "msg")
    return dict((k, result.get(k)) for k in keep if k in result)


def _took_switch(state, ctx, step, result):
    arm, phase = step["arm"], state["phase"]
    failed = bool(result.get("failed"))
    launch = dict((k, v) for k, v in result.items() if k not in ("failed", "msg", "detail", "changed"))
    if launch:
        state["launch"] = launch
    if not failed:
        state["speculating"] = arm == "candidate"
    else:
        state["speculating"] = None  # what runs after a failed start is not known: the next arm switches
    if phase == "baseline":
        if failed:
            return _fail(state, failure_text(result, "the baseline did not start"))
        state["phase"] = "hold" if ctx.get("hold_clocks") else "bench_baseline"
        return state
    if phase == "rung":
        if failed:
            cause = result.get("cause") or classify_failure(failure_text(result, ""))
            return _rung_failed(state, ctx, failure_text(result, "the candidate did not start"), cause)
        state["phase"] = "k_start" if ctx.get("tune_k") else "rounds"
        if ctx.get("tune_k"):
            spec = ((state["launch"] or {}).get("plan") or {}).get("speculative_config") or {}
            state.update(k_start=int(spec.get("num_speculative_tokens") or 0), k_rounds=[])
        return state
    if phase.startswith("k_"):
        if failed:
            if phase == "k_restore_switch":
                return _fail(state, failure_text(result, "the candidate did not start again at the board's k"))
            return _k_failed(state, failure_text(result, "k tuning failed"))
        state["phase"] = {"k_probe_switch": "k_probe_bench", "k_confirm_switch": "k_confirm_bench"}.get(phase, "rounds")
        return state
    if phase in ("rounds", "probe"):
        if failed:
            return _arm_broke(state, ctx, arm, failure_text(result, "the switch failed"))
        return state
    if phase == "schedule_start":
        if failed:
            return _schedule_off(state, "schedule.failed: " + failure_text(result, "the schedule failed"))
        state["phase"] = "rounds"
        return state
    if phase == "final":
        if failed:
            return _fail(state, failure_text(result, "the final switch failed"))
        return _judge(state, ctx)
    raise EvaluationError("a switch in phase %r" % (phase,))


def _rung_failed(state, ctx, message, cause):
    rung = ladder(state, ctx)["rung"]
    # the memory the last switch measured (a failed start's own check; else the plan's)
    headroom = (((state.get("launch") or {}).get("candidate")) or {}).get("headroom")
    state["record"] = rec.add_attempt(state["record"], rung, False, cause or "unknown", message, rungs=ctx["rungs"],
                                      headroom=headroom)
    attempt = state["record"]["attempts"][-1]
    state["notes"].append("%s %s" % (attempt.get("summary"), attempt.get("next") or ""))
    state["verdict"] = decide(state, ctx)
    state["phase"] = "attempt"
    return state


def _k_failed(state, message):
    state["k_choice"] = {"k": 0, "failed": str(message)[:MESSAGE_LIMIT]}
    state["phase"] = "k_restore_switch"
    return state


def _arm_broke(state, ctx, arm, message):
    """A round's (or the threshold probe's) arm failed: the baseline fails the host; the candidate is reverted."""
    if arm == "baseline":
        return _fail(state, message)
    first_line = (message.strip().splitlines() or [""])[0][:300]
    if state["phase"] == "probe":
        state["notes"].append("the candidate broke during the threshold probe, no third arm: %s" % first_line)
        third_arm = dict(state["third_arm"], probe_levels=[], reason="schedule.probe_failed: " + message)
        third_arm["try"] = False
        state["third_arm"] = third_arm
        return _third_arm_decided(state)
    state["notes"].append("the candidate broke during a round, it is reverted: %s" % first_line)
    if in_schedule(state):
        return _schedule_off(state, "schedule.failed: " + message)
    state["verdict"] = decide(state, ctx, broke=message)
    state["phase"] = "third_arm"
    return state


def _took_bench(state, ctx, step, result):
    phase = step["phase"]
    if result.get("failed"):
        message = failure_text(result, "benchmark failed")
        if phase == "baseline" and state["phase"] == "bench_baseline":
            return _fail(state, message)
        if phase == PROBE:
            return _k_failed(state, message)
        arm = state["probe_arms"][0] if phase == THRESHOLD_PROBE else ("baseline" if phase == "baseline" else "candidate")
        return _arm_broke(state, ctx, arm, message)
    kept = rec.bench_result(result)
    serving = serving_of(state)
    state["waits"].append({"serving_gap_s": serving.get("serving_gap_s"),
                           "stopped_at_monotonic": serving.get("stopped_at_monotonic")})
    if phase == PROBE:
        state["k_rounds"].append({"k": int(step["k"]), "result": kept})
        return _k_next(state, ctx)
    if phase == THRESHOLD_PROBE:
        arm = state["probe_arms"].pop(0)
        state["probe"][arm] = kept
        if not state["probe_arms"]:
            return _threshold_chosen(state, ctx)
        return state
    entry = {"phase": phase, "result": kept, "serving": serving}
    if step["levels"] != list(ctx["settings"]["levels"]):
        entry["levels"] = list(step["levels"])  # asked at the open levels only: the verdict reads which
    if result.get("started_at") is not None:
        entry["at"] = result["started_at"]  # the action's clock when the benchmark started (the record's evidence line)
    state["rounds"].append(entry)
    try:
        state["verdict"] = decide(state, ctx)
    except EquivalenceError as exc:
        return _fail(state, "jetson.specdec.rollout_equivalence: %s" % exc)
    if state["phase"] == "bench_baseline":
        state["phase"] = "pending"
    return state


def _k_next(state, ctx):
    """After a k round's benchmark: the probe k next, then the k spec_next_k asks for (the prediction's
    confirmation, a neighbour of the best measured k), then the kept k."""
    phase, top = state["phase"], ctx["tune_k"]["max"]
    method = (ladder(state, ctx)["rung"] or {}).get("vllm_server_speculative_method")
    if phase == "k_start":
        state["phase"] = "k_probe_switch"
        return state
    start = min(state["k_start"], top)
    try:
        if phase == "k_probe_bench":
            probe = [r for r in state["k_rounds"] if r["k"] == top][0]
            others = [r for r in state["k_rounds"] if r["k"] != top]
            state["k_prediction"] = choose_k(probe["result"], baseline_compact(state), top, method=method,
                                             others=others)
        measure = next_k(state["k_rounds"], baseline_compact(state), start, method=method)
        if measure["k"] is not None:
            state["k_next"] = measure["k"]
            state["notes"].append("k tuning: %s" % measure["why"])
            state["phase"] = "k_confirm_switch"
            return state
        prediction = state["k_prediction"]
        kept = keep_k(state["k_rounds"], baseline_compact(state), start, predicted_k=prediction["k"], method=method)
    except (ChooseKError, KeyError, IndexError, TypeError, ValueError) as exc:
        return _k_failed(state, "spec_choose_k: %s" % exc)
    choice = dict(prediction)
    choice.update(kept)
    choice.update(predicted_k=prediction["k"], measured_k=[r["k"] for r in state["k_rounds"]],
                  reasons=list(prediction.get("reasons") or []) + list(kept.get("reasons") or []))
    state["k_choice"] = choice
    state["phase"] = "k_kept_switch" if choice["k"] != state["k_rounds"][-1]["k"] else "rounds"
    return state


def _third_arm_inputs(ctx):
    spec = ((ctx.get("candidate_plan") or {}).get("speculative_config")) or {}
    settings = ctx["settings"]
    arm = settings.get("third_arm") or {}
    return spec, settings, arm


def _plan_third_arm(state, ctx):
    """Whether the third arm runs (verdict/third_arm.plan), and its threshold probe's arms."""
    verdict = state.get("verdict") or {}
    spec, settings, arm = _third_arm_inputs(ctx)
    if not arm.get("enabled") or verdict.get("action") != "revert" or ladder(state, ctx)["exhausted"]:
        state["phase"] = "final"
        return state
    plan = third.plan(verdict, settings["verdict"], True, arm.get("vllm_version"), spec.get("method"),
                      current_k(state) or spec.get("num_speculative_tokens") or 0, ctx.get("max_batch") or 256,
                      measure_between=bool(arm.get("measure_between", True)))
    plan["candidate_verdict"] = verdict
    state["third_arm"] = plan
    if plan.get("try") and plan.get("probe_levels"):
        # the arm that serves now first: one restart for both
        state["probe_arms"] = ["candidate", "baseline"] if state["speculating"] is True else ["baseline", "candidate"]
        state["probe"] = {}
        state["phase"] = "probe"
        return state
    return _third_arm_decided(state)


def _threshold_chosen(state, ctx):
    spec, settings, arm = _third_arm_inputs(ctx)
    before = state["third_arm"]
    try:
        plan = third.plan(before["candidate_verdict"], settings["verdict"], True, arm.get("vllm_version"),
                          spec.get("method"), before["k"], ctx.get("max_batch") or 256, probe=state["probe"],
                          measure_between=bool(arm.get("measure_between", True)))
    except (TypeError, ValueError, KeyError) as exc:
        plan = dict(before, probe_levels=[], reason="schedule.probe_failed: %s" % exc)
        plan["try"] = False
    plan["candidate_verdict"] = before["candidate_verdict"]
    state["third_arm"] = plan
    return _third_arm_decided(state)


def _third_arm_decided(state):
    plan = state["third_arm"]
    if plan.get("try"):
        state["notes"].append("third arm: the schedule %s (%s)" % (plan.get("line"), plan.get("reason")))
        state["schedule"] = plan.get("schedule")
        state["verdict"] = {"decision": "continue", "action": "measure_more", "next_round": {"arm": "candidate"}}
        state["phase"] = "schedule_start"
    else:
        state["notes"].append("no third arm: %s" % plan.get("reason"))
        state["phase"] = "final"
    return state


def _schedule_off(state, reason):
    """The schedule did not start or broke: the candidate's own verdict (revert) stands."""
    plan = dict(state["third_arm"], reason=reason[:MESSAGE_LIMIT])
    plan["try"] = False
    state.update(third_arm=plan, verdict=plan.get("candidate_verdict"), schedule=None, phase="final")
    return state


def _judge(state, ctx):
    """The final switch is done: the judged record (record.judged) and the outcome to write."""
    where = ladder(state, ctx)
    waits = list(state["waits"]) + [serving_of(state)]
    probe_k = (ctx.get("tune_k") or {}).get("max") or ctx.get("probe_k")
    state["record"] = rec.judged(state["record"], state["verdict"], state["rounds"], where["rung"], ctx.get("stored"),
                                 waits=waits, prefetch=state.get("prefetched"), k_choice=state.get("k_choice"),
                                 probe_k=probe_k, third_arm=state.get("third_arm"))
    state["phase"] = "outcome"
    return state


def outcome(state, ctx):
    """What the host's state file records now (record.state_outcome), from the judged record."""
    out = ctx["outcome"]
    return rec.state_outcome(state["record"], (state.get("launch") or {}).get("argv"), out["baseline_argv"],
                             ladder(state, ctx)["rung"], out["family"], out["model"], out["run_id"])


def pending_write(state, ctx):
    """rollout_state's options for the pending mark (its token makes it the lock's heartbeat too)."""
    out = ctx["outcome"]
    args = {"state": "write", "path": ctx["lock"]["path"], "token": ctx["lock"]["token"], "config": out["config"],
            "status": "pending", "last_good": {"kind": "baseline", "argv": out["baseline_argv"]},
            "benchmarks": {"baseline": baseline_compact(state)},
            "info": {"family": out["family"], "model": out["model"], "run_id": out["run_id"],
                     "simulated": rec.bench(state["record"], state["rounds"])["simulated"],
                     "config_after": "baseline"}}
    if out.get("textfile_dir"):
        args["textfile_dir"] = out["textfile_dir"]
    return args


def write_args(state, ctx, what):
    """rollout_state's options for the write ``what`` (pending, attempt, outcome)."""
    if what == "pending":
        return pending_write(state, ctx)
    lock = ctx["lock"]
    if what == "attempt":
        return {"state": "write", "path": lock["path"], "token": lock["token"],
                "attempt": state["record"]["attempts"][-1]}
    out = ctx["outcome"]
    args = {"state": "write", "path": lock["path"], "token": lock["token"], "config": out["config"],
            "outcome": outcome(state, ctx)}
    if out.get("textfile_dir"):
        args["textfile_dir"] = out["textfile_dir"]
    return args


def switch_args(base, step, ctx):
    """jetson.specdec.vllm_switch's options for ``step``, from ``base`` (the role's switch inputs for the baseline,
    vllm_server's ``switch_inputs`` entry point): the arm, the rung's method, model and utilization drop, k, the
    schedule, trial, and the memory check on the candidate."""
    args = copy.deepcopy(base)
    launch_input = args["launch_input"]
    plan = launch_input["plan"]
    candidate = step["arm"] == "candidate"
    rung = step.get("rung") or {}
    if candidate:
        if "vllm_server_speculative_method" in rung:
            plan["method"] = rung["vllm_server_speculative_method"]
        if "vllm_server_speculative_model" in rung:
            plan["spec_model"] = rung["vllm_server_speculative_model"]
        if "vllm_server_speculative_utilization_drop" in rung:
            plan["utilization_drop"] = launch_input["utilization_drop"] = rung["vllm_server_speculative_utilization_drop"]
        if step.get("schedule"):
            plan["spec_extra"] = dict(plan.get("spec_extra") or {}, num_speculative_tokens_per_batch_size=step["schedule"])
    k_inputs = ctx.get("k_inputs") or {}
    plan.update(speculation=candidate, k=int(step.get("k") or 0), k_tuning=bool(k_inputs.get("k_tuning")),
                measured_acceptance=k_inputs.get("measured_acceptance"))
    args.update(check_memory=candidate, trial=bool(step.get("trial")),
                reclaim_baseline=bool(ctx.get("reclaim_baseline")))
    return args


def plan_lines(ctx):
    """What the evaluation would do, in order (check mode): the steps before any result decides the rest."""
    lines = ["switch to the baseline"]
    if ctx.get("hold_clocks"):
        lines.append("hold MAXN and jetson_clocks")
    lines += ["benchmark the baseline at concurrency %s" % ", ".join(str(c) for c in ctx["settings"]["levels"]),
              "mark the host pending"]
    if ctx.get("prefetch"):
        lines.append("fetch the candidate's models")
    rungs = [r.get("label") for r in ctx["rungs"][:-1]]
    lines.append("start the candidate as a trial (the ladder: %s)" % (", ".join(str(r) for r in rungs) or "no rung"))
    if ctx.get("tune_k"):
        lines.append("tune k up to %d" % ctx["tune_k"]["max"])
    lines += ["measure rounds until the verdict settles", "keep the candidate or revert to the baseline",
              "write the outcome"]
    return lines
