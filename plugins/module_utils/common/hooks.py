# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The operator's hook points around a host's evaluation (docs/rollout.md, "Boards that serve users"), pure stdlib.

A board that serves users is taken out of its load balancer before the rollout restarts it and put back once
it serves its final config, the way rolling-upgrade roles take drain and undrain steps. The rollout includes
a task file the operator names at three points: ``before_host`` (before this run changes the host),
``before_restart`` (before each switch of vLLM to an arm) and ``after_host`` (once the host serves its final
config, kept or reverted, also after a failure put the baseline back). ``check`` runs on the controller in
the read-only pass, so a hook that does not exist fails before any host changes.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

RULE = "input.rollout_hook"
EVENTS = ("before_host", "before_restart", "after_host")


class HookError(ValueError):
    """A hook setting that cannot work; the message names the rule, the variable and the fix."""


def check(hooks):
    """``{event: path}`` (empty string: no hook) -> the same dict with every event, each path checked.

    A hook is an absolute path to a readable YAML task file on the controller (include_tasks resolves a relative
    path against the role, not the operator's inventory)."""
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise HookError("%s: the hooks must be a mapping of %s to task files, got %r." % (RULE, ", ".join(EVENTS), hooks))
    unknown = sorted(str(key) for key in hooks if key not in EVENTS)
    if unknown:
        raise HookError("%s: unknown hook point(s) %s; the rollout has %s." % (RULE, ", ".join(unknown), ", ".join(EVENTS)))
    out = {}
    for event in EVENTS:
        path = hooks.get(event)
        variable = "rollout_hook_%s" % event
        if path is None or path == "":
            out[event] = ""
            continue
        if not isinstance(path, str):
            raise HookError("%s: %s must be the path of a task file (a string), got %r. Fix: set it to a path such as "
                            "\"{{ inventory_dir }}/hooks/drain.yml\", or to \"\" for no hook." % (RULE, variable, path))
        if "\n" in path or "\0" in path or "{{" in path or "{%" in path:
            raise HookError("%s: %s must be one plain path, got %r (a line break, NUL or template markup that was not "
                            "rendered). Fix: set it to the file's absolute path." % (RULE, variable, path))
        if not os.path.isabs(path):
            raise HookError("%s: %s must be an absolute path, got %r (a relative one would be looked up in the role, "
                            "not in your inventory). Fix: write it as \"{{ inventory_dir }}/%s\"." % (RULE, variable, path, path))
        if not path.endswith((".yml", ".yaml")):
            raise HookError("%s: %s must name a YAML task file (.yml or .yaml), got %r. Fix: point it at a list of "
                            "tasks, as include_tasks takes." % (RULE, variable, path))
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            raise HookError("%s: %s names %s, which is not a readable file on the controller. Fix: create it (a list "
                            "of tasks) or set %s to \"\"." % (RULE, variable, path, variable))
        out[event] = os.path.normpath(path)
    return out
