# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.rollout_evaluate: one host's evaluation in one task.

The machine (module_utils/record/evaluation.py) says what comes next; this action does it on the host
with the collection's own steps, as ansible.builtin.reboot runs several remote steps in one task:

- a switch: the lock is checked first (a run whose lock was taken over stops), then the action of
  jetson.specdec.vllm_switch with vllm_server's switch inputs (its ``switch_inputs`` entry point) and the
  arm's rung, k, schedule and trial;
- a benchmark: the action of jetson.specdec.vllm_bench (its heartbeat refreshes the lock, its progress
  lines print while it runs);
- a state write, the prefetch, the clock hold: jetson.specdec.rollout_state, vllm_prefetch,
  jetson_clock_hold.

So a host of a canary batch gets its answer (kept or reverted, and the outcome written) when its own
evidence settles, not when the batch's slowest board does. The action returns to YAML only to run the
operator's before_restart hook (with the machine's state, which the next call takes back) and when it is
done (with the record published to the run's spool, option ``publish``) or failed; a failure returns the state as
far as it got, so host.yml's rescue records the rounds and puts the last good config back.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import time

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.record import evaluation
from ansible_collections.jetson.specdec.plugins.module_utils.record.record import RecordError
from ansible_collections.jetson.specdec.plugins.plugin_utils.planning import clean, run_module
from ansible_collections.jetson.specdec.plugins.plugin_utils.spool import publish_result

display = Display()

ARGS = {
    "record": {"type": "dict", "required": True},
    "stored": {"type": "dict", "default": {}},
    "plan": {"type": "dict", "required": True},
    "settings": {"type": "dict", "required": True},
    "switch": {"type": "dict", "required": True},
    "bench": {"type": "dict", "required": True},
    "lock": {"type": "dict", "required": True},
    "outcome": {"type": "dict", "required": True},
    "prefetch": {"type": "dict"},
    "hold_clocks": {"type": "dict"},
    "tune_k": {"type": "dict"},
    "k_inputs": {"type": "dict", "default": {}},
    "reclaim_baseline": {"type": "bool", "default": False},
    "max_batch": {"type": "int", "default": 256},
    "hooks": {"type": "dict", "default": {}},
    "evaluation": {"type": "dict"},
    "api_key": {"type": "str", "no_log": True},
    # {spool_dir, run_id, started}: the finished record into the run's spool and custom stats once the evaluation is
    # done (what jetson.specdec.rollout_publish does for the other paths), so the role needs no task after this one
    "publish": {"type": "dict"},
}
# What a failed evaluation hands to host.yml's rescue besides the record.
FAILED_KEYS = ("rounds", "launch", "verdict")


def context(args):
    """The machine's ctx from the task's options (evaluation.check_context checks its shape)."""
    plan = args["plan"]
    candidate = plan.get("candidate") or {}
    tune = args.get("tune_k")
    if tune is not None:
        tune = dict(tune)
        if isinstance(tune.get("max"), str) and tune["max"].strip().isdigit():
            tune["max"] = int(tune["max"])
    ctx = {"rungs": candidate.get("rungs"), "candidate_plan": candidate.get("plan") or {},
           "settings": args["settings"], "tune_k": tune, "prefetch": bool(args.get("prefetch")),
           "hold_clocks": bool(args.get("hold_clocks")), "hooks": args.get("hooks") or {},
           "k_inputs": args.get("k_inputs") or {}, "reclaim_baseline": args["reclaim_baseline"],
           "max_batch": args["max_batch"], "stored": args.get("stored") or {}, "lock": args["lock"],
           "outcome": dict(args["outcome"], baseline_argv=(plan.get("baseline") or {}).get("argv"))}
    return evaluation.check_context(ctx)


def step_title(step, state):
    """The line printed when a step starts (the task names the YAML used to print)."""
    do = step["do"]
    if do == "switch":
        if step["arm"] == "baseline":
            return "Revert to the baseline" if step.get("final") else "Apply the baseline"
        # k 0 is the board's start k (the plan's): named only when the evaluation chose another
        what = "%s, k=%d" % (step.get("label"), step["k"]) if step.get("k") else str(step.get("label"))
        if step.get("schedule"):
            what += ", with the batch-size schedule"
        return ("Keep the candidate (%s) as the launch a reboot starts" if step.get("final")
                else "Apply the candidate (%s) as a trial") % what
    if do == "bench":
        extra = " at k=%d" % step["k"] if step.get("k") is not None else ""
        return "Benchmark the %s%s" % (step["phase"], extra)
    if do == "write":
        return {"pending": "Mark the host pending until a verdict is written",
                "attempt": "Record why this rung did not start",
                "outcome": "Write the outcome into the host's state"}[step["what"]]
    if do == "prefetch":
        return "Fetch the candidate's draft or head into the cache (rollout_prefetch)"
    if do == "hold":
        return "Hold MAXN and jetson_clocks for the benchmark window (rollout_bench_hold_clocks)"
    if do == "skip_rung":
        return "Fail the rung whose model could not be fetched"
    return do


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = True
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGS)
        args = plain(args)
        host = task_vars.get("inventory_hostname", "?")
        try:
            ctx = context(args)
        except evaluation.EvaluationError as exc:
            result.update(failed=True, msg="jetson.specdec.rollout_evaluate: %s" % exc, rule="input.evaluation")
            return result
        if self._task.check_mode:
            result.update(changed=False, done=False, plan=evaluation.plan_lines(ctx),
                          msg="check mode: the evaluation would %s" % "; ".join(evaluation.plan_lines(ctx)))
            return result
        if args.get("evaluation"):
            # called again after the operator's hook ran: the machine takes the hook as done
            state = evaluation.take(args["evaluation"], ctx, {"do": "hook"}, {})
        else:
            state = evaluation.start(args["record"])
            state["started_at"] = time.time()
        changed = bool(state.get("changed"))
        while True:
            try:
                state, step = evaluation.next_step(state, ctx)
            except (evaluation.EvaluationError, RecordError, KeyError, TypeError, ValueError) as exc:
                return self._failed(result, state, "the evaluation stopped in phase %s: %s" % (state.get("phase"), exc))
            state = self._say(host, state)
            if step["do"] == "done":
                break
            if step["do"] == "fail":
                return self._failed(result, state, step["msg"], lock_lost=step.get("lock_lost"))
            if step["do"] == "hook":
                state["changed"] = changed
                result.update(changed=changed, done=False, evaluation=state,
                              hook={"event": step["event"], "arm": step["arm"], "label": step["label"]})
                return result
            display.display("%s: %s" % (host, step_title(step, state)))
            began = time.time()
            out = self._execute(step, state, ctx, args, task_vars)
            if step["do"] == "bench":
                out["started_at"] = began
            changed = changed or bool(out.get("changed"))
            try:
                state = evaluation.take(state, ctx, step, out)
            except (evaluation.EvaluationError, RecordError, KeyError, TypeError, ValueError) as exc:
                return self._failed(result, state, "the evaluation stopped in phase %s: %s" % (state.get("phase"), exc))
        # this host's own time: the hosts of a batch no longer end together
        ended = time.time()
        result.update(changed=changed, done=True, hook=None, record=state["record"], verdict=state["verdict"],
                      launch=state["launch"], written=state["written"], steps=state["steps"],
                      started=state.get("started_at"), ended=ended)
        where = args.get("publish")
        if where:
            out = publish_result(state["record"], where.get("spool_dir"), host, where.get("started"), ended,
                                 run_id=where.get("run_id"), who="rollout_evaluate")
            if out.get("failed"):
                # the outcome is written on the host; the rescue records the failure and puts the baseline back,
                # as after a failed publish task
                return self._failed(result, state, out["msg"])
            result.update(out)  # the finished record (timings), its spool path, the run's custom stats
        return result

    def _say(self, host, state):
        """Print the machine's notes not printed yet (a rung that did not start, a broken round, the third arm)."""
        notes = state.get("notes") or []
        for note in notes[state.get("printed", 0):]:
            display.display("%s: %s" % (host, note))
        state["printed"] = len(notes)
        return state

    def _failed(self, result, state, msg, lock_lost=False):
        partial = {"record": state.get("record")}
        partial.update((k, state.get(k)) for k in FAILED_KEYS)
        result.update(failed=True, msg=str(msg), done=False, lock_lost=bool(lock_lost), evaluation=partial)
        return result

    # -- the steps on the host --------------------------------------------------------------------------------

    def _execute(self, step, state, ctx, args, task_vars):
        """The result of ``step`` on the host (a failed result, never an exception, unless the connection is lost)."""
        do = step["do"]
        try:
            if do == "switch":
                return self._switch(step, ctx, args, state, task_vars)
            if do == "bench":
                return self._bench(step, args, task_vars)
            if do == "write":
                return clean(run_module(self, "jetson.specdec.rollout_state",
                                        evaluation.write_args(state, ctx, step["what"]), task_vars))
            if do == "prefetch":
                fetch = dict((k, v) for k, v in args["prefetch"].items() if v is not None)
                return clean(run_module(self, "jetson.specdec.vllm_prefetch", fetch, task_vars))
            if do == "hold":
                return clean(run_module(self, "jetson.specdec.jetson_clock_hold", args["hold_clocks"], task_vars))
            if do == "skip_rung":
                return {"failed": True, "msg": step.get("msg")}
        except AnsibleConnectionFailure:
            raise
        except (evaluation.EvaluationError, RecordError, KeyError, TypeError, ValueError) as exc:
            return {"failed": True, "msg": "jetson.specdec.rollout_evaluate (%s): %s" % (do, exc)}
        return {"failed": True, "msg": "unknown step %r" % (do,)}

    def _switch(self, step, ctx, args, state, task_vars):
        lock = args["lock"]
        held = clean(run_module(self, "jetson.specdec.rollout_state",
                                {"state": "refresh", "path": lock["path"], "token": lock["token"]}, task_vars))
        if held.get("failed"):
            return {"failed": True, "lock_lost": True,
                    "msg": "This run no longer holds the rollout lock, so it does not switch vLLM: %s" % held.get("msg")}
        inputs = args["switch"]
        switch_args = evaluation.switch_args(inputs["args"], step, ctx)
        if args.get("api_key"):
            switch_args.setdefault("wait", {})["api_key"] = args["api_key"]
        variables = dict(task_vars)
        variables.update(copy.deepcopy(inputs.get("template_vars") or {}))
        if state.get("launch"):
            variables["vllm_server_launch"] = state["launch"]
        return self._run_action("jetson.specdec.vllm_switch", switch_args, variables, no_log=bool(step.get("quiet")))

    def _bench(self, step, args, task_vars):
        # an option the role leaves unset (no prompt file, no vocabulary range) is null: not sent
        bench = dict((k, v) for k, v in args["bench"].items() if v is not None)
        bench.update(concurrency=step["levels"], progress_label=step["phase"])
        if step.get("answers"):
            bench["answers"] = step["answers"]
        if step.get("prompt_set") is not None:
            bench["prompt_set"] = step["prompt_set"]
        if args.get("api_key"):
            bench["api_key"] = args["api_key"]
        return self._run_action("jetson.specdec.vllm_bench", bench, task_vars)

    def _run_action(self, name, action_args, task_vars, no_log=False):
        """Another action of the collection with ``action_args``, as its own task would run it."""
        task = self._task.copy()
        task.args = action_args
        task.no_log = no_log
        action = self._shared_loader_obj.action_loader.get(
            name, task=task, connection=self._connection, play_context=self._play_context, loader=self._loader,
            templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        return clean(action.run(task_vars=task_vars))
