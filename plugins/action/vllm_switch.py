# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_switch: plan a launch, check its memory, apply it and wait, as one task.

A rollout moves a host between launches several times (the baseline, each rung of the fallback ladder,
the k probe, the rounds of the verdict, keep or revert). Each move was seven tasks (plan, memory check,
fold, refusal, apply, start the wait, wait); on a controller that drives a thousand boards each task is
the controller's cost (docs/scale.md). Here the steps are the same code in the same order:

1. the plan: launch/plan.py, as the jetson.specdec.vllm_server_launch filter computes it;
2. the candidate's memory: jetson.specdec.spec_headroom on the host, folded in (launch/plan.with_headroom);
3. a refusal of the rules or of the memory check fails here, before anything on the host changes;
4. the unit or trial drop-in: the role's templates, rendered as the template lookup renders them, with
   the new launch as vllm_server_launch, written by jetson.specdec.vllm_unit (check mode and --diff too);
5. the wait: jetson.specdec.vllm_wait in the background, with a progress line every progress_interval
   seconds (plugin_utils/background.py, as jetson.specdec.vllm_job_wait does).

The result is the launch itself (the keys of the vllm_server_launch fact) plus what the switch did, so
that the role registers it as that fact: a refused or failed switch still publishes what it planned.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.launch.plan import (
    LaunchPlanError,
    launch_plan,
    with_headroom,
)
from ansible_collections.jetson.specdec.plugins.plugin_utils.background import (
    START_LABEL,
    run_with_progress,
    wait_bounds,
)

ARGS = {
    "launch_input": {"type": "dict", "required": True},
    "check_memory": {"type": "bool", "default": False},
    "memory": {"type": "dict", "default": {}},
    "trial": {"type": "bool", "default": False},
    "unit": {"type": "dict", "required": True},
    "templates": {"type": "dict", "default": {}},
    "wait": {"type": "dict"},
    "progress_interval": {"type": "int", "default": 30},
}
TEMPLATES = {"unit": "vllm.service.j2", "trial": "vllm.trial.conf.j2"}
# vllm_unit's options the caller gives (the unit or trial text is rendered here).
UNIT_KEYS = ("service", "unit_path", "trial_path", "restart", "state", "enabled")
# What a sub-result must not carry into this task's result (the caller's view is this task's).
INTERNAL_KEYS = ("invocation", "_ansible_no_log", "ansible_facts")


def needs_memory_check(launch, check_memory):
    """The candidate's memory is checked when it is what this switch applies and the rules allow it
    (the conditions of the role's preflight task of the same name)."""
    return bool(check_memory and launch["candidate"]["plan"].get("speculation")
                and not launch["candidate"]["refusals"] and not launch["baseline"]["refusals"])


def memory_args(launch, memory):
    """spec_headroom's options: the caller's, and the candidate's speculative config and utilization."""
    out = dict(memory)
    out.update(speculative_config=launch["candidate"]["plan"]["speculative_config"],
               gpu_memory_utilization=launch["candidate"]["gpu_memory_utilization"])
    return dict((k, v) for k, v in out.items() if v is not None)


def _clean(result):
    return dict((k, v) for k, v in (result or {}).items() if k not in INTERNAL_KEYS)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = True
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGS)
        try:
            launch = launch_plan(plain(args["launch_input"]))
        except LaunchPlanError as exc:
            # the last launch stays the published one (the role registers this result as the fact)
            result.update(plain(task_vars.get("vllm_server_launch") or {}))
            result.update(failed=True, msg="jetson.specdec.vllm_switch: %s" % exc)
            return result

        headroom = None
        if needs_memory_check(launch, args["check_memory"]):
            headroom = _clean(self._module("jetson.specdec.spec_headroom", memory_args(launch, args["memory"]),
                                           task_vars))
            # a skipped check changes nothing (as the role's filter jetson.specdec.vllm_server_launch_headroom)
            launch = with_headroom(launch, None if headroom.get("skipped") else headroom)
        result.update(launch, memory_check=headroom)
        if launch["refusals"]:
            result.update(failed=True, msg=launch["refusal_message"])
            return result

        kind = "trial" if args["trial"] else "unit"
        unit_args = dict((k, args["unit"][k]) for k in UNIT_KEYS if args["unit"].get(k) is not None)
        try:
            unit_args[kind] = self._render(dict(TEMPLATES, **args["templates"])[kind], launch, task_vars)
        except Exception as exc:  # a template error must still publish the launch: fail with it
            result.update(failed=True, msg="jetson.specdec.vllm_switch: rendering the %s failed: %s" % (kind, exc))
            return result
        applied = self._module("jetson.specdec.vllm_unit", unit_args, task_vars)
        if applied.get("diff"):
            result["diff"] = applied.pop("diff")
        result.update(changed=bool(applied.get("changed")), unit=_clean(applied))
        if applied.get("failed"):
            result.update(failed=True, msg=applied.get("msg"))
            return result

        if args["wait"] and unit_args.get("state", "started") == "started" and not self._task.check_mode:
            serving = self._wait(args["wait"], args["progress_interval"], task_vars)
            result["serving"] = serving
            if serving.get("failed"):
                # what the role's wait failed with: its message, cause and journal
                result.update(failed=True, msg=serving.get("msg"), cause=serving.get("cause"))
        return result

    def _module(self, name, args, task_vars):
        """One module's result on the host. An error on the way there (other than a lost connection, which makes
        the host unreachable as for any task) is a failed result, so the switch still returns its launch."""
        try:
            return self._execute_module(module_name=name, module_args=args, task_vars=task_vars)
        except AnsibleConnectionFailure:
            raise
        except AnsibleError as exc:
            return {"failed": True, "msg": "%s: %s" % (name, exc)}

    def _render(self, name, launch, task_vars):
        """The role's template ``name`` with ``launch`` as vllm_server_launch, exactly as the template
        lookup renders it (the role's search path, ansible_managed)."""
        lookup = lookup_loader.get("ansible.builtin.template", loader=self._loader, templar=self._templar)
        return lookup.run([name], variables=task_vars, template_vars={"vllm_server_launch": launch})[0]

    def _wait(self, wait, interval, task_vars):
        """vllm_wait in the background, its progress every ``interval`` s; its result, or why it failed."""
        wait = dict((k, v) for k, v in wait.items() if v is not None)
        limit, timeout = wait_bounds(wait)
        return _clean(run_with_progress(self, "jetson.specdec.vllm_wait", wait, task_vars, limit, START_LABEL,
                                        interval, timeout))
