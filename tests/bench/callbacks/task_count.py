"""Counts the tasks every host runs (for tests/bench/rollout_cost.py).

A notification callback: per host, how many task results it produced (ok, changed,
failed, skipped, unreachable) and how many task files it included. Written as JSON
to $SPECDEC_TASK_COUNT_FILE when the playbook ends.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import resource
from collections import defaultdict

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_count
type: aggregate
short_description: per-host task counts for the rollout cost measurement
description: Writes per-host task result counts to $SPECDEC_TASK_COUNT_FILE.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_count"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.counts = defaultdict(lambda: defaultdict(int))
        self.by_task = defaultdict(lambda: defaultdict(int))
        # Where the CPU goes: controller CPU seconds (this process and its ended workers) from one task's start to
        # the next's, by task name. The linear strategy runs one task on every host of a batch at a time, so a
        # task's span is that task on all of them (an action such as rollout_evaluate included).
        self.cpu_by_task = defaultdict(float)
        self._task_name, self._task_cpu = None, None

    @staticmethod
    def _cpu():
        return sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                   for field in ("ru_utime", "ru_stime"))

    def _close_task(self):
        now = self._cpu()
        if self._task_name is not None:
            self.cpu_by_task[self._task_name] += now - self._task_cpu
        return now

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task_cpu, self._task_name = self._close_task(), task.get_name()

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def _count(self, result, kind):
        host = result._host.get_name()
        self.counts[host][kind] += 1
        # Where the tasks go: "<task name>" -> results, to find what to cut.
        self.by_task[host][result._task.get_name()] += 1

    def v2_runner_on_ok(self, result):
        self._count(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._count(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._count(result, "unreachable")

    def v2_playbook_on_include(self, included_file):
        for host in included_file._hosts:
            self.counts[host.get_name()]["included"] += 1

    def v2_playbook_on_stats(self, stats):
        self._close_task()
        self._task_name = None
        path = os.environ.get("SPECDEC_TASK_COUNT_FILE")
        if path:
            with open(path, "w") as handle:
                json.dump(dict((h, dict(c)) for h, c in self.counts.items()), handle, indent=1, sort_keys=True)
            with open(path + ".by_task", "w") as handle:
                json.dump(dict((h, dict(c)) for h, c in self.by_task.items()), handle, indent=1, sort_keys=True)
            with open(path + ".cpu_by_task", "w") as handle:
                json.dump(dict((name, round(cpu, 2)) for name, cpu in self.cpu_by_task.items()), handle, indent=1,
                          sort_keys=True)
