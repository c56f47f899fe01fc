# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""A long command (an image pull) run while this run's rollout lock is kept fresh (stdlib only).

The rollout refreshes its lock between steps; a single step longer than the lock's timeout (a multi-gigabyte
``docker pull`` on a board's link) would let it go stale mid-step, and another controller could take the host
over. ``pull_with_heartbeat`` runs the command in a process group of its own and refreshes the lock every
interval; once the lock is someone else's it stops the command. Used by the vllm_image module.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import signal
import subprocess
import tempfile

from ansible_collections.jetson.specdec.plugins.module_utils.record import lock as rollout_lock
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import LockHeld, StateError, utc_now

# The heartbeat's ceiling: a pull of many gigabytes on a board's link takes long, but the lock's age must
# stay far below any sensible timeout.
MAX_HEARTBEAT_INTERVAL = 60


class Heartbeat(object):
    """The rollout lock of this run, refreshed on demand; raises LockHeld once it is someone else's."""

    def __init__(self, spec):
        self.lock_path = spec.get("lock_path") or os.path.join(os.path.dirname(spec["path"]), "rollout.lock")
        self.token = spec["token"]
        self.interval = spec.get("interval") or 0
        self.count = 0
        self.last_error = None

    def beat(self):
        holder = rollout_lock.refresh(self.lock_path, self.token, utc_now(), clock=rollout_lock.board_clock())
        self.count += 1
        if not self.interval:
            declared = holder.get("timeout") if isinstance(holder, dict) else None
            timeout = declared if isinstance(declared, int) and not isinstance(declared, bool) and declared > 0 \
                else rollout_lock.DEFAULT_TIMEOUT
            self.interval = max(1, min(MAX_HEARTBEAT_INTERVAL, timeout // 4))
        return holder


def _stop(proc):
    """End the pull and what it started (its own process group), politely first."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def pull_with_heartbeat(argv, heartbeat):
    """(rc, stdout, stderr, lost): ``argv`` run to its end with the lock refreshed every interval; ``lost`` is the
    LockHeld message when the lock stopped being ours (the pull is then stopped, rc None)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        env = dict(os.environ, LC_ALL="C")
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, close_fds=True,
                                start_new_session=True)  # a group of its own, so _stop reaches docker too
        lost = None
        try:
            while True:
                try:
                    proc.wait(timeout=heartbeat.interval)
                    break
                except subprocess.TimeoutExpired:
                    pass
                try:
                    heartbeat.beat()
                except LockHeld as exc:
                    lost = str(exc)
                    _stop(proc)
                    break
                except StateError as exc:
                    # The lock file could not be written (a full disk, what this pull may well cause): the lock
                    # is still ours and only ages; the next beat tries again, the timeout is the bound.
                    heartbeat.last_error = str(exc)
        except BaseException:
            _stop(proc)
            raise
        out.seek(0)
        err.seek(0)
        return (None if lost else proc.returncode, out.read().decode("utf-8", "replace"),
                err.read().decode("utf-8", "replace"), lost)
