# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_switch: plan a launch, check its memory, apply it and wait, as one task.

A rollout moves a host between launches several times (the baseline, each rung of the fallback ladder,
the k probe, the rounds of the verdict, keep or revert). Each move was seven tasks (plan, memory check,
fold, refusal, apply, start the wait, wait); on a controller that drives a thousand boards each task is
the controller's cost (docs/scale.md). Here the steps are the same code in the same order:

1-3. the plan, the candidate's memory and the refusal: plugin_utils/planning.py, the step of
   jetson.specdec.vllm_plan (the role's preflight), so a switch plans exactly as the preflight did;
4. the unit or trial drop-in: the role's templates, rendered as the template lookup renders them, with
   the new launch as vllm_server_launch, written by jetson.specdec.vllm_unit (check mode and --diff too);
5. the wait: jetson.specdec.vllm_wait in the background, with a progress line every progress_interval
   seconds (plugin_utils/background.py, as jetson.specdec.vllm_job_wait does).

The result is the launch itself (the keys of the vllm_server_launch fact) plus what the switch did, so
that the role registers it as that fact: a refused or failed switch still publishes what it planned.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.plugins.loader import lookup_loader

from ansible_collections.jetson.specdec.plugins.plugin_utils import planning
from ansible_collections.jetson.specdec.plugins.plugin_utils.background import (
    START_LABEL,
    run_with_progress,
    wait_bounds,
)

ARGS = dict(planning.ARGS, **{
    "trial": {"type": "bool", "default": False},
    "unit": {"type": "dict", "required": True},
    "templates": {"type": "dict", "default": {}},
    "wait": {"type": "dict"},
    "progress_interval": {"type": "int", "default": 30},
})
TEMPLATES = {"unit": "vllm.service.j2", "trial": "vllm.trial.conf.j2"}
# vllm_unit's options the caller gives (the unit or trial text is rendered here).
UNIT_KEYS = ("service", "unit_path", "trial_path", "restart", "state", "enabled")


class TaskVars(dict):
    """The task's variables as the template lookup gets them: its deep copy becomes a shallow one.

    The lookup deep-copies every variable of the host before it renders; the template action copies
    them shallowly, and rendering changes none of them. With a rollout's facts (each benchmark's
    per-request lists) that deep copy was most of a switch's controller CPU (docs/scale.md).
    """

    def __deepcopy__(self, memo):
        return dict(self)


def quiet_failure(result):
    """A failed switch under no_log: ``msg`` becomes its first line (at most 300 characters) and the whole text
    moves to ``detail``. ansible-core 2.19 prints a failed task's ``msg`` as "[ERROR]: Task failed: ..." even
    under no_log, and a start that failed carries vLLM's journal (the 14-17 KB a rollout's expected
    out-of-memory rung printed); the registered result and a rescue's ansible_failed_result keep ``detail``."""
    text = str(result.get("msg") or "")
    if not text.strip():
        result["msg"] = "the switch failed"
        return result
    first = text.strip().splitlines()[0]
    first = first[:-len(" Log:")] if first.endswith(" Log:") else first
    short = first if len(first) <= 300 else first[:297] + "..."
    if short != text:
        result["detail"] = text
        result["msg"] = short + " (the whole message is in this result's detail)"
    return result


class ActionModule(planning.PlanAction):

    ARGS = ARGS
    WHO = "jetson.specdec.vllm_switch"

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        if result.get("failed") and self._task.no_log:
            quiet_failure(result)
        return result

    def after_plan(self, result, planned, args, task_vars):
        """Apply the planned launch and wait (the result already holds the launch and its memory check)."""
        launch = dict((k, v) for k, v in planned.items() if k != "memory_check")
        kind = "trial" if args["trial"] else "unit"
        unit_args = dict((k, args["unit"][k]) for k in UNIT_KEYS if args["unit"].get(k) is not None)
        try:
            unit_args[kind] = self._render(dict(TEMPLATES, **args["templates"])[kind], launch, task_vars)
        except Exception as exc:  # a template error must still publish the launch: fail with it
            result.update(failed=True, msg="jetson.specdec.vllm_switch: rendering the %s failed: %s" % (kind, exc))
            return
        applied = planning.run_module(self, "jetson.specdec.vllm_unit", unit_args, task_vars)
        if applied.get("diff"):
            result["diff"] = applied.pop("diff")
        result.update(changed=bool(applied.get("changed")), unit=planning.clean(applied))
        if applied.get("failed"):
            result.update(failed=True, msg=applied.get("msg"))
            return

        if args["wait"] and unit_args.get("state", "started") == "started" and not self._task.check_mode:
            serving = self._wait(args["wait"], args["progress_interval"], task_vars)
            result["serving"] = serving
            if serving.get("failed"):
                # what the role's wait failed with: its message, cause and journal
                result.update(failed=True, msg=serving.get("msg"), cause=serving.get("cause"))

    def _render(self, name, launch, task_vars):
        """The role's template ``name`` with ``launch`` as vllm_server_launch, exactly as the template
        lookup renders it (the role's search path, ansible_managed)."""
        lookup = lookup_loader.get("ansible.builtin.template", loader=self._loader, templar=self._templar)
        return lookup.run([name], variables=TaskVars(task_vars), template_vars={"vllm_server_launch": launch})[0]

    def _wait(self, wait, interval, task_vars):
        """vllm_wait in the background, its progress every ``interval`` s; its result, or why it failed."""
        wait = dict((k, v) for k, v in wait.items() if v is not None)
        limit, timeout = wait_bounds(wait)
        return planning.clean(run_with_progress(self, "jetson.specdec.vllm_wait", wait, task_vars, limit, START_LABEL,
                                                interval, timeout))
