# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Plan a launch and check the candidate's memory: the step vllm_plan is and vllm_switch starts with.

1. the plan: launch/plan.py (launch_plan), from the role's __vllm_server_launch_input;
2. the candidate's memory: jetson.specdec.spec_headroom on the host, folded in (launch/plan.with_headroom),
   when the candidate is allowed and the caller asks for the check;
3. the refusal: the applied arm's refusals (rules or memory) are the step's failure, before anything on
   the host changes.
One place, so that the preflight's plan and every switch of a rollout plan the same launch the same way.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.launch.plan import (
    LaunchPlanError,
    launch_plan,
    with_headroom,
)

# The options of the planning step, shared by the two actions' argument specs.
ARGS = {
    "launch_input": {"type": "dict", "required": True},
    "check_memory": {"type": "bool", "default": False},
    "memory": {"type": "dict", "default": {}},
    "reclaim_baseline": {"type": "bool", "default": False},
}
# What a sub-result must not carry into the task's result (the caller's view is the task's).
INTERNAL_KEYS = ("invocation", "_ansible_no_log", "ansible_facts")


def needs_memory_check(launch, check_memory):
    """The candidate's memory is checked when the caller asks and the rules allow the candidate."""
    return bool(check_memory and launch["candidate"]["plan"].get("speculation")
                and not launch["candidate"]["refusals"] and not launch["baseline"]["refusals"])


def memory_args(launch, memory, reclaim_baseline=False):
    """spec_headroom's options: the caller's, and the candidate's speculative config and utilization.

    ``reclaim_baseline``: the running baseline is what the candidate replaces, so its allocation (the
    planned baseline's gpu_memory_utilization of the total memory) is counted free, instead of the
    caller's reclaimable_bytes (a rollout's arms: the baseline is known only once it is planned here).
    """
    out = dict(memory)
    out.update(speculative_config=launch["candidate"]["plan"]["speculative_config"],
               gpu_memory_utilization=launch["candidate"]["gpu_memory_utilization"])
    if reclaim_baseline:
        out["reclaimable_bytes"] = int(float(launch["baseline"]["gpu_memory_utilization"])
                                       * int(out.get("memory_total_bytes") or 0))
    return dict((k, v) for k, v in out.items() if v is not None)


def clean(result):
    """A module's result without what belongs to its own task (invocation, facts, no_log)."""
    return dict((k, v) for k, v in (result or {}).items() if k not in INTERNAL_KEYS)


def run_module(action, name, args, task_vars):
    """One module's result on the host. An error on the way there (other than a lost connection, which makes
    the host unreachable as for any task) is a failed result, so the caller still returns its launch."""
    try:
        return action._execute_module(module_name=name, module_args=args, task_vars=task_vars)
    except AnsibleConnectionFailure:
        raise
    except AnsibleError as exc:
        return {"failed": True, "msg": "%s: %s" % (name, exc)}


def plan_step(action, args, task_vars, who):
    """Plan, check memory, refuse: updates nothing on the host. Returns the task's result so far (the
    launch, memory_check, and failed/msg on a refusal) and whether the caller may go on."""
    result = {}
    try:
        launch = launch_plan(plain(args["launch_input"]))
    except LaunchPlanError as exc:
        # the last launch stays the published one (the role registers this result as the fact)
        result.update(plain(task_vars.get("vllm_server_launch") or {}))
        result.update(failed=True, msg="%s: %s" % (who, exc))
        return result, False
    headroom = None
    if needs_memory_check(launch, args["check_memory"]):
        headroom = clean(run_module(action, "jetson.specdec.spec_headroom",
                                    memory_args(launch, args["memory"], args["reclaim_baseline"]), task_vars))
        # a skipped check (spec_headroom found nothing to check) changes nothing
        launch = with_headroom(launch, None if headroom.get("skipped") else headroom)
    result.update(launch, memory_check=headroom)
    if launch["refusals"]:
        result.update(failed=True, msg=launch["refusal_message"])
        return result, False
    return result, True


def summary(launch):
    """What was planned, in a few lines (the role's preflight printed them with -v): speculation, why, utilization."""
    plan = launch["plan"]
    lines = ["speculation: %s" % (json.dumps(plan["speculative_config"]) if plan.get("speculation") else "off"),
             "why: %s" % plan.get("selection_reason"),
             "gpu_memory_utilization: %s" % plan.get("gpu_memory_utilization")]
    arm = launch["candidate"] if launch.get("speculation") else plan
    return lines + list(arm.get("warnings") or [])


class PlanAction(ActionBase):
    """An action that plans first (vllm_plan, vllm_switch): ``after_plan`` does the rest when the plan allows it."""

    TRANSFERS_FILES = False
    _requires_connection = True
    _supports_check_mode = True
    ARGS = ARGS
    WHO = "jetson.specdec.vllm_plan"

    def run(self, tmp=None, task_vars=None):
        result = super(PlanAction, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=self.ARGS)
        planned, go_on = plan_step(self, args, task_vars, self.WHO)
        result.update(planned, changed=False)
        if go_on:
            self.after_plan(result, planned, args, task_vars)
        return result

    def after_plan(self, result, planned, args, task_vars):
        """Planning alone: say what was planned (``planned``: the launch and its memory check)."""
        result["msg"] = summary(planned)
