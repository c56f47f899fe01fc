# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The controller's keeper of a rollout lock: stamps it alive while this ``ansible-playbook`` runs (issue 30).

A rollout refreshes its lock between steps, so the lock had to outlive the longest step (a benchmark level, a
restart; 65 minutes at the defaults), and a host that waits in lockstep while the other hosts of its batch
measure more rounds got no refresh at all. A controller that died (a laptop closed, a CI job killed) left its
hosts locked for that long, and no other controller can see whether it died.

The keeper lives outside the task flow: when jetson.specdec.rollout_state takes a lock with ``keeper`` set,
its action forks this process from the task's worker, detached from the play. Every ``interval`` seconds it
runs one shell command on the host over the task's own connection (no Python on the board, nothing that
disturbs a benchmark): if the lock still carries this run's token, write ``<lock>.alive`` with the board's
boot id and uptime and the ``liveness`` it promises. lock.py judges such a lock by that liveness (two
minutes by default) instead of the longest step. The keeper stops, and the stamp then ages, when:

- the ``ansible-playbook`` process that took the lock is gone (checked every second by pid and start time);
- the lock no longer carries its token (released at the end of the host's evaluation, taken over, broken);
- its lifetime ends (a bound in case both checks above go blind).

A host the keeper cannot reach for a while (a network partition) is not stamped; after ``liveness`` another
controller may take it over, and this run then stops at its next lock check (lock.refresh raises LockHeld).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import shlex
import time

from ansible_collections.jetson.specdec.plugins.module_utils.record import holder as lock_holder

# The beat's own exit code when the lock is no longer this run's.
NOT_OURS_RC = 3
# After a failed beat (the connection hiccuped) the next one comes sooner than the interval.
RETRY_AFTER = 5
POLL = 1.0
DEFAULT_LIFETIME = 2 * 86400

BEAT_SCRIPT = r"""lock=%(lock)s
grep -qF %(quoted_token)s "$lock" 2>/dev/null || exit %(not_ours)d
boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null) || boot=
up=$(cut -d' ' -f1 /proc/uptime 2>/dev/null) || up=
case "$up" in ''|*[!0-9.]*) up=null ;; esac
case "$boot" in *[!0-9a-f-]*) boot= ;; esac
umask 077
tmp="$lock.alive.$$"
printf '{"token": "%%s", "boot_id": "%%s", "uptime": %%s, "refreshed_at": "%%s", "liveness": %(liveness)d}\n' \
  %(token)s "$boot" "$up" "$(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ)" > "$tmp" && mv -f "$tmp" "$lock.alive"
"""


def interval_for(liveness):
    """A beat every sixth of the liveness (at least 2 s): five beats may be lost before the lock ages."""
    return max(2, int(liveness) // 6)


def beat_command(lock_path, token, liveness):
    """The shell command of one beat (POSIX sh, grep, cut, date, mv: what every L4T image has)."""
    if not token or not all(c in "0123456789abcdef" for c in token):
        raise ValueError("a lock token is lowercase hex, got %r" % (token,))
    return BEAT_SCRIPT % {"lock": shlex.quote(lock_path), "token": shlex.quote(token),
                          "quoted_token": shlex.quote('"%s"' % token), "not_ours": NOT_OURS_RC,
                          "liveness": int(liveness)}


def controller_alive(pid, start, proc=lock_holder.PROC):
    """True while the process ``pid`` that started at ``start`` (clock ticks since boot) runs."""
    return lock_holder.process_start(pid, proc) == start


def keep(beat, alive, interval, lifetime=DEFAULT_LIFETIME, sleep=time.sleep, clock=time.monotonic, poll=POLL):
    """Beat every ``interval`` seconds until there is a reason to stop; returns that reason.

    ``beat()`` returns "ok", "not_ours" (the lock is no longer this run's) or "error" (try again sooner);
    ``alive()`` says whether the controller still runs.
    """
    end = clock() + lifetime
    due = clock()
    beats = 0
    while True:
        if not alive():
            return "controller_gone", beats
        now = clock()
        if now >= end:
            return "lifetime", beats
        if now >= due:
            outcome = beat()
            if outcome == "not_ours":
                return "lock_not_ours", beats
            if outcome == "ok":
                beats += 1
                due = now + interval
            else:
                due = now + min(interval, RETRY_AFTER)
        sleep(max(0.0, min(poll, due - clock())))


def _detach():
    """In the keeper: no terminal, no inherited pipe (ansible-playbook's caller waits for their end), no queue
    to the play's display (the worker's messages go through it)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, 65536)
    try:
        from ansible.utils.display import Display
        Display()._final_q = None  # the singleton: print to /dev/null, never into the dead worker's queue
    except Exception:  # pylint: disable=broad-except
        pass


def start(run_command, lock_path, token, liveness, controller_pid, controller_start, lifetime=DEFAULT_LIFETIME):
    """Fork the keeper (detached: its own session, re-parented to init) and return its pid.

    ``run_command(cmd)`` runs ``cmd`` on the host and returns its exit code; it is called only in the keeper.
    """
    command = beat_command(lock_path, token, liveness)
    interval = interval_for(liveness)
    read_end, write_end = os.pipe()
    first = os.fork()
    if first:
        os.close(write_end)
        with os.fdopen(read_end, "rb") as handle:
            raw = handle.read(32)
        os.waitpid(first, 0)
        try:
            return int(raw.decode("ascii").strip())
        except ValueError:
            return None
    # the first child: a session of its own, then the keeper, then gone (init adopts the keeper)
    try:
        os.close(read_end)
        os.setsid()
        keeper = os.fork()
        if keeper:
            os.write(write_end, str(keeper).encode("ascii"))
            os._exit(0)
        _detach()

        def beat():
            try:
                rc = run_command(command)
            except Exception:  # pylint: disable=broad-except
                return "error"
            return "ok" if rc == 0 else ("not_ours" if rc == NOT_OURS_RC else "error")

        keep(beat, lambda: controller_alive(controller_pid, controller_start), interval, lifetime)
    finally:
        os._exit(0)  # never return into the worker's code
