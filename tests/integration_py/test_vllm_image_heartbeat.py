# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""An image pull that outlasts the rollout lock's timeout (issue 34).

A multi-gigabyte `docker pull` on a board's link can take longer than the lock's timeout; without a heartbeat
during it, the lock goes stale mid-pull and a second controller takes the host over while the first one is about
to switch it. Real parts: the lock file and its code (record/lock.py, as rollout_state takes it), the module,
coreutils' timeout. Docker is a stand-in (a script answering `image inspect` and a `pull` that takes its time),
since the real engine's pull speed cannot be chosen; the contender is a second process taking the lock as a
second controller's rollout_state would.
"""
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import lock as rollout_lock
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import utc_now
from ansible_collections.jetson.specdec.plugins.modules import vllm_image
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

IMAGE = "registry.example.internal/acme/vllm:v0.20.1"
LOCK_TIMEOUT = 3  # seconds; the stand-in's pull takes longer


def _fake_docker(tmp_path, seconds):
    """A docker CLI whose pull takes ``seconds`` and prints progress; `image inspect` sees the image after it."""
    marker = tmp_path / "pulled"
    pids = tmp_path / "pull.pid"
    script = tmp_path / "bin" / "docker"
    script.parent.mkdir(exist_ok=True)
    script.write_text("""#!%(python)s
import os, sys, time
args = sys.argv[1:]
if args[:2] == ["image", "inspect"]:
    if os.path.exists(%(marker)r):
        print("sha256:" + "ab" * 32)
        sys.exit(0)
    sys.stderr.write("Error response from daemon: No such image: %%s\\n" %% args[-1])
    sys.exit(1)
if args[:1] == ["pull"]:
    with open(%(pids)r, "w") as handle:
        handle.write(str(os.getpid()))
    end = time.monotonic() + %(seconds)s
    while time.monotonic() < end:
        print("0123456789ab: Downloading  [=====>   ]", flush=True)
        time.sleep(0.2)
    open(%(marker)r, "w").close()
    print("Status: Downloaded newer image for %%s" %% args[-1])
    sys.exit(0)
sys.exit(2)
""" % {"python": sys.executable, "marker": str(marker), "pids": str(pids), "seconds": seconds})
    script.chmod(0o755)
    return str(script), marker, pids


@pytest.fixture
def held(tmp_path):
    """A real rollout lock, as rollout_state state=lock takes it, with a timeout the pull outlasts."""
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    lock_path = str(state_dir / "rollout.lock")
    _changed, holder, _warnings = rollout_lock.acquire(lock_path, "run-a", "controller-a", utc_now(), timeout=LOCK_TIMEOUT,
                                                       clock=rollout_lock.board_clock())
    return {"path": str(state_dir / "state.json"), "lock": lock_path, "token": holder["token"]}


def _contender(lock_path, after, outcome):
    """A second controller trying the lock once ``after`` seconds into the pull (past the lock's timeout)."""
    time.sleep(after)
    try:
        _changed, holder, warnings = rollout_lock.acquire(lock_path, "run-b", "controller-b", utc_now(),
                                                          timeout=LOCK_TIMEOUT, clock=rollout_lock.board_clock())
        outcome["took_over"] = holder["token"]
        outcome["warnings"] = warnings
    except rollout_lock.LockHeld as exc:
        outcome["refused"] = str(exc)


def _watch(lock_path, stop, seen):
    """The lock's last sign of life (seconds since boot) as the pull goes on."""
    while not stop.is_set():
        holder = rollout_lock.read_holder(lock_path) or {}
        seen.append((time.monotonic(), holder.get("uptime"), holder.get("refreshed_at")))
        time.sleep(0.25)


def _pull_with_contender(docker, heartbeat, lock_path, after):
    outcome, seen, stop = {}, [], threading.Event()
    threads = [threading.Thread(target=_contender, args=(lock_path, after, outcome)),
               threading.Thread(target=_watch, args=(lock_path, stop, seen))]
    for thread in threads:
        thread.start()
    args = {"image": IMAGE, "docker_bin": docker, "timeout": 120}
    if heartbeat:
        args["heartbeat"] = heartbeat
    started = time.monotonic()
    try:
        failed, result = run_module(vllm_image.main, args)
    finally:
        threads[0].join()
        stop.set()
        threads[1].join()
    return failed, result, outcome, seen, time.monotonic() - started


def test_without_a_heartbeat_the_lock_goes_stale_mid_pull_and_a_second_controller_takes_the_host(tmp_path, held):
    # The fault as it was: nothing refreshes the lock during the pull.
    docker, _marker, _pids = _fake_docker(tmp_path, 2 * LOCK_TIMEOUT + 1)
    failed, result, outcome, _seen, _took = _pull_with_contender(docker, None, held["lock"], LOCK_TIMEOUT + 2)
    assert not failed and result["pulled"], result
    assert outcome.get("took_over") and "stale" in " ".join(outcome["warnings"]), outcome


def test_a_pull_longer_than_the_lock_timeout_keeps_the_lock_fresh(tmp_path, held):
    seconds = 2 * LOCK_TIMEOUT + 2
    docker, marker, _pids = _fake_docker(tmp_path, seconds)
    heartbeat = {"path": held["path"], "token": held["token"]}  # the lock next to the state file, as the rollout passes it
    failed, result, outcome, seen, took = _pull_with_contender(docker, heartbeat, held["lock"], LOCK_TIMEOUT + 2)
    assert not failed and result["pulled"] and marker.exists(), result
    assert took >= seconds
    # the second controller was refused while the pull ran, the lock is still this run's
    assert "refused" in outcome and "took_over" not in outcome, outcome
    assert "held by owner 'run-a'" in outcome["refused"], outcome
    assert rollout_lock.read_holder(held["lock"])["token"] == held["token"]
    # a quarter of the lock's timeout (at least a second): a beat before the pull, then one a second or so
    assert result["heartbeats"] >= 1 + seconds // 2, result
    stamps = [uptime for _t, uptime, _r in seen if uptime is not None]
    assert len(set(stamps)) >= 4 and stamps == sorted(stamps), seen
    # never older than the timeout while watched
    gaps = [b[0] - a[0] for a, b in zip(seen, seen[1:]) if b[1] != a[1]]
    assert max(gaps) < LOCK_TIMEOUT, gaps


def test_a_pull_whose_lock_was_taken_away_is_stopped_and_fails_saying_so(tmp_path, held):
    docker, marker, pids = _fake_docker(tmp_path, 60)
    heartbeat = {"path": held["path"], "token": held["token"], "interval": 1}
    outcome = {}

    def breaker():  # rollout_break_lock on another controller (take_over), two seconds into the pull
        time.sleep(2)
        outcome["holder"], outcome["broken"] = rollout_lock.take_over(held["lock"], "run-b", "controller-b", utc_now(),
                                                                      timeout=600, clock=rollout_lock.board_clock())

    thread = threading.Thread(target=breaker)
    thread.start()
    started = time.monotonic()
    failed, result = run_module(vllm_image.main, {"image": IMAGE, "docker_bin": docker, "timeout": 120,
                                                  "heartbeat": heartbeat})
    thread.join()
    assert time.monotonic() - started < 20, "the pull was not stopped"
    assert failed and result["lock_lost"] is True, result
    assert "lost its rollout lock while pulling" in result["msg"] and "controller-b" in result["msg"], result
    assert held["token"] not in json.dumps(result)  # no_log: the token is not echoed
    assert not marker.exists()
    pid = int(pids.read_text())
    time.sleep(0.2)
    assert subprocess.run(["kill", "-0", str(pid)], capture_output=True, check=False).returncode != 0, "docker still runs"
    # the new holder's lock is untouched
    assert rollout_lock.read_holder(held["lock"])["token"] == outcome["holder"]["token"]


def test_a_run_that_no_longer_holds_the_lock_does_not_start_a_pull(tmp_path, held):
    docker, marker, pids = _fake_docker(tmp_path, 1)
    failed, result = run_module(vllm_image.main, {"image": IMAGE, "docker_bin": docker, "timeout": 120,
                                                  "heartbeat": {"path": held["path"], "token": "0" * 32}})
    assert failed and result["lock_lost"] is True and "did not start" in result["msg"], result
    assert not pids.exists() and not marker.exists()


def test_without_a_pull_no_lock_is_touched(tmp_path, held):
    docker, marker, _pids = _fake_docker(tmp_path, 1)
    marker.touch()  # the image is on the host
    before = rollout_lock.read_holder(held["lock"])
    failed, result = run_module(vllm_image.main, {"image": IMAGE, "docker_bin": docker,
                                                  "heartbeat": {"path": held["path"], "token": held["token"]}})
    assert not failed and result["pulled"] is False, result
    assert rollout_lock.read_holder(held["lock"]) == before
    assert os.path.exists(held["lock"])
