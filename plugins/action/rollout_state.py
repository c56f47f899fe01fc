# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.rollout_state: the module, then, for a lock taken with ``keeper``, its keeper.

The keeper (plugin_utils/lock_keeper.py) stamps the lock alive from this controller while its
``ansible-playbook`` runs, so the lock is judged by a liveness of minutes instead of the longest step of a
rollout, and a lock left by a controller that died is taken over by another within minutes (issue 30).
With ``take_over_gone`` (the rollout's lock), a lock this controller's own interrupted run left (its
ansible-playbook process has ended: Ctrl-C or ``timeout -s INT`` skip the play's ``always``) is taken over at
once, in the same task, instead of after its liveness; a refusal says how to go on. A lock taken on a host that
run left mid-change (status pending) warns that its last good config comes back first.
Every other use of the module passes through unchanged.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.module_utils.record import holder as lock_holder
from ansible_collections.jetson.specdec.plugins.module_utils.record.lock import MIN_LIVENESS
from ansible_collections.jetson.specdec.plugins.plugin_utils import lock_keeper

# Connections that run each command in a process of their own: a forked keeper can use them after the
# worker ends. A connection holding a socket in the worker (paramiko, winrm, psrp) cannot be shared.
PROCESS_CONNECTIONS = ("ssh", "local", "docker", "podman", "lxc", "lxd", "chroot", "buildah")


def keeper_settings(value):
    """{liveness, lifetime} from the task's ``keeper`` option, or None when it is off; ValueError when wrong."""
    if value in (None, {}, False):
        return None
    if not isinstance(value, dict):
        raise ValueError("keeper must be a dict with liveness (seconds), got %r" % (value,))
    liveness = value.get("liveness")
    if isinstance(liveness, str) and liveness.strip().isdigit():
        liveness = int(liveness)
    if liveness in (None, 0):
        return None
    if isinstance(liveness, bool) or not isinstance(liveness, int) or liveness < MIN_LIVENESS:
        raise ValueError("keeper.liveness (rollout_lock_liveness) must be 0 (no keeper) or at least %d seconds, "
                         "got %r" % (MIN_LIVENESS, liveness))
    lifetime = value.get("lifetime")
    if lifetime is None:
        lifetime = lock_keeper.DEFAULT_LIFETIME
    if isinstance(lifetime, str) and lifetime.strip().isdigit():
        lifetime = int(lifetime)
    if isinstance(lifetime, bool) or not isinstance(lifetime, int) or lifetime <= 0:
        raise ValueError("keeper.lifetime must be a positive number of seconds, got %r" % (lifetime,))
    return {"liveness": liveness, "lifetime": lifetime}


# What an operator can do about a lock the rollout could not take (the module's message comes first).
HELD_HINT = ("The host was left as it is. If no other rollout runs on it (for example the controller of that run was "
             "killed), re-run with -e rollout_break_lock=true, or wait until the lock is stale.")
BROKEN_HINT = "The host was left as it is. Fix the state directory as the message says, then re-run."


def take_over_args(args, failed):
    """rollout_state's arguments that take over the lock of ``failed`` (a refused lock's result) when its holder
    is this controller's own run whose ansible-playbook has ended; else None."""
    holder = failed.get("holder")
    if not failed.get("lock_held") or not isinstance(holder, dict) or not holder.get("token"):
        return None
    gone = lock_holder.holder_gone(holder, args.get("controller_id"))
    if not gone:
        return None
    again = dict(args, take_over_token=holder["token"], take_over_reason=gone)
    again.pop("break_lock", None)
    return again


def interrupted_note(host, result):
    """What a lock taken on a host an interrupted run left mid-change (status pending) means for this run, or None:
    the host gets its last good config back first (roles/rollout). A warning: the operator did not ask for it."""
    stored = result.get("rollout_state") or {}
    # needs_rollout: the rollout's lock (taken with its config); revert's and the watch's say what they do themselves
    if result.get("failed") or "needs_rollout" not in result or not isinstance(stored, dict) \
            or stored.get("status") != "pending":
        return None
    broken = result.get("broken") or {}
    return ("%s: run %s was interrupted here (status pending%s): restoring the last good config (%s) before %s."
            % (host, (stored.get("info") or {}).get("run_id") or "?",
               ", its lock taken over: %s" % broken.get("owner") if broken else "",
               (stored.get("last_good") or {}).get("kind") or "baseline",
               "the host is evaluated again" if result.get("needs_rollout") else "anything else"))


def connection_name(connection):
    """The connection plugin's short name (community.docker.docker -> docker)."""
    name = getattr(connection, "transport", None) or getattr(connection, "_load_name", "") or ""
    return str(name).rsplit(".", 1)[-1]


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        try:
            settings = keeper_settings(args.get("keeper"))
        except ValueError as exc:
            result.update(failed=True, msg=str(exc), rule="input.rollout_lock_liveness")
            return result
        take_over = args.pop("take_over_gone", False)
        result.update(self._run_state(args, task_vars))
        if take_over and result.get("failed") and args.get("state") == "lock":
            again = take_over_args(args, result)
            if again is not None:
                result = self._run_state(again, task_vars)
            if result.get("failed"):
                result["msg"] = "%s %s" % (result.get("msg") or "The rollout lock could not be taken.",
                                           HELD_HINT if result.get("lock_held", True) else BROKEN_HINT)
        if args.get("state") == "lock":
            note = interrupted_note(task_vars.get("inventory_hostname"), result)
            if note:
                result.setdefault("warnings", []).append(note)
        if settings is None or result.get("failed") or self._task.check_mode \
                or args.get("state") != "lock":
            return result
        result["keeper"] = self._start_keeper(args, result, settings)
        return result

    def _run_state(self, args, task_vars):
        return self._execute_module(module_name="jetson.specdec.rollout_state", module_args=args, task_vars=task_vars)

    def _start_keeper(self, args, result, settings):
        lock = result.get("lock") or {}
        token = lock.get("token")
        name = connection_name(self._connection)
        if not token:
            return {"started": False, "why": "the module returned no lock token"}
        if name not in PROCESS_CONNECTIONS:
            return {"started": False, "why": "the %s connection cannot be shared with a process that outlives the "
                                             "task; the lock is judged by its steps (rollout_lock_timeout)" % name}
        # the module's own default when lock_path is not given: next to the state file it returns as path
        lock_path = args.get("lock_path") or os.path.join(os.path.dirname(result["path"]), "rollout.lock")
        main = lock_holder.playbook_pid()
        start = lock_holder.process_start(main)
        if start is None:
            return {"started": False, "why": "this controller's ansible-playbook process cannot be read in /proc"}

        def run_command(command):
            return self._low_level_execute_command(command, sudoable=True).get("rc")

        pid = lock_keeper.start(run_command, lock_path, token, settings["liveness"], main, start,
                                lifetime=settings["lifetime"])
        return {"started": pid is not None, "pid": pid, "liveness": settings["liveness"],
                "interval": lock_keeper.interval_for(settings["liveness"]), "lock_path": lock_path}
