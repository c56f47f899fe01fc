# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_bench: with progress_interval, one task runs the benchmark in the background
and prints where it is (plugin_utils/background.py); without it, the module runs as any module does.
With heartbeat, the rollout lock is refreshed first, in the same task (the rollout did it as a task of its own
before every benchmark)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.plugin_utils.background import ProgressAction, bench_bounds
from ansible_collections.jetson.specdec.plugins.plugin_utils.planning import run_module

LOCK_MODULE = "jetson.specdec.rollout_state"


def heartbeat_args(heartbeat):
    """rollout_state's arguments for the heartbeat, or a sentence saying what is missing."""
    if not isinstance(heartbeat, dict) or not heartbeat.get("path") or not heartbeat.get("token"):
        return None, "heartbeat needs path (the rollout state file) and token (the lock's token), got %r" % (heartbeat,)
    return {"state": "refresh", "path": heartbeat["path"], "token": heartbeat["token"]}, None


class ActionModule(ProgressAction):

    MODULE = "jetson.specdec.vllm_bench"
    DEFAULT_LABEL = "benchmark"
    bound = staticmethod(bench_bounds)

    def run(self, tmp=None, task_vars=None):
        result = super(ProgressAction, self).run(tmp, task_vars)
        args = dict(self._task.args)
        heartbeat = args.pop("heartbeat", None)
        if heartbeat is not None:
            lock_args, problem = heartbeat_args(heartbeat)
            beat = {"failed": True, "msg": problem} if problem else run_module(self, LOCK_MODULE, lock_args, task_vars)
            if beat.get("failed"):
                result.update(failed=True, heartbeat_failed=True,
                              msg="The benchmark did not start: the rollout lock heartbeat failed: %s"
                                  % beat.get("msg", "unknown error"))
                return result
        return self.run_module(result, task_vars, args)
