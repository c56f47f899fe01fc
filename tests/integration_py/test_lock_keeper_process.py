# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The lock keeper as a process (issue 30 item 3): forked detached from the task's worker, it stamps the
lock alive with the real beat script (POSIX sh, read back by lock.py), stops when its controller process
ends or the lock is no longer its run's, and holds no pipe of its caller open."""
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import holder as lock_holder
from ansible_collections.jetson.specdec.plugins.module_utils.record import lock as rl
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import LockHeld, utc_now
from ansible_collections.jetson.specdec.plugins.plugin_utils import lock_keeper


def sh(command):
    return subprocess.run(["/bin/sh", "-c", command], capture_output=True, check=False).returncode


def running(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def wait_for(predicate, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_the_beat_script_stamps_what_lock_py_reads_and_only_for_its_token(tmp_path):
    path = str(tmp_path / "rollout.lock")
    unused, holder, unused2 = rl.acquire(path, "run-a", "ctl-a", utc_now(), timeout=3900, clock=rl.board_clock())
    assert sh(lock_keeper.beat_command(path, holder["token"], 60)) == 0
    alive = rl.read_alive(path, holder["token"])
    assert alive and alive["liveness"] == 60 and alive["boot_id"] == rl.board_clock()["boot_id"], alive
    assert abs(alive["uptime"] - rl.board_clock()["uptime"]) < 5
    assert oct(os.stat(rl.alive_path(path)).st_mode & 0o777) == "0o600"
    # the stamp makes the lock's liveness count: fresh now
    with pytest.raises(LockHeld) as held:
        rl.acquire(path, "run-b", "ctl-b", utc_now(), timeout=600, clock=rl.board_clock())
    assert "stale after 60 s: its controller's keeper" in str(held.value)
    # another token: the beat says so and writes nothing
    other = "0" * 32
    os.unlink(rl.alive_path(path))
    assert sh(lock_keeper.beat_command(path, other, 60)) == lock_keeper.NOT_OURS_RC
    assert not os.path.exists(rl.alive_path(path))
    assert sorted(os.listdir(str(tmp_path))) == ["rollout.lock", "rollout.lock.guard"]


def test_a_forked_keeper_beats_detached_and_stops_with_its_controller(tmp_path):
    path = str(tmp_path / "rollout.lock")
    unused, holder, unused2 = rl.acquire(path, "run-a", "ctl-a", utc_now(), timeout=3900, clock=rl.board_clock())
    # the "controller": a process the test ends, as ansible-playbook ends
    controller = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    start = lock_holder.process_start(controller.pid)
    log = tmp_path / "beats.log"
    try:
        began = time.time()
        # started from a child whose stdout is a pipe, as pytest runs ansible-playbook: the caller must get EOF
        script = ("import sys; sys.path[:0] = %r\n"
                  "from ansible_collections.jetson.specdec.plugins.plugin_utils import lock_keeper\n"
                  "import subprocess\n"
                  "def run(c):\n"
                  "    open(%r, 'a').write('beat\\n')\n"
                  "    return subprocess.run(['/bin/sh', '-c', c], check=False).returncode\n"
                  "print(lock_keeper.start(run, %r, %r, 12, %d, %d))\n"
                  % (sys.path, str(log), path, holder["token"], controller.pid, start))
        spawner = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True)
        assert time.time() - began < 10, "the caller waited for the keeper to end"
        keeper = int(spawner.stdout.strip())
        assert running(keeper)
        # a session of its own (the first child's; the keeper is not its leader, so it never gets a terminal)
        assert os.getsid(keeper) not in (os.getsid(0), keeper), "the keeper stays in the caller's session"
        assert wait_for(lambda: log.exists() and log.read_text().count("beat") >= 3, 20), "fewer than 3 beats in 20 s"
        assert rl.read_alive(path, holder["token"])["liveness"] == 12
        controller.kill()
        controller.wait()
        assert wait_for(lambda: not running(keeper), 5), "the keeper outlived its controller"
        beats = log.read_text().count("beat")
        time.sleep(3)
        assert log.read_text().count("beat") == beats
    finally:
        if controller.poll() is None:
            controller.kill()


def test_a_keeper_stops_when_its_lock_is_released(tmp_path):
    path = str(tmp_path / "rollout.lock")
    unused, holder, unused2 = rl.acquire(path, "run-a", "ctl-a", utc_now(), timeout=3900, clock=rl.board_clock())
    me = os.getpid()
    script = ("import sys, subprocess; sys.path[:0] = %r\n"
              "from ansible_collections.jetson.specdec.plugins.plugin_utils import lock_keeper\n"
              "print(lock_keeper.start(lambda c: subprocess.run(['/bin/sh', '-c', c], check=False).returncode,"
              " %r, %r, 12, %d, %d))\n" % (sys.path, path, holder["token"], me, lock_holder.process_start(me)))
    keeper = int(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                timeout=30, check=True).stdout.strip())
    assert wait_for(lambda: rl.read_alive(path, holder["token"]) is not None, 10)
    rl.release(path, token=holder["token"])
    assert wait_for(lambda: not running(keeper), 10), "the keeper went on after the release"
