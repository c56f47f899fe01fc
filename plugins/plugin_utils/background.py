# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Run a module of this collection in the background on a host and wait for it from the controller.

Shared by the actions that wait and speak (vllm_bench, vllm_wait, vllm_job_wait, vllm_switch): the loop is on the controller,
so that one task both waits and prints where the job is, instead of one silent task for up to the
job's bound or the "FAILED - RETRYING" lines of an ``until`` loop.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import posixpath
import time

from ansible.module_utils.six.moves import shlex_quote
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.jetson.specdec.plugins.module_utils.bench import progress as bench_progress
from ansible_collections.jetson.specdec.plugins.module_utils.vllm import start_progress

display = Display()

# What async_wrapper adds to a job's result; the task's result is the job's own.
JOB_KEYS = ("started", "finished", "ansible_job_id", "results_file", "stdout_lines", "stderr_lines")


def describe(snap, now, label):
    """The progress line of a benchmark (bench/progress.py) or of a vLLM start (vllm/start_progress.py)."""
    if isinstance(snap, dict) and snap.get("kind") == "start":
        return start_progress.describe(snap, now, label)
    return bench_progress.describe(snap, now, label)


def look_wait(poll, interval, remaining, line_in=None):
    """Seconds the host may wait for the job before it answers look number n: the job's end answers at once
    (the host checks every second), so the wait only bounds how long the controller hears nothing. Until the
    next progress line (``line_in``, else ``interval``; without lines, 6 polls) and never past the timeout.
    A vLLM start of 20 s is one look, a benchmark one look per progress line (each look is a process on
    the controller and on the board: a ``docker exec`` or an SSH command)."""
    if interval:
        wait = interval if line_in is None else line_in
    else:
        wait = 6 * poll
    return int(max(1, min(wait, remaining)))


# One look at the host is one shell command, no Python there: a poll every few seconds of every
# host of a rollout would otherwise start an interpreter and unpack a module on the board each
# time. Markers are lines no JSON file has.
LOOK = ('j=%(job)s; p=%(progress)s; if [ ! -e "$j" ]; then echo @@missing; exit 0; fi; '
        'date +%%s; echo @@job; cat -- "$j"; echo; echo @@progress; cat -- "$p" 2>/dev/null; echo')
# The same look after waiting on the host, up to %(wait)s seconds, while the job file is async_wrapper's
# "started" record (or not there yet): a job that ends is seen within a second, without a look per second.
WAIT = ('j=%(job)s; n=%(wait)d; while [ "$n" -gt 0 ] && { [ ! -e "$j" ] || '
        'grep -qE \'^[{]"started": (true|1), "finished": (false|0)\' -- "$j" 2>/dev/null; }; do sleep 1; n=$((n - 1)); done; ')
# A finished job is collected once: the next job must not read this one's files.
COLLECT = "rm -f -- %(job)s %(progress)s"


def look_paths(job_path, progress_path, wait=0):
    """LOOK's, WAIT's and COLLECT's substitutions: both paths quoted for the host's shell, the wait in seconds."""
    return {"job": shlex_quote(job_path), "progress": shlex_quote(progress_path), "wait": int(wait)}


def _json(text):
    try:
        return json.loads(text)
    except ValueError:
        return None  # missing, empty or half written


def _event_msg(item):
    """The text of a warning or deprecation as a module wrote it into the job file: a string, or (ansible-core
    2.19 and later) a serialized summary {"event": {"msg": ...}, "__ansible_type": "WarningSummary"}."""
    if isinstance(item, dict):
        event = item.get("event") if isinstance(item.get("event"), dict) else item
        return str(event.get("msg") or item.get("msg") or "")
    return str(item)


def plain_job_result(job):
    """The job's result with its warnings and deprecations as text, the way Ansible shows a task's own
    (read with json.loads, a 2.19 summary object would be printed as its dict)."""
    out = dict(job or {})
    if isinstance(out.get("warnings"), list):
        out["warnings"] = [_event_msg(w) for w in out["warnings"]]
    if isinstance(out.get("deprecations"), list):
        out["deprecations"] = [dict(msg=_event_msg(d), version=d.get("version")) if isinstance(d, dict) else
                               {"msg": str(d)} for d in out["deprecations"]]
    return out


def parse_look(stdout, now):
    """The status of one look (LOOK's output): {missing} or {finished, job, progress, now}.

    A job is finished when its file holds a result without async_wrapper's "started" key, exactly
    as ansible.builtin.async_status decides; ``now`` is the host's clock (progress times are the host's).
    """
    text = stdout or ""
    lines = text.strip().splitlines()
    if lines and lines[-1].strip() == "@@missing":  # the last line: a login banner may come first
        return {"missing": True}
    head, dummy, rest = text.partition("\n@@job\n")
    job_text, dummy, progress_text = rest.partition("\n@@progress\n")
    try:
        now = float(head.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pass
    job = _json(job_text)
    finished = isinstance(job, dict) and "started" not in job
    return {"finished": finished, "job": job if finished else None, "progress": _json(progress_text), "now": now}


def start_job(action, module_name, module_args, task_vars, limit):
    """Start ``module_name`` on the action's host as an async job that may run ``limit`` seconds.

    Returns async_wrapper's answer ({"ansible_job_id": ...}, or a failed result). This is what a task with
    ``async: limit`` and ``poll: 0`` does; the task's own async value is lent for the call, because the
    wrapper reads its bound from there.
    """
    task = action._task
    saved = task.async_val
    task.async_val = int(limit)
    try:
        return action._execute_module(module_name=module_name, module_args=module_args, task_vars=task_vars,
                                      wrap_async=True)
    finally:
        task.async_val = saved


def async_job_dir(action, async_dir=None):
    """Where the host keeps its async job files, as ansible.builtin.async_status finds them."""
    return action._remote_expand_user(async_dir or action.get_shell_option("async_dir", default="~/.ansible_async"))


def wait_for_job(action, jid, progress_path, label, interval, poll, timeout, async_dir=None, host="?", job_path=None):
    """Wait for the async job ``jid``, printing a line every ``interval`` seconds; return the job's own result.

    ``job_path`` is the job's file when the start said where it is (async_wrapper's ``results_file``): then
    the host is not asked where its async directory is. The job's files are collected once it has finished.
    A job that is missing, or that does not finish within ``timeout`` seconds, is a failed result that says
    so (with its last progress).
    """
    job_path = job_path or posixpath.join(async_job_dir(action, async_dir), jid)
    paths = look_paths(job_path, progress_path)
    start = last_line = time.time()
    # the first look waits too: a job file async_wrapper has not written yet is waited for, not "missing"
    wait = look_wait(poll, interval, timeout)
    while True:
        status = _look(action, dict(paths, wait=wait))
        if status.get("failed"):
            return status
        if status.get("missing"):
            return {"failed": True, "finished": True,
                    "msg": "could not find the async job %s (%s): it never started, or another task "
                           "already collected it" % (jid, job_path)}
        if status.get("finished"):
            action._low_level_execute_command(COLLECT % paths, sudoable=True)
            job = plain_job_result(status.get("job"))
            for key in JOB_KEYS:
                job.pop(key, None)
            job["changed"] = bool(job.get("changed"))
            return job
        now = time.time()
        if now - start >= timeout:
            return {"failed": True, "progress": status.get("progress"),
                    "msg": "%s did not finish within %d s (async job %s): %s"
                           % (label, timeout, jid, describe(status.get("progress"), status.get("now") or now, None))}
        if interval and now - last_line >= interval:
            last_line = now
            display.display("%s: %s" % (host, describe(status.get("progress"), status.get("now") or now, label)))
        wait = look_wait(poll, interval, timeout - (now - start), line_in=last_line + interval - now if interval else None)


def _look(action, paths):
    res = action._low_level_execute_command(((WAIT % paths) if paths.get("wait") else "") + LOOK % paths, sudoable=True)
    if res.get("rc") != 0:
        return {"failed": True, "msg": "could not read the async job's files on the host (rc %s): %s"
                                       % (res.get("rc"), (res.get("stderr") or res.get("stdout") or "").strip()[-500:])}
    return parse_look(res.get("stdout"), time.time())


def run_with_progress(action, module_name, module_args, task_vars, limit, label, interval, timeout, poll=5):
    """Run ``module_name`` in the background (bounded by ``limit`` s) and wait for it here, printing a line from its
    ``progress_path`` every ``interval`` s; return the module's own result, or a failed one that says why."""
    progress_path = module_args.get("progress_path")
    if not progress_path:
        return {"failed": True, "msg": "%s: progress lines need progress_path (the file the module writes its "
                                       "progress to)" % module_name}
    started = start_job(action, module_name, module_args, task_vars, limit)
    if started.get("failed") or not started.get("ansible_job_id"):
        return {"failed": True, "msg": "%s did not start in the background: %s"
                                       % (module_name, started.get("msg") or started)}
    # An absolute results_file is the job's file; anything else (a relative path) is looked up as before.
    results_file = started.get("results_file")
    return wait_for_job(action, started["ansible_job_id"], progress_path, label, interval, poll, timeout,
                        host=(task_vars or {}).get("inventory_hostname", "?"),
                        job_path=results_file if posixpath.isabs(results_file or "") else None)


def bench_bounds(args):
    """vllm_bench's (async limit, wait timeout) in seconds: the module stops itself after max_duration; the job
    may take a little longer to write its result."""
    duration = int(float(args.get("max_duration") or 3600))
    return duration + 120, duration + 180


def wait_bounds(args):
    """vllm_wait's (async limit, wait timeout) in seconds: the module gives up after its timeout (a crash loop
    sooner)."""
    timeout = int(args.get("timeout") or 900)
    return timeout + 60, timeout + 120


# What the lines call a vLLM start (vllm_wait's, and the wait of jetson.specdec.vllm_switch).
START_LABEL = "vLLM start"


class ProgressAction(ActionBase):
    """The action plugin of a module that can speak while it runs (vllm_bench, vllm_wait).

    With ``progress_interval`` (an option of the action, not sent to the host) the module runs in the background
    and this task prints its progress every ``progress_interval`` s (0: none) until it ends, so one task both
    waits and speaks. Without it, or when the task itself is ``async``, the module runs as any module does.
    Subclasses set MODULE, DEFAULT_LABEL and bound(args) -> (async limit, wait timeout) in seconds.
    """

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True
    MODULE = None
    DEFAULT_LABEL = "job"

    def bound(self, args):
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        return self.run_module(super(ProgressAction, self).run(tmp, task_vars), task_vars)

    def run_module(self, result, task_vars, args=None):
        args = dict(self._task.args if args is None else args)
        interval = args.pop("progress_interval", None)
        label = args.pop("progress_label", None) or self.DEFAULT_LABEL
        if interval is None or self._task.async_val:
            wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
            result.update(self._execute_module(module_name=self.MODULE, module_args=args, task_vars=task_vars,
                                               wrap_async=wrap_async))
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        limit, timeout = self.bound(args)
        job = run_with_progress(self, self.MODULE, args, task_vars, limit, label, int(interval), timeout)
        result.update(job)
        return result
