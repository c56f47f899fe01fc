# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Two processes race for one stale rollout lock: exactly one may take it over.

``widen`` holds both between the staleness decision and the takeover, which is
where the lock without its guard let both win (the test fails without the
guard: try it by replacing ``lock.guarded`` with a no-op).
"""
import datetime
import json
import multiprocessing
import os
import time

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import lock as rl
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import LockHeld

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def later(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def stored(path):
    with open(path) as handle:
        return json.load(handle)


def _contend(path, name, barrier, results, widen):
    if widen:
        # Both processes have judged the lock stale before either replaces it.
        rl._after_stale_decision = lambda: time.sleep(0.3)
    barrier.wait()
    try:
        changed, holder, unused = rl.acquire(path, name, name, later(7200), timeout=3600)
        results.put((name, "acquired", holder["token"]))
    except LockHeld as exc:
        results.put((name, "refused", str(exc)[:80]))


@pytest.mark.parametrize("widen", [False, True])
def test_two_processes_racing_for_a_stale_lock_one_wins(tmp_path, widen):
    path = str(tmp_path / "rollout.lock")
    ctx = multiprocessing.get_context("fork")
    for _round in range(3):
        if os.path.exists(path):
            os.unlink(path)
        rl.acquire(path, "crashed-run", "ctl-0", NOW)  # stale by 7200 s
        barrier = ctx.Barrier(2)
        results = ctx.Queue()
        procs = [ctx.Process(target=_contend, args=(path, name, barrier, results, widen))
                 for name in ("ctl-a", "ctl-b")]
        for proc in procs:
            proc.start()
        outcome = [results.get(timeout=30) for unused in procs]
        for proc in procs:
            proc.join(30)
        winners = [o for o in outcome if o[1] == "acquired"]
        assert len(winners) == 1, outcome
        assert stored(path)["token"] == winners[0][2]
