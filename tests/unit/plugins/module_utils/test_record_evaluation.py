# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""One host's evaluation as a pure state machine (record/evaluation.py): every transition driven by a made-up
board - a switch, a benchmark, a write each answer what the host would - in milliseconds."""
import copy
import json
import random

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import evaluation as ev
from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.settings import rollout_settings

JETSON = {"family": "thor", "variant": "t5000", "model": "NVIDIA Jetson AGX Thor", "l4t": {"release": "39.2"},
          "memory_total_bytes": 128 * 2 ** 30, "power_mode": {"name": "MAXN"}}
RUNGS = [{"rung": 0, "label": "eagle3 at utilization 0.70", "step": "planned", "vllm_server_speculative_method": "eagle3",
          "vllm_server_speculative_model": "org/head", "vllm_server_speculative_utilization_drop": 0.05},
         {"rung": 1, "label": "eagle3 at utilization 0.65", "step": "lower_utilization",
          "vllm_server_speculative_method": "eagle3", "vllm_server_speculative_model": "org/head",
          "vllm_server_speculative_utilization_drop": 0.1},
         {"rung": 2, "label": "ngram at utilization 0.65", "step": "smaller_speculation",
          "vllm_server_speculative_method": "ngram", "vllm_server_speculative_model": "",
          "vllm_server_speculative_utilization_drop": 0.1},
         {"rung": 3, "label": "speculation off (baseline)", "step": "off", "vllm_server_speculation": False}]
THRESHOLDS = {"keep_throughput_gain": 0.3, "keep_tpot_drop": 0.2, "revert_throughput_gain": 0.1,
              "c8_regression_tolerance": 0.05, "marginal_action": "revert", "z": 2.0, "min_rounds": 3,
              "max_rounds": 12, "round_prompts": 30}
BASE_TPOT = 50.0
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def settings(third_arm=False, equivalence=False, levels=(1, 8)):
    bench = {"concurrency": list(levels), "output_len": 128, "output_range_ratio": 0,
             "third_arm": {"enabled": third_arm, "vllm_version": "0.32.0", "measure_between": True},
             "equivalence": {"enabled": equivalence, "prompts": 2, "max_tokens": 16, "margin": 0.2}}
    return rollout_settings(bench, THRESHOLDS)


def context(**extra):
    ctx = {"rungs": RUNGS, "candidate_plan": {"speculative_config": {"method": "eagle3", "num_speculative_tokens": 5}},
           "settings": settings(), "tune_k": None, "prefetch": False, "hold_clocks": False, "hooks": {},
           "k_inputs": {}, "reclaim_baseline": True, "max_batch": 256, "stored": {},
           "lock": {"path": "/var/lib/jetson-specdec/rollout-state.json", "token": "tok"},
           "outcome": {"config": {"baseline": ["vllm", "serve"]}, "family": "thor", "model": "org/target",
                       "run_id": "run", "textfile_dir": "/var/lib/node_exporter", "baseline_argv": ["vllm", "serve", "m"]}}
    ctx.update(extra)
    return ev.check_context(ctx)


def level(rng, conc, n, tok_s, tpot_ms, cv=0.04):
    e2e = 128 * 1000.0 / tok_s * conc
    reqs = [{"ok": True, "ttft_ms": 50.0, "tpot_ms": tpot_ms * rng.lognormvariate(0, cv),
             "e2e_ms": e2e * rng.lognormvariate(0, cv), "output_tokens": 128,
             "start_s": i * e2e / 1000.0 / conc, "end_s": (i + 1) * e2e / 1000.0 / conc} for i in range(n)]
    return {"concurrency": conc, "completed": n, "failed": 0, "output_tokens": 128 * n,
            "duration_s": n * e2e / 1000.0 / conc, "throughput_tok_s": tok_s, "tpot_ms_p50": tpot_ms,
            "errors": {}, "requests": reqs}


class Board(object):
    """What a host answers: ``truth`` per rung label {level: (tok_s, tpot_ms)} for the candidate, the baseline's
    {1: (20, 50), 8: (400, 60)}; ``fails`` per rung label the start's failure text; ``broken``: the step numbers
    whose benchmark fails; ``lock_lost_at``: the step number from which the lock is another run's."""

    def __init__(self, truth=None, fails=None, broken=(), lock_lost_at=None, start_k=5, k_steps=None):
        self.truth = truth or {}
        self.fails = fails or {}
        self.broken = set(broken)
        self.lock_lost_at = lock_lost_at
        self.start_k = start_k
        self.k_steps = k_steps or {}
        self.rng = random.Random(7)
        self.gaps = 0
        self.running = None  # the candidate's rung label while it serves

    def answer(self, state, step):
        if self.lock_lost_at is not None and state["steps"] >= self.lock_lost_at:
            return {"failed": True, "lock_lost": True, "msg": "the lock is held by run other"}
        do = step["do"]
        if do == "switch":
            if step["arm"] == "candidate" and step["label"] in self.fails:
                return {"failed": True, "msg": self.fails[step["label"]], "speculation": True,
                        "candidate": {"headroom": {"free_bytes": 1}}}
            self.gaps += 1
            self.running = step["label"] if step["arm"] == "candidate" else None
            k = step.get("k") or self.start_k
            return {"changed": True, "argv": ["vllm", "serve", step["arm"], str(k)],
                    "speculation": step["arm"] == "candidate",
                    "plan": {"speculative_config": {"num_speculative_tokens": k}},
                    "serving": {"serving_gap_s": 4.0, "stopped_at_monotonic": float(self.gaps)}}
        if do == "bench":
            if state["steps"] in self.broken:
                return {"failed": True, "msg": "EngineDeadError: the engine died", "detail": "EngineDeadError: long"}
            if step["phase"] == ev.PROBE:
                return self.probe(step["k"])
            arm_truth = {1: (20.0, BASE_TPOT), 8: (400.0, 60.0)}
            if self.running is not None:
                arm_truth = dict(arm_truth)
                arm_truth.update(self.truth.get(self.running, {}))
            out = {"runs": [level(self.rng, c, 30, *arm_truth.get(c, (300.0, 60.0))) for c in step["levels"]],
                   "simulated": True, "wall_s": 60.0, "started_at": 1000.0 + state["steps"]}
            return out
        if do == "hook":
            return {}
        if do in ("write", "prefetch", "hold", "skip_rung"):
            return {"changed": True, "rollout_state": {"status": "x"}}
        raise AssertionError(step)

    def probe(self, k):
        """A candidate at k whose per-position acceptance falls geometrically; the step grows with k."""
        rates = [0.8 ** (i + 1) for i in range(k)]
        length = 1.0 + sum(rates)
        step_s = self.k_steps.get(k, 0.05 + 0.004 * k)
        spec = {"drafts": 2000, "per_position": rates, "mean_acceptance_length": length}
        tpot = step_s / length
        run = {"concurrency": 1, "completed": 10, "output_tokens": 1280, "tpot_ms_p50": tpot * 1000.0,
               "ttft_ms_p50": 0.0, "throughput_tok_s": 128 / (127 * tpot)}
        return {"runs": [dict(run, spec_decode=spec)], "spec_decode": spec}


def run(ctx, board, state=None, limit=500, answers=None):
    """The action's loop: ask, answer, take - until done or failed. Returns the state and every step asked."""
    state = state or ev.start(rec.new_record("h", "run", JETSON, "/opt/jetson-sim/root"))
    steps = []
    for unused in range(limit):
        given, snapshot = state, copy.deepcopy(state)
        state, step = ev.next_step(given, ctx)
        assert given == snapshot, "next_step changed the state it was given"
        assert json.loads(json.dumps(state)) == state  # plain data: YAML can carry it across a hook
        steps.append(step)
        if step["do"] in ("done", "fail"):
            return state, steps
        result = (answers or board.answer)(state, step)
        before = copy.deepcopy(state)
        taken = ev.take(state, ctx, step, result)
        assert state == before, "take changed the state it was given"
        state = taken
    raise AssertionError("no end after %d steps: %s" % (limit, [s["do"] for s in steps[-10:]]))


def kinds(steps):
    out = []
    for s in steps:
        if s["do"] == "switch":
            out.append("switch %s%s" % (s["arm"], " final" if s.get("final") else ""))
        elif s["do"] == "bench":
            out.append("bench %s" % s["phase"])
        elif s["do"] == "write":
            out.append("write %s" % s["what"])
        else:
            out.append(s["do"])
    return out


GOOD = {"eagle3 at utilization 0.70": {1: (32.0, 30.0), 8: (440.0, 50.0)}}
SLOW = {"eagle3 at utilization 0.70": {1: (17.0, 58.0), 8: (300.0, 70.0)}}


def test_a_clear_keep_runs_baseline_pending_trial_rounds_and_keeps_the_candidate_as_the_unit():
    ctx = context()
    state, steps = run(ctx, Board(GOOD))
    names = kinds(steps)
    assert names[:5] == ["switch baseline", "bench baseline", "write pending", "switch candidate", "bench candidate"]
    assert names[-3:] == ["switch candidate final", "write outcome", "done"]
    trial = [s for s in steps if s["do"] == "switch" and s["arm"] == "candidate"]
    assert [s["trial"] for s in trial] == [True] * (len(trial) - 1) + [False]  # a trial until the keep
    assert all(s["quiet"] for s in trial) and trial[0]["rung"]["rung"] == 0 and trial[0]["k"] == 0
    assert state["verdict"]["action"] == "keep" and state["record"]["status"] == "kept"
    assert state["record"]["config_after"] == "eagle3 at utilization 0.70"
    # each round says when its benchmark started (the action's clock): the evidence of a host's own pace
    starts = [r["at"] for r in state["record"]["rounds"]]
    assert starts == sorted(starts) and starts[0] == 1001.0
    # each restart's serving gap, counted once: the baseline, the candidate, the final switch (no restart there)
    assert state["record"]["serving_gaps"][:2] == [4.0, 4.0]
    written = ev.write_args(dict(state, phase="outcome"), ctx, "outcome")
    assert written["outcome"]["last_good"]["kind"] == "candidate" and written["token"] == "tok"
    assert written["textfile_dir"] == "/var/lib/node_exporter" and written["config"] == ctx["outcome"]["config"]


def test_a_slower_candidate_is_reverted_and_the_baseline_becomes_the_unit_again():
    state, steps = run(context(), Board(SLOW))
    assert kinds(steps)[-3:] == ["switch baseline final", "write outcome", "done"]
    assert steps[-3]["trial"] is False and state["record"]["status"] == "reverted"
    assert state["verdict"]["action"] == "revert"


def test_the_arms_interleave_as_the_verdict_asks_and_only_switch_when_the_other_arm_runs():
    state, steps = run(context(), Board(SLOW))
    arms = [r["phase"] for r in state["rounds"]]
    switches = [s for s in steps if s["do"] == "switch" and not s.get("final")]
    # one switch per change of arm, none between two rounds of the same arm
    changes = 1 + sum(1 for a, b in zip(arms, arms[1:]) if a != b)
    assert len(switches) == changes, (arms, kinds(steps))
    assert all(r["serving"]["serving_gap_s"] == 4.0 for r in state["rounds"])


def test_the_ith_round_of_each_arm_draws_prompt_set_i_and_probes_stay_on_the_first_set():
    ctx = context(settings=settings(third_arm=True))
    state, steps = run(ctx, Board(REGRESSING))
    benches = [s for s in steps if s["do"] == "bench"]
    seen = {}
    for step in benches:
        if step["phase"] in ev.NOT_ROUNDS:
            # the k probe and the threshold probe compare with each other on the workload's first set
            assert "prompt_set" not in step
            continue
        assert step["prompt_set"] == seen.get(step["phase"], 0), [(b["phase"], b.get("prompt_set")) for b in benches]
        seen[step["phase"]] = step["prompt_set"] + 1
    # a pair of rounds shares its prompts, and the pairs rotate through the workload
    assert seen["candidate"] >= 2 and seen.get("schedule", 0) >= 2, seen  # B C C, then the schedule's own rounds
    assert ev.prompt_set({"rounds": [{"phase": "baseline"}, {"phase": "candidate"}, {"phase": "candidate"}]},
                         "candidate") == 2


def test_a_rung_that_does_not_start_is_recorded_written_and_the_next_one_tried():
    board = Board({"eagle3 at utilization 0.65": GOOD["eagle3 at utilization 0.70"]},
                  fails={"eagle3 at utilization 0.70": OOM})
    state, steps = run(context(), board)
    names = kinds(steps)
    assert names[:6] == ["switch baseline", "bench baseline", "write pending", "switch candidate", "write attempt",
                         "switch candidate"]
    assert steps[5]["label"] == "eagle3 at utilization 0.65"
    attempts = state["record"]["attempts"]
    assert attempts[0]["result"] == "failed" and attempts[0]["cause"] == "out_of_memory"
    assert attempts[-1] == {"rung": 1, "label": "eagle3 at utilization 0.65", "result": "started",
                            "summary": "Rung 1 (eagle3 at utilization 0.65) started."}
    assert state["notes"][0].startswith("Rung 0 (eagle3 at utilization 0.70) failed: out_of_memory.")
    assert ev.write_args(dict(state, record=dict(state["record"], attempts=attempts[:1])), context(), "attempt")[
        "attempt"]["cause"] == "out_of_memory"


def test_when_no_rung_starts_the_baseline_is_put_back_without_a_benchmark_of_the_candidate():
    fails = dict((r["label"], OOM) for r in RUNGS[:-1])
    state, steps = run(context(), Board(fails=fails))
    names = kinds(steps)
    assert names.count("write attempt") == 3 and "bench candidate" not in names
    assert names[-3:] == ["switch baseline final", "write outcome", "done"]
    assert state["verdict"]["flagged"] is True and state["record"]["status"] == "reverted"
    assert "every rung of the fallback ladder failed" in state["verdict"]["reasons"][0]


def test_a_plan_whose_ladder_has_no_speculative_rung_reverts_without_a_candidate_start():
    state, steps = run(context(rungs=RUNGS[-1:]), Board(GOOD))
    assert kinds(steps) == ["switch baseline", "bench baseline", "write pending", "switch baseline final",
                            "write outcome", "done"]
    assert state["record"]["status"] == "reverted" and state["verdict"]["flagged"] is True


def test_a_model_the_prefetch_could_not_fetch_fails_its_rung_without_a_restart():
    ctx = context(prefetch=True)
    board = Board(GOOD)

    def answers(state, step):
        if step["do"] == "prefetch":
            return {"changed": True, "models": [{"model": "org/head", "status": "unavailable"}],
                    "unavailable": {"org/head": "401 Client Error: gated repo org/head"}}
        return board.answer(state, step)

    state, steps = run(ctx, board, answers=answers)
    names = kinds(steps)
    # the model cannot be loaded: the ladder goes straight to speculation off (launch/ladder.py), no candidate start
    assert names == ["switch baseline", "bench baseline", "write pending", "prefetch", "skip_rung", "write attempt",
                     "switch baseline final", "write outcome", "done"]
    attempt = state["record"]["attempts"][0]
    assert (attempt["result"], attempt["cause"]) == ("failed", "model_not_found") and "gated repo" in attempt["message"]
    assert state["record"]["prefetch"] == [{"model": "org/head", "status": "unavailable"}]


def test_clocks_are_held_after_the_baseline_starts_and_before_its_benchmark():
    state, steps = run(context(hold_clocks=True), Board(GOOD))
    assert kinds(steps)[:3] == ["switch baseline", "hold", "bench baseline"]


def test_the_first_baseline_answers_twice_for_the_equivalence_control_and_probes_answer_nothing():
    ctx = context(settings=settings(equivalence=True), tune_k={"max": 8})
    board = Board(GOOD, start_k=3)

    def answers(state, step):
        out = board.answer(state, step)
        if step["do"] == "bench" and step["phase"] != ev.PROBE:
            out["answers"] = {"texts": ["x", "y"], "passes": step["answers"]["passes"]}
        return out

    dummy, steps = run(ctx, board, answers=answers)
    benches = [s for s in steps if s["do"] == "bench"]
    assert benches[0]["answers"]["passes"] == 2
    assert all(s["answers"] is None for s in benches if s["phase"] == ev.PROBE)
    assert all(s["answers"]["passes"] == 1 for s in benches[1:] if s["phase"] != ev.PROBE)


def test_a_baseline_that_breaks_fails_the_host_with_its_message():
    state, steps = run(context(), Board(GOOD, broken=[1]))
    assert kinds(steps) == ["switch baseline", "bench baseline", "fail"]
    assert steps[-1]["msg"].startswith("EngineDeadError") and state["phase"] == "failed"


def test_a_candidate_that_breaks_during_a_round_is_reverted_flagged_not_failed():
    # steps: 0 switch baseline, 1 bench baseline, 2 pending, 3 switch candidate, 4 bench candidate (breaks)
    state, steps = run(context(), Board(GOOD, broken=[4]))
    assert kinds(steps)[-3:] == ["switch baseline final", "write outcome", "done"]
    assert state["verdict"]["flagged"] is True and "failed during its benchmark" in state["verdict"]["reasons"][0]
    assert state["notes"][-1].startswith("the candidate broke during a round, it is reverted: EngineDeadError")


CLOSE = {"eagle3 at utilization 0.70": {1: (25.5, 40.0), 8: (400.0, 60.0)}}  # near the 30 % bar: many rounds


def test_a_baseline_that_breaks_in_a_later_round_fails_the_host():
    # find the step of the second baseline round, then break it
    dummy, steps = run(context(), Board(CLOSE))
    second = [i for i, s in enumerate(steps) if s["do"] == "bench" and s["phase"] == "baseline"][1]
    state, steps = run(context(), Board(CLOSE, broken=[second]))
    assert steps[-1]["do"] == "fail" and "EngineDeadError" in steps[-1]["msg"]


def test_a_run_that_lost_its_lock_stops_at_the_next_step_and_says_so():
    state, steps = run(context(), Board(GOOD, lock_lost_at=3))
    assert kinds(steps) == ["switch baseline", "bench baseline", "write pending", "switch candidate", "fail"]
    assert steps[-1]["lock_lost"] is True and "held by run other" in steps[-1]["msg"]


def test_the_before_restart_hook_comes_before_every_switch_once():
    state, steps = run(context(hooks={"before_restart": True}), Board(GOOD))
    for i, step in enumerate(steps):
        if step["do"] == "switch":
            assert steps[i - 1]["do"] == "hook" and steps[i - 1]["then"]["arm"] == step["arm"]
            assert steps[i - 1]["label"] == step["label"]
    assert sum(1 for s in steps if s["do"] == "hook") == sum(1 for s in steps if s["do"] == "switch")


def test_k_is_tuned_on_the_started_rung_then_judged_at_the_kept_k():
    ctx = context(tune_k={"max": 8})
    state, steps = run(ctx, Board(GOOD, start_k=3))
    names = kinds(steps)
    start = names.index("switch candidate")
    assert names[start + 1:start + 4] == ["bench probe", "switch candidate", "bench probe"]
    probes = [s for s in steps if s["do"] == "bench" and s["phase"] == ev.PROBE]
    assert [p["k"] for p in probes][:2] == [3, 8]
    choice = state["k_choice"]
    assert choice["k"] in choice["measured_k"] and choice["predicted_k"] >= 1
    later = [s for s in steps[steps.index(probes[-1]):] if s["do"] == "switch" and s["arm"] == "candidate"]
    assert all(s["k"] == choice["k"] for s in later)  # every later start, the final keep too, runs the kept k
    assert state["record"]["k_tuning"]["probe_k"] == 8 and state["k_rounds"][0]["k"] == 3
    assert not any(r["phase"] == ev.PROBE for r in state["rounds"])  # the probes are not rounds of the verdict


def test_k_rounds_go_on_to_a_neighbour_a_knee_between_measured_k_hides_then_keep_the_best_measured():
    # the step is 30 % dearer from k=5 up (a kernel switch): the rounds at 3 and 8 cannot show that k=4 still pays
    steps = dict((k, BASE_TPOT / 1000.0 * (1.0 + 0.05 * k + (0.3 if k > 4 else 0.0))) for k in range(1, 9))
    state, steps_asked = run(context(tune_k={"max": 8}), Board(GOOD, start_k=3, k_steps=steps))
    probes = [s["k"] for s in steps_asked if s["do"] == "bench" and s["phase"] == ev.PROBE]
    assert probes[:2] == [3, 8] and 4 in probes and len(probes) == len(set(probes)) <= 4
    assert state["k_choice"]["k"] == 4 and state["k_choice"]["measured_k"] == probes
    assert any(n.startswith("k tuning: ") for n in state["notes"])
    later = [s for s in steps_asked[steps_asked.index([s for s in steps_asked if s.get("phase") == ev.PROBE][-1]):]
             if s["do"] == "switch" and s["arm"] == "candidate"]
    assert later and all(s["k"] == 4 for s in later)


def test_a_k_probe_that_fails_leaves_the_candidate_at_the_boards_k():
    ctx = context(tune_k={"max": 8})
    # steps: 0 baseline, 1 bench, 2 pending, 3 candidate, 4 probe at k=3, 5 switch k=8, 6 probe at 8 (breaks)
    state, steps = run(ctx, Board(GOOD, start_k=3, broken=[6]))
    names = kinds(steps)
    assert names[7] == "switch candidate" and steps[7]["k"] == 0
    assert state["k_choice"]["k"] == 0 and "EngineDeadError" in state["k_choice"]["failed"]
    assert state["record"]["k_tuning"]["failed"].startswith("EngineDeadError")
    assert state["record"]["status"] == "kept"


def test_a_start_k_at_the_probe_k_skips_the_start_round():
    state, steps = run(context(tune_k={"max": 5}), Board(GOOD, start_k=5))
    names = kinds(steps)
    start = names.index("switch candidate")
    assert names[start + 1:start + 3] == ["switch candidate", "bench probe"]
    # the one round is the start and the probe: the tuning goes on from it, it does not fail
    choice = state["k_choice"]
    assert "failed" not in choice and choice["measured_k"][0] == 5 and choice["k"] in choice["measured_k"], choice


REGRESSING = {"eagle3 at utilization 0.70": {1: (34.0, 28.0), 8: (250.0, 80.0), 2: (60.0, 30.0), 4: (90.0, 45.0)}}


def test_the_third_arm_probes_the_levels_between_then_judges_the_schedule():
    ctx = context(settings=settings(third_arm=True))
    state, steps = run(ctx, Board(REGRESSING))
    names = kinds(steps)
    probes = [s for s in steps if s["do"] == "bench" and s["phase"] == ev.THRESHOLD_PROBE]
    assert [p["levels"] for p in probes] == [[2, 4], [2, 4]]
    assert sorted(state["probe"]) == ["baseline", "candidate"]  # the arm that served (the candidate) first
    plan = state["third_arm"]
    assert plan["probe"]["levels"] == [2, 4] and set(plan["probe"]["changes"]) == {"2", "4"}
    assert plan["try"] is True and plan["schedule"], plan
    start = [s for s in steps if s["do"] == "switch" and s.get("schedule")]
    assert start and start[0]["trial"] is True and start[-1]["schedule"] == plan["schedule"]
    assert "bench schedule" in names
    assert state["notes"][0].startswith("third arm: the schedule")
    assert state["record"]["third_arm"]["tried"] is True


def test_no_third_arm_when_it_is_off_or_the_candidate_was_kept():
    state, steps = run(context(settings=settings(third_arm=True)), Board(GOOD))
    assert state["third_arm"] is None and "bench threshold probe" not in kinds(steps)
    state, steps = run(context(), Board(REGRESSING))
    assert state["third_arm"] is None and state["verdict"]["action"] == "revert"


def test_switch_args_set_the_arm_rung_k_schedule_trial_and_the_memory_check():
    base = {"launch_input": {"plan": {"speculation": False, "method": "auto", "spec_model": "", "k": 0,
                                      "utilization_drop": 0.05, "spec_extra": {"x": 1}},
                             "utilization_drop": 0.05},
            "check_memory": False, "trial": False, "reclaim_baseline": False, "unit": {"service": "vllm"}}
    ctx = context(k_inputs={"k_tuning": True, "measured_acceptance": 0.7})
    step = {"arm": "candidate", "rung": RUNGS[1], "k": 8, "trial": True, "schedule": [[4, 3], [256, 0]]}
    out = ev.switch_args(base, step, ctx)
    plan = out["launch_input"]["plan"]
    assert (plan["speculation"], plan["method"], plan["spec_model"], plan["k"], plan["utilization_drop"]) == (
        True, "eagle3", "org/head", 8, 0.1)
    assert out["launch_input"]["utilization_drop"] == 0.1
    assert plan["spec_extra"] == {"x": 1, "num_speculative_tokens_per_batch_size": [[4, 3], [256, 0]]}
    assert (plan["k_tuning"], plan["measured_acceptance"]) == (True, 0.7)
    assert (out["check_memory"], out["trial"], out["reclaim_baseline"]) == (True, True, True)
    back = ev.switch_args(base, {"arm": "baseline", "rung": None, "k": 0, "trial": False}, ctx)
    assert back["launch_input"]["plan"]["speculation"] is False and back["check_memory"] is False
    assert back["launch_input"]["plan"]["method"] == "auto" and base["launch_input"]["plan"]["speculation"] is False


def test_the_pending_mark_records_the_baseline_and_that_the_stand_in_answered():
    state = ev.start(rec.new_record("h", "run", JETSON))
    board = Board(GOOD)
    for unused in range(2):
        state, step = ev.next_step(state, context())
        state = ev.take(state, context(), step, board.answer(state, step))
    state, step = ev.next_step(state, context())
    assert step == {"do": "write", "what": "pending"}
    args = ev.write_args(state, context(), "pending")
    assert args["status"] == "pending" and args["last_good"] == {"kind": "baseline", "argv": ["vllm", "serve", "m"]}
    assert args["info"]["simulated"] is True and args["benchmarks"]["baseline"]["runs"][0]["concurrency"] == 1
    assert "requests" not in args["benchmarks"]["baseline"]["runs"][0]


@pytest.mark.parametrize("ctx, field", [
    ({"rungs": None}, "plan.candidate.rungs"),
    ({"settings": {}}, "settings must be"),
    ({"tune_k": {"max": "8"}}, "tune_k must be"),
    ({"tune_k": {"max": 0}}, "tune_k must be"),
])
def test_a_context_that_cannot_run_names_its_field(ctx, field):
    good = context()
    good.update(ctx)
    with pytest.raises(ev.EvaluationError, match=field):
        ev.check_context(good)


def test_plan_lines_say_what_the_evaluation_starts_with():
    lines = ev.plan_lines(context(tune_k={"max": 8}, hold_clocks=True, prefetch=True))
    assert lines[:5] == ["switch to the baseline", "hold MAXN and jetson_clocks", "benchmark the baseline at concurrency 1, 8",
                         "mark the host pending", "fetch the candidate's models"]
    assert "tune k up to 8" in lines


def test_a_candidate_that_breaks_in_the_threshold_probe_ends_the_third_arm_and_is_reverted():
    ctx = context(settings=settings(third_arm=True))
    state, steps = run(ctx, Board(REGRESSING))
    first = [i for i, s in enumerate(steps) if s["do"] == "bench" and s["phase"] == ev.THRESHOLD_PROBE][0]
    # the arm that serves when the probe starts is measured first (no switch before it)
    arm = [s["phase"] for s in steps[:first] if s["do"] == "bench"][-1]
    assert steps[first - 1]["do"] != "switch"
    assert arm == "candidate"  # the candidate's last round settled the revert: it serves, it is probed first
    state, steps = run(ctx, Board(REGRESSING, broken=[first]))
    assert kinds(steps)[-3:] == ["switch baseline final", "write outcome", "done"]
    assert state["third_arm"]["try"] is False and state["third_arm"]["reason"].startswith("schedule.probe_failed: ")
    assert state["notes"][-2].startswith("the candidate broke during the threshold probe, no third arm: EngineDead")
    assert state["record"]["status"] == "reverted"


def test_a_round_the_verdict_asks_at_its_open_level_only_measures_that_level_and_the_record_shows_a_full_one():
    # c=1 clearly better, c=8 a little slower (-3.5 %), near the 5 % tolerance: c=1 settles first
    board = Board(truth={"eagle3 at utilization 0.70": {1: (32.0, 30.0), 8: (386.0, 60.0)}})
    state, steps = run(context(), board)
    rounds = [s for s in steps if s["do"] == "bench" and s["phase"] in ("baseline", "candidate")]
    assert [s["levels"] for s in rounds[:3]] == [[1, 8]] * 3
    narrowed = [i for i, s in enumerate(rounds) if s["levels"] == [8]]
    assert narrowed, [s["levels"] for s in rounds]
    # the state's rounds say which were asked at fewer levels; the verdict reads it (no "has no run")
    entries = [r for r in state["rounds"] if r["phase"] in ("baseline", "candidate")]
    assert [r.get("levels") for r in entries[narrowed[0]:]] == [[8]] * (len(entries) - narrowed[0])
    assert all("levels" not in r for r in entries[:narrowed[0]])
    assert state["verdict"]["decision"] in ("keep", "revert") and "has no run" not in " ".join(state["verdict"]["reasons"])
    # the record's arms are the latest rounds that measured every level
    assert [run_["concurrency"] for run_ in rec.last_round(state["rounds"], "candidate")["runs"]] == [1, 8]
    assert [run_["concurrency"] for run_ in rec.last_round(state["rounds"], "baseline")["runs"]] == [1, 8]


def test_round_levels_follow_next_round_within_the_measured_levels():
    ctx = context()
    judged = {"low_concurrency": 1, "regression_levels": [8]}
    assert ev.round_levels({"verdict": {"next_round": {"arm": "baseline", "levels": [8]}, "metrics": judged}},
                           ctx) == [8]
    assert ev.round_levels({"verdict": {"next_round": {"arm": "baseline"}, "metrics": judged}}, ctx) == [1, 8]
    # a level the host does not measure is never asked for; nothing left means every level
    assert ev.round_levels({"verdict": {"next_round": {"arm": "baseline", "levels": [16]}, "metrics": judged}},
                           ctx) == [1, 8]


def test_a_level_measured_but_not_judged_is_measured_in_every_round():
    # expected concurrency 4: measured 1, 4, 8; judged 4, checked 8; c=1 is measured for the record in every round
    ctx = context(settings=settings(levels=(1, 4, 8)))
    judged = {"low_concurrency": 4, "regression_levels": [8]}
    assert ev.round_levels({"verdict": {"next_round": {"arm": "candidate", "levels": [8]}, "metrics": judged}},
                           ctx) == [1, 8]
    assert ev.round_levels({"verdict": {"next_round": {"arm": "candidate", "levels": [4, 8]}, "metrics": judged}},
                           ctx) == [1, 4, 8]


def test_the_third_arms_evidence_keeps_which_levels_each_round_was_asked():
    rounds = [{"phase": "baseline", "result": {"runs": []}}, {"phase": "candidate", "result": {"runs": []}},
              {"phase": "baseline", "levels": [8], "result": {"runs": []}},
              {"phase": "schedule", "levels": [8], "result": {"runs": []}}]
    kept, dummy = rec.schedule_rounds(rounds, {})
    assert [(r["phase"], r.get("levels")) for r in kept] == [("baseline", None), ("baseline", [8]), ("candidate", [8])]
    assert [r.get("levels") for r in rec.decide_rounds(kept)] == [None, [8], [8]]
