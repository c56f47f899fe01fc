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
            # each level's requests, so the time left can be estimated level by level (eta_seconds)
            "num_prompts": int(num_prompts), "warmup_prompts": int(warmup_prompts),
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
            now, snap = self.clock(), self.snap
            if snap.get("done") and snap.get("concurrency"):
                # the step that ends: one request's latency at its batch, for the next step's first estimate
                batch = min(int(snap["concurrency"]), int(snap.get("total") or snap["done"]))
                snap["previous"] = {"batch": batch, "latency": (now - snap["step_started"]) * batch / float(snap["done"])}
            self.snap.update(step=step, total=int(total), done=0, concurrency=concurrency, step_started=now)
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


# How throughput grows with concurrency between the level measuring now and a later one not measured yet:
# as concurrency ** SCALING. A Jetson's decode is memory-bound at small batches (nearly linear) and meets its
# compute at larger ones; from c=1 to c=8 the speedup is 2.5x to 7.5x (tests/bench/eta_error.py), whose
# middle in log terms is about 8 ** 0.75, so the estimate errs at most about 1.8x either way.
SCALING = 0.75


def _by_level(snap, now):
    """Seconds left, level by level: the rest of this step at its own pace, every later level's requests at
    that pace scaled by concurrency ** SCALING. None when the snapshot cannot say (an older writer, a step
    that is not a warmup or a level, no finished request in this step yet)."""
    try:
        step = snap.get("step")
        done, total = int(snap.get("done") or 0), int(snap.get("total") or 0)
        current = int(snap["concurrency"])
        level = int(snap.get("level") or 0)
        levels = [int(c) for c in snap.get("concurrencies") or []]
        measured, warmup = int(snap["num_prompts"]), int(snap["warmup_prompts"])
        left_total = int(snap.get("requests_total") or 0) - int(snap.get("requests_done") or 0)
        step_started = float(snap["step_started"])
    except (KeyError, TypeError, ValueError):
        return None
    if step not in ("warmup", "level") or current < 1 or not 1 <= level <= len(levels):
        return None
    left_here = max(0, total - done)
    batch = min(current, total)  # a warmup of 2 prompts at c=8 runs a batch of 2
    elapsed_here = now - step_started
    if done > 0:
        # one request's latency at this batch: the requests in flight as if about to finish
        latency = elapsed_here * batch / float(done + min(batch, left_here))
        here = left_here * latency / batch
    else:
        # nothing finished in this step yet: the last step's latency, scaled to this batch
        previous = snap.get("previous") or {}
        try:
            latency = float(previous["latency"]) * (batch / float(previous["batch"])) ** (1 - SCALING)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            return None
        here = max(0.0, total * latency / batch - elapsed_here)

    def seconds_for(count, concurrency):
        """``count`` requests by ``concurrency`` clients: latency grows as batch ** (1 - SCALING)."""
        size = min(concurrency, count)
        if size < 1:
            return 0.0
        return count * latency * (size / float(batch)) ** (1 - SCALING) / size

    later = [(measured, current)] if step == "warmup" else []
    later += [(warmup, c) for c in levels[level:]] + [(measured, c) for c in levels[level:]]
    rest = max(0, left_total - left_here - sum(n for n, _c in later))  # per-category and answer requests
    seconds = here + rest * latency / batch
    for count, concurrency in later:
        seconds += seconds_for(count, concurrency)
    return max(0.0, seconds)


def eta_seconds(snap, now):
    """Seconds left; None before the first finished request.

    Level by level where the snapshot allows (``_by_level``: a c=1 level's pace says little about a c=8 level's,
    and the whole run's pace overestimated the time left about 4x while c=1 ran); else from the pace so far
    over all requests of the run.
    """
    by_level = _by_level(snap, now)
    if by_level is not None:
        return by_level
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
