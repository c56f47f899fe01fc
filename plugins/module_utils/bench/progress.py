# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Progress of a benchmark that is still running: what the host writes, what the operator reads.

Standard library only.  The runner reports each finished request (``Progress.request_done``)
and each step (``Progress.step``); ``Progress`` keeps the counts and hands a snapshot to its
``sink`` (the module writes it to ``progress_path`` atomically) at most every ``every``
seconds, and at once on a new step.  ``describe`` turns a snapshot into the one line that
jetson.specdec.vllm_job_wait prints on the controller.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import threading
import time

VERSION = 1


class Progress(object):
    """Counts of one benchmark run; thread-safe (the request pool reports from its workers)."""

    def __init__(self, sink, levels, num_prompts, warmup_prompts, clock=time.time, every=2.0):
        self.sink = sink
        self.clock = clock
        self.every = float(every)
        self.lock = threading.Lock()
        levels = [int(c) for c in levels]
        self.snap = {
            "version": VERSION, "kind": "bench", "started": clock(), "updated": None, "step": "starting",
            # when the step began and every level's concurrency: the waiter's estimate of the soonest end
            "step_started": clock(), "concurrencies": levels,
            "concurrency": None, "level": 0, "levels": len(levels),
            "done": 0, "total": 0,
            # every request of the run: the probe, then each level's warmup and measured requests
            "requests_done": 0,
            "requests_total": 1 + len(levels) * (int(num_prompts) + int(warmup_prompts)),
            "finished": False,
        }
        self.last_write = None

    def start(self):
        """The first snapshot, before any request (a waiter then never reads an older run's file)."""
        with self.lock:
            self._write(force=True)

    def step(self, step, total, concurrency=None, level=None, extra_total=0):
        """A new step (``probe``, ``warmup``, ``level``, ``categories``) of ``total`` requests."""
        with self.lock:
            self.snap.update(step=step, total=int(total), done=0, concurrency=concurrency, step_started=self.clock())
            if level is not None:
                self.snap["level"] = int(level)
            self.snap["requests_total"] += int(extra_total)
            self._write(force=True)

    def request_done(self):
        with self.lock:
            self.snap["done"] += 1
            self.snap["requests_done"] += 1
            self._write(force=False)

    def finish(self):
        with self.lock:
            self.snap.update(step="finished", finished=True)
            self._write(force=True)

    def _write(self, force):
        now = self.clock()
        if not force and self.last_write is not None and now - self.last_write < self.every:
            return
        self.last_write = now
        self.snap["updated"] = now
        try:
            self.sink(dict(self.snap))
        except Exception:  # progress is for the operator's eyes: never a reason to fail a benchmark
            pass


def eta_seconds(snap, now):
    """Seconds left, from the pace so far over all requests of the run; None before the first one."""
    done = snap.get("requests_done") or 0
    total = snap.get("requests_total") or 0
    started = snap.get("started")
    if not done or started is None or total <= done:
        return None
    return (now - started) * (total - done) / float(done)


def soonest_end_seconds(snap, now):
    """Seconds until the run could end at the earliest, or None before the step's first request.

    The current step's pace (its own requests at its own concurrency, those in flight counted as done) for the
    rest of the step; every later request as if at the run's highest concurrency, and as if throughput grew in
    proportion to it (it grows less). So the estimate errs short: a waiter that looks then looks early, not
    late (eta_seconds, the pace over the whole run, runs long once a faster level follows a slow one).
    """
    try:
        done, total = int(snap.get("done") or 0), int(snap.get("total") or 0)
        step_started = float(snap["step_started"])
        left_total = int(snap.get("requests_total") or 0) - int(snap.get("requests_done") or 0)
        current = int(snap.get("concurrency") or 1)
        highest = max([int(c) for c in snap.get("concurrencies") or []] + [current])
    except (KeyError, TypeError, ValueError):
        return None
    if done <= 0 or current < 1:
        return None
    left_here = max(0, total - done)
    left_later = max(0, left_total - left_here)
    # The requests in flight as if about to finish: at concurrency c they finish in bunches of c, and the
    # time since the last bunch would otherwise read as a slower pace.
    pace = (now - step_started) / float(done + min(current, left_here))
    return max(0.0, left_here * pace + left_later * pace * current / float(highest))


def duration_text(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return "%d s" % seconds
    return "%d min %02d s" % (seconds // 60, seconds % 60)


STEP_WORDS = {
    "starting": "starting",
    "probe": "probe request",
    "warmup": "warmup",
    "level": "measuring",
    "categories": "acceptance per category",
    "answers": "greedy answers (equivalence check)",
    "finished": "finished",
}


def describe(snap, now, label=None):
    """One line: "<label>: measuring c=8 (level 2 of 2): 31/50 requests; run 112/122, about 40 s left"."""
    head = "%s: " % label if label else ""
    if not isinstance(snap, dict) or snap.get("version") != VERSION:
        return head + "running (no progress written yet)"
    if snap.get("kind", "bench") != "bench":
        return head + "running (progress of another kind: %s)" % snap.get("kind")
    step = snap.get("step") or "starting"
    text = STEP_WORDS.get(step, str(step))
    if snap.get("concurrency") is not None:
        text += " c=%s" % snap["concurrency"]
    if step in ("warmup", "level") and snap.get("levels"):
        text += " (level %s of %s)" % (snap.get("level"), snap.get("levels"))
    if step not in ("starting", "finished"):
        text += ": %s/%s requests" % (snap.get("done", 0), snap.get("total", 0))
    text += "; run %s/%s" % (snap.get("requests_done", 0), snap.get("requests_total", 0))
    started = snap.get("started")
    if started is not None:
        text += ", %s elapsed" % duration_text(max(0.0, now - started))
    eta = eta_seconds(snap, now)
    if eta is not None:
        text += ", about %s left" % duration_text(eta)
    updated = snap.get("updated")
    if updated is not None and now - updated > 60:
        text += " (no finished request for %s)" % duration_text(now - updated)
    return head + text
