# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""jetson.specdec.rollout_evaluate's action: the machine run to its end in one call, returning at a hook with its
state and going on from it, a failure returning what it had, check mode touching nothing, and each switch built
from vllm_server's switch inputs after the lock is checked."""
import json

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.action import rollout_evaluate
from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec

from ..module_utils.test_record_evaluation import GOOD, JETSON, RUNGS, Board, settings


class _Obj(object):
    pass


def task_args(**extra):
    args = {"record": rec.new_record("h", "run", JETSON, "/opt/jetson-sim/root"),
            "plan": {"baseline": {"argv": ["vllm", "serve", "m"]},
                     "candidate": {"rungs": RUNGS, "plan": {"speculative_config": {"method": "eagle3"}}}},
            "settings": settings(), "switch": {"args": {}, "template_vars": {}},
            "bench": {"url": "http://127.0.0.1:8000"}, "lock": {"path": "/s/rollout-state.json", "token": "t1"},
            "outcome": {"config": {"c": 1}, "family": "thor", "model": "m", "run_id": "run", "textfile_dir": None}}
    args.update(extra)
    return args


class FakeEvaluate(rollout_evaluate.ActionModule):
    """The real action; what it would run on the host is answered by a made-up board."""

    def __init__(self, args, board, check_mode=False):
        self._task = _Obj()
        self._task.args, self._task.check_mode, self._task.async_val = dict(args), check_mode, 0
        self.board = board
        self.calls = []

    def _execute(self, step, state, ctx, args, task_vars):
        self.calls.append(step["do"])
        return self.board.answer(state, step)


@pytest.fixture
def said(monkeypatch):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    lines = []
    monkeypatch.setattr(rollout_evaluate.display, "display", lambda msg, *a, **k: lines.append(msg))
    return lines


def test_one_call_runs_the_whole_evaluation_and_returns_the_judged_record(said):
    action = FakeEvaluate(task_args(), Board(GOOD))
    out = action.run(task_vars={"inventory_hostname": "thor-01"})
    assert out["done"] is True and out["hook"] is None and not out.get("failed")
    assert out["record"]["status"] == "kept" and out["verdict"]["action"] == "keep"
    assert out["changed"] is True and out["steps"] == len(action.calls)
    assert action.calls[0] == "switch" and action.calls[-1] == "write"
    assert said[0] == "thor-01: Apply the baseline" and said[1] == "thor-01: Benchmark the baseline"
    assert "thor-01: Keep the candidate (eagle3 at utilization 0.70) as the launch a reboot starts" in said


def test_at_a_hook_it_returns_its_state_and_the_next_call_goes_on_from_there(said):
    board = Board(GOOD)
    args = task_args(hooks={"before_restart": True})
    out = FakeEvaluate(args, board).run(task_vars={})
    hooks = 0
    while not out["done"]:
        assert out["hook"]["event"] == "before_restart" and "evaluation" in out
        hooks += 1
        out = FakeEvaluate(dict(args, evaluation=out["evaluation"]), board).run(task_vars={})
    assert out["record"]["status"] == "kept"
    assert hooks == sum(1 for line in said if ": Apply the " in line or ": Keep the candidate" in line or ": Revert" in line)


def test_a_failure_returns_what_the_evaluation_had_for_the_rescue(said):
    out = FakeEvaluate(task_args(), Board(GOOD, broken=[1])).run(task_vars={})
    assert out["failed"] is True and out["msg"].startswith("EngineDeadError")
    partial = out["evaluation"]
    assert partial["record"]["host"] == "h" and partial["rounds"] == [] and partial["launch"]["argv"][2] == "baseline"


def test_check_mode_changes_nothing_and_says_what_it_would_do(said):
    action = FakeEvaluate(task_args(tune_k={"max": 8}), Board(GOOD), check_mode=True)
    out = action.run(task_vars={})
    assert action.calls == [] and out["changed"] is False and out["plan"][0] == "switch to the baseline"
    assert "tune k up to 8" in out["msg"]


def test_a_plan_without_its_ladder_is_refused_naming_the_field(said):
    action = FakeEvaluate(task_args(plan={"candidate": {}}), Board(GOOD))
    out = action.run(task_vars={})
    assert out["failed"] and out["rule"] == "input.evaluation" and "plan.candidate.rungs" in out["msg"]
    assert action.calls == []


def test_a_switch_checks_the_lock_then_switches_with_the_roles_inputs_and_the_templates_variables(monkeypatch):
    action = rollout_evaluate.ActionModule.__new__(rollout_evaluate.ActionModule)
    modules, switched = [], []
    monkeypatch.setattr(rollout_evaluate, "run_module",
                        lambda self, name, args, task_vars: modules.append((name, args)) or {"changed": False})
    action._run_action = lambda name, args, variables, no_log=False: switched.append(
        (name, args, variables, no_log)) or {"argv": ["x"]}
    base = {"launch_input": {"plan": {"speculation": False, "k": 0}, "utilization_drop": 0.05},
            "wait": {"url": "http://127.0.0.1:8000", "api_key": None}, "trial": False, "check_memory": False}
    args = {"lock": {"path": "/s/state.json", "token": "t1"}, "api_key": "sk-1",
            "switch": {"args": base, "template_vars": {"vllm_server_user": "vllm"}}}
    step = {"do": "switch", "arm": "candidate", "rung": RUNGS[0], "k": 8, "trial": True, "schedule": None, "quiet": True}
    state = {"launch": {"argv": ["before"]}}
    out = action._switch(step, {"k_inputs": {}, "reclaim_baseline": True}, args, state, {"inventory_hostname": "h"})
    assert out == {"argv": ["x"]}
    assert modules == [("jetson.specdec.rollout_state", {"state": "refresh", "path": "/s/state.json", "token": "t1"})]
    name, sent, variables, quiet = switched[0]
    assert name == "jetson.specdec.vllm_switch" and quiet is True
    assert sent["launch_input"]["plan"]["speculation"] is True and sent["launch_input"]["plan"]["k"] == 8
    assert sent["wait"]["api_key"] == "sk-1" and base["wait"]["api_key"] is None  # the inputs are not changed
    assert variables["vllm_server_user"] == "vllm" and variables["vllm_server_launch"] == {"argv": ["before"]}


def test_a_switch_after_the_lock_was_taken_over_does_not_switch(monkeypatch):
    action = rollout_evaluate.ActionModule.__new__(rollout_evaluate.ActionModule)
    monkeypatch.setattr(rollout_evaluate, "run_module", lambda self, name, args, task_vars: {
        "failed": True, "msg": "Rollout lock belongs to owner 'run-2'"})
    action._run_action = lambda *a, **k: pytest.fail("switched without the lock")
    out = action._switch({"arm": "baseline"}, {}, {"lock": {"path": "p", "token": "t"}, "switch": {"args": {}}}, {}, {})
    assert out["failed"] and out["lock_lost"] and "run-2" in out["msg"]


def test_a_round_benchmark_draws_its_prompt_set_and_a_probe_the_first_set():
    action = rollout_evaluate.ActionModule.__new__(rollout_evaluate.ActionModule)
    sent = []
    action._run_action = lambda name, args, variables, no_log=False: sent.append((name, args)) or {"runs": []}
    args = {"bench": {"url": "http://127.0.0.1:8000", "seed": 3, "dataset_path": None}, "api_key": None}
    action._bench({"phase": "candidate", "levels": [1, 8], "prompt_set": 2}, args, {})
    action._bench({"phase": "probe", "levels": [1], "k": 8}, args, {})
    (name, round_args), (unused, probe_args) = sent
    assert name == "jetson.specdec.vllm_bench" and round_args["prompt_set"] == 2 and round_args["seed"] == 3
    assert round_args["concurrency"] == [1, 8] and "dataset_path" not in round_args  # unset options are not sent
    assert "prompt_set" not in probe_args and probe_args["progress_label"] == "probe"


def test_when_done_it_publishes_the_record_with_the_hosts_own_time(said, tmp_path, monkeypatch):
    """The evaluation's last step is the publish (issue 32: no task after the evaluation): the finished record in the
    run's spool and the run's custom stats, timed from the start the role passes to the evaluation's own end."""
    monkeypatch.setattr(rollout_evaluate.time, "time", lambda: 1000.0)
    spool = str(tmp_path / "run-1" / "hosts")
    out = FakeEvaluate(task_args(publish={"spool_dir": spool, "run_id": "run-1", "started": 400.0}),
                       Board(GOOD)).run(task_vars={"inventory_hostname": "thor-01"})
    assert out["done"] is True and not out.get("failed")
    with open(out["path"]) as handle:
        spooled = json.load(handle)
    assert out["path"] == str(tmp_path / "run-1" / "hosts" / "thor-01.json")
    assert spooled == out["record"] and spooled["status"] == "kept" and spooled["timings"] == {"seconds": 600.0}
    assert out["ansible_stats"]["data"]["jetson_specdec"] == {"thor-01": spooled}
    # without the option nothing is spooled (a caller that publishes itself)
    out = FakeEvaluate(task_args(), Board(GOOD)).run(task_vars={"inventory_hostname": "agx-01"})
    assert "path" not in out and "ansible_stats" not in out


def test_a_record_it_cannot_publish_fails_with_the_fix_and_hands_the_rescue_its_record(said, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    out = FakeEvaluate(task_args(publish={"spool_dir": str(blocker / "hosts"), "run_id": "r", "started": 1.0}),
                       Board(GOOD)).run(task_vars={"inventory_hostname": "thor-01"})
    assert out["failed"] is True and "rollout_report_dir" in out["msg"] and "rollout_evaluate" in out["msg"]
    assert out["evaluation"]["record"]["status"] == "kept"  # the rescue records the failure on the judged record
    out = FakeEvaluate(task_args(publish={"spool_dir": str(tmp_path / "x" / ".." / "hosts"), "run_id": "r"}),
                       Board(GOOD)).run(task_vars={"inventory_hostname": "thor-01"})
    assert out["failed"] is True and "input.run_id" in out["msg"]
