# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_job_wait: poll the host, print progress lines, return the job's result.

The loop is here, on the controller, so that one task both waits and speaks: an ``until``
loop would print "FAILED - RETRYING" on every poll and nothing about the benchmark.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.jetson.specdec.plugins.module_utils.bench import progress as bench_progress
from ansible_collections.jetson.specdec.plugins.module_utils.vllm import start_progress

display = Display()

ARGS = {
    "jid": {"type": "str", "required": True},
    "progress_path": {"type": "path", "required": True},
    "label": {"type": "str", "default": "job"},
    "interval": {"type": "int", "default": 30},
    "poll": {"type": "int", "default": 5},
    "timeout": {"type": "int", "required": True},
    "async_dir": {"type": "path"},
}
# What async_wrapper adds to a job's result; the task's result is the job's own.
JOB_KEYS = ("started", "finished", "ansible_job_id", "results_file", "stdout_lines", "stderr_lines")


def describe(snap, now, label):
    """The progress line of a benchmark (bench/progress.py) or of a vLLM start (vllm/start_progress.py)."""
    if isinstance(snap, dict) and snap.get("kind") == "start":
        return start_progress.describe(snap, now, label)
    return bench_progress.describe(snap, now, label)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGS)
        if args["timeout"] < 1 or args["poll"] < 1 or args["interval"] < 0:
            result.update(failed=True, msg="vllm_job_wait: timeout and poll must be >= 1 and interval >= 0 "
                                           "(timeout %s, poll %s, interval %s)"
                                           % (args["timeout"], args["poll"], args["interval"]))
            return result
        host = (task_vars or {}).get("inventory_hostname", "?")
        module_args = dict(args)
        async_dir = args["async_dir"] or self.get_shell_option("async_dir", default="~/.ansible_async")
        module_args["async_dir"] = self._remote_expand_user(async_dir)
        start = last_line = time.time()
        while True:
            status = self._execute_module(module_name="jetson.specdec.vllm_job_wait", module_args=module_args,
                                          task_vars=task_vars)
            if status.get("failed"):
                result.update(status)
                return result
            if status.get("finished"):
                job = dict(status.get("job") or {})
                for key in JOB_KEYS:
                    job.pop(key, None)
                result.update(job)
                result["changed"] = bool(job.get("changed"))
                return result
            now = time.time()
            if now - start >= args["timeout"]:
                result.update(failed=True, progress=status.get("progress"),
                              msg="%s did not finish within %d s (async job %s): %s"
                                  % (args["label"], args["timeout"], args["jid"],
                                     describe(status.get("progress"), status.get("now") or now, None)))
                return result
            if args["interval"] and now - last_line >= args["interval"]:
                last_line = now
                display.display("%s: %s" % (host, describe(status.get("progress"), status.get("now") or now,
                                                           args["label"])))
            # a line every `interval` needs a look at least that often
            time.sleep(min(args["poll"], args["interval"] or args["poll"], max(1, args["timeout"] - (now - start))))
