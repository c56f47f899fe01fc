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
            self.snap.update(step=step, total=int(total), done=0, concurrency=concurrency)
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
