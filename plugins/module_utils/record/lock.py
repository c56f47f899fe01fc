# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The per-host rollout lock (stdlib only, Python 3.8+, Linux).

Ownership is a random token made when the lock is taken, not the run id:
operators pass fixed run ids and two controllers can run the same playbook,
so "same run id" must never mean "same holder".  The run id and controller
name are kept in the file only to tell a human who holds it.

Every change to the lock file (take, take over, heartbeat, release) happens
under an exclusive ``flock`` on a guard file next to it, so two processes that
both find a stale lock cannot both take it over, and a release cannot delete a
lock that was just taken over.  The lock file itself appears with its full
content (written to a temporary file, then hard-linked or renamed into place).

How old a lock is comes from the board's boot id and its seconds since boot
(``/proc/sys/kernel/random/boot_id``, ``/proc/uptime``) when the holder's last
sign of life was in this boot: a step of the wall clock (NTP after a boot
without an RTC, an operator's ``date -s``) neither freezes a dead holder's lock
nor ages a live one.  Across a reboot only the wall clock remains.

The controller that took the lock records who it is (``controller_id``: host
name, boot id, the pid and start time of its ``ansible-playbook``).  A run on
the same controller that finds that process gone takes the lock over at once
(``take_over_token``): the controller judges that, since only it can see its
own processes (holder.py).

A run of another controller cannot be judged that way, and its steps (a
benchmark level, a restart) and the hosts that wait in lockstep for the others
of their batch leave long gaps between its refreshes.  So the controller keeps
each lock it took alive from outside the task flow: a keeper process
(plugin_utils/lock_keeper.py) stamps ``<lock>.alive`` every few seconds while
its ``ansible-playbook`` runs, and stops with it.  A lock whose keeper stamps
is judged by the keeper's ``liveness`` (two minutes by default), not by the
longest step: a dead controller's lock is taken over within minutes, a live
one's never ages.  A stamp counts only with the token of the lock it keeps.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import binascii
import contextlib
import datetime
import errno
import fcntl
import json
import os
import stat
import time

BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
UPTIME_PATH = "/proc/uptime"

from ansible_collections.jetson.specdec.plugins.module_utils.record.state import (
    LockHeld, StateError, describe_os_error, ensure_private_dir, iso, parse_iso,
)

LOCK_MODE = 0o600
GUARD_WAIT = 10.0  # seconds; the guarded sections are a few syscalls long
DEFAULT_TIMEOUT = 3600
# Heartbeats come between steps, so the lock must outlive the longest step
# with room for a slow board: twice the step, plus the time Ansible needs to
# reach the next heartbeat task.
STEP_FACTOR = 2
STEP_SLACK = 300

# The keeper's stamp next to the lock, and the shortest liveness it may declare (a beat every interval, a
# liveness of at least a few intervals: roles/rollout's rollout_lock_liveness).
ALIVE_SUFFIX = ".alive"
MIN_LIVENESS = 10
ALIVE_MAX_BYTES = 4096

# Test hook: called after a stale lock was judged stale and before it is
# replaced.  Tests widen this window to prove the guard closes the race.
_after_stale_decision = None


def new_token():
    """128 random bits, hex: unique per lock taken."""
    return binascii.hexlify(os.urandom(16)).decode("ascii")


def lock_timeout_for(step_seconds, heartbeat=True, slack=STEP_SLACK):
    """Seconds after which a lock counts as stale, from the run's own durations.

    ``step_seconds``: the longest time each step of a rollout may take (a health
    wait, one benchmark level's ``max_duration``, a restart ...).  With heartbeats
    between steps the lock only has to outlive the longest one; without them it
    has to outlive the whole rollout (their sum).
    """
    steps = [int(s) for s in (step_seconds or [])]
    if not steps:
        return DEFAULT_TIMEOUT
    if any(s < 0 for s in steps):
        raise StateError("step durations must be >= 0 seconds, got %r" % (steps,))
    if heartbeat:
        return max(steps) * STEP_FACTOR + slack
    return sum(steps) + slack


def board_clock(boot_id_path=BOOT_ID_PATH, uptime_path=UPTIME_PATH):
    """{boot_id, uptime}: this boot's id and the seconds since it (a clock no wall-clock step moves); {} when
    /proc does not say (then ages fall back to the wall clock)."""
    try:
        with open(boot_id_path) as handle:
            boot_id = handle.read().strip()
        with open(uptime_path) as handle:
            uptime = float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return {}
    if not boot_id or uptime < 0:
        return {}
    return {"boot_id": boot_id, "uptime": round(uptime, 2)}


def _stamp(payload, clock):
    """The holder's last sign of life on the board's monotonic clock, next to the wall-clock one."""
    if clock and clock.get("boot_id"):
        payload["boot_id"] = clock["boot_id"]
        payload["uptime"] = clock["uptime"]
    return payload


def guard_path(path):
    return path + ".guard"


@contextlib.contextmanager
def guarded(path, wait=GUARD_WAIT):
    """Hold an exclusive flock on ``<path>.guard`` (created 0600 on first use)."""
    gpath = guard_path(path)
    try:
        fd = os.open(gpath, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, LOCK_MODE)
    except OSError as exc:
        raise StateError(describe_os_error("open the lock guard", gpath, exc))
    try:
        give_up = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise StateError(describe_os_error("lock the guard", gpath, exc))
                if time.monotonic() >= give_up:
                    raise StateError("Another process has held %s for over %d s while changing the rollout lock; "
                                     "if no rollout_state task is running on this host, delete it."
                                     % (gpath, wait))
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def _read_regular(path, limit):
    """The first ``limit`` bytes of the regular file at ``path``, or None when it is something else (a FIFO, a
    directory). Never follows a link, never blocks; os.open's OSError (ENOENT, ELOOP for a link) goes up."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(limit)


def read_holder(path):
    """The lock's content as a dict; {} for an unparsable file; None when there is no lock."""
    try:
        raw = _read_regular(path, 65536)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise StateError(describe_os_error("read the rollout lock", path, exc))
    if raw is None:
        raise StateError("Rollout lock %s is not a regular file; remove it." % path)
    try:
        data = json.loads(raw.decode("utf-8") or "{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def alive_path(path):
    return path + ALIVE_SUFFIX


def read_alive(path, token):
    """The keeper's stamp for the lock with ``token`` ({token, boot_id, uptime, refreshed_at, liveness}), or
    None: no stamp, another token's, unreadable or malformed (then the lock's own rule applies, the
    conservative one)."""
    if not token:
        return None
    try:
        raw = _read_regular(alive_path(path), ALIVE_MAX_BYTES)
        data = json.loads(raw.decode("utf-8")) if raw is not None else None
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("token") != token:
        return None
    liveness = data.get("liveness")
    if not isinstance(liveness, int) or isinstance(liveness, bool) or liveness < MIN_LIVENESS:
        return None
    return data


def _remove_alive(path):
    """A new holder or none: the last holder's keeper stamp goes (its token would not count anyway)."""
    try:
        os.unlink(alive_path(path))
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise StateError(describe_os_error("remove the lock keeper's stamp", alive_path(path), exc))


def judge(holder, path, now, timeout, clock=None):
    """(age, limit, alive): seconds since the holder's last sign of life (its refresh or its keeper's stamp),
    the age after which it is stale, and the keeper's stamp (None without a keeper)."""
    age = lock_age(holder, path, now, clock)
    alive = read_alive(path, holder.get("token"))
    if alive is None:
        return age, effective_timeout(holder, timeout), None
    return min(age, lock_age(alive, alive_path(path), now, clock)), alive["liveness"], alive


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def lock_age(holder, path, now, clock=None):
    """Seconds since the holder last showed life (heartbeat, else start, else file mtime).

    With ``clock`` (board_clock()) and a holder stamped in the same boot, the age is the difference of the
    seconds since boot: a wall-clock step changes nothing.  Otherwise (another boot, a lock from before the
    stamp, no /proc) the wall clock is all there is.
    """
    then = _number(holder.get("uptime"))
    if clock and clock.get("boot_id") and holder.get("boot_id") == clock["boot_id"] and then is not None:
        return max(0.0, clock["uptime"] - then)
    last = parse_iso(holder.get("refreshed_at")) or parse_iso(holder.get("started_at"))
    if last is None:
        try:
            last = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
        except OSError:
            return 0.0
    return (now - last).total_seconds()


def effective_timeout(holder, timeout):
    """The holder declared how long its steps take; a contender may not judge it by a shorter clock."""
    declared = holder.get("timeout")
    if isinstance(declared, int) and not isinstance(declared, bool) and declared > timeout:
        return declared
    return timeout


def describe(holder, alive=None):
    text = "owner %r from controller %r (taken %s, last heartbeat %s" % (
        holder.get("owner"), holder.get("controller"), holder.get("started_at"),
        holder.get("refreshed_at") or "none")
    if alive:
        text += ", its controller's keeper last beat %s" % (alive.get("refreshed_at") or "?")
    return text + ")"


def _write_new(path, payload, replace):
    """Put ``payload`` at ``path`` with full content on appearance.

    ``replace=False`` fails with EEXIST when a lock exists (hard link of a
    temporary file); ``replace=True`` swaps it atomically (rename).
    """
    directory = os.path.dirname(path)
    tmp = os.path.join(directory, ".%s.%s.tmp" % (os.path.basename(path), new_token()[:12]))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, LOCK_MODE)
    try:
        try:
            os.fchmod(fd, LOCK_MODE)  # umask must not widen or narrow it
            os.write(fd, (json.dumps(payload, sort_keys=True) + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _matches(holder, token, owner, controller=None):
    if token:
        return holder.get("token") == token
    # Callers that do not pass the token yet (and locks from before tokens):
    # the run id, and the controller when given, are all there is.
    if owner is None or holder.get("owner") != owner:
        return False
    return controller is None or holder.get("controller") in (None, controller)


def acquire(path, owner, controller, now, timeout=DEFAULT_TIMEOUT, token=None, check_mode=False, clock=None,
            controller_id=None, take_over_token=None, take_over_reason=None):
    """Take the lock.  Returns (changed, holder, warnings).

    Passing the ``token`` of the lock we hold is a heartbeat (no change
    reported).  A lock with any other token is someone else's, even with the
    same run id: it is refused while fresh and taken over atomically when older
    than the larger of ``timeout`` and the holder's own declared timeout.

    ``take_over_token``: the caller found that holder gone (its controller process is dead, holder.py);
    the lock is taken over when it still carries that token, whatever its age, under the guard (a lock
    taken meanwhile by a third run is judged as usual).
    """
    if not owner:
        raise StateError("the lock needs an owner (the run id) to tell a human who holds it")
    if timeout < 0:
        raise StateError("lock_timeout must be >= 0 seconds, got %d" % timeout)
    path = os.path.abspath(path)
    payload = _stamp({"owner": owner, "controller": controller, "token": token or new_token(),
                      "started_at": iso(now), "refreshed_at": iso(now), "timeout": int(timeout), "pid": os.getpid()},
                     clock)
    if controller_id:
        payload["controller_id"] = controller_id
    gone = (take_over_token, take_over_reason)
    if check_mode:
        return _acquire_decision(path, read_holder(path), payload, now, timeout, token, check_mode=True, clock=clock,
                                 gone=gone)
    ensure_private_dir(os.path.dirname(path))
    with guarded(path):
        holder = read_holder(path)
        changed, result, warnings = _acquire_decision(path, holder, payload, now, timeout, token, clock=clock,
                                                      gone=gone)
        if changed:
            try:
                _write_new(path, payload, replace=holder is not None)
            except OSError as exc:
                raise StateError(describe_os_error("write the rollout lock", path, exc))
            _remove_alive(path)
        elif token and result.get("token") == token:
            refreshed = _stamp(dict(result, refreshed_at=iso(now), timeout=max(int(timeout), result.get("timeout") or 0)),
                               clock)
            try:
                _write_new(path, refreshed, replace=True)
            except OSError as exc:
                raise StateError(describe_os_error("refresh the rollout lock", path, exc))
            result = refreshed
    return changed, result, warnings


def take_over(path, owner, controller, now, timeout=DEFAULT_TIMEOUT, check_mode=False, clock=None, controller_id=None):
    """Take the lock whoever holds it (rollout_break_lock: the operator knows that run is dead), in one step
    under the guard, so no third run can slip in between. Returns (holder, broken): the new holder and the
    lock it replaced (None when there was none)."""
    if not owner:
        raise StateError("the lock needs an owner (the run id) to tell a human who holds it")
    path = os.path.abspath(path)
    payload = _stamp({"owner": owner, "controller": controller, "token": new_token(),
                      "started_at": iso(now), "refreshed_at": iso(now), "timeout": int(timeout), "pid": os.getpid()},
                     clock)
    if controller_id:
        payload["controller_id"] = controller_id
    if check_mode:
        return payload, read_holder(path)
    ensure_private_dir(os.path.dirname(path))
    with guarded(path):
        broken = read_holder(path)
        try:
            _write_new(path, payload, replace=broken is not None)
        except OSError as exc:
            raise StateError(describe_os_error("write the rollout lock", path, exc))
        _remove_alive(path)
    return payload, broken


def _acquire_decision(path, holder, payload, now, timeout, token, check_mode=False, clock=None, gone=(None, None)):
    if holder is None:
        return True, payload, []
    if token and holder.get("token") == token:
        return False, holder, []
    if gone[0] and holder.get("token") == gone[0]:
        return True, payload, ["Took over the rollout lock %s from %s: %s."
                               % (path, describe(holder), gone[1] or "its holder is gone")]
    age, limit, alive = judge(holder, path, now, timeout, clock)
    if age <= limit:
        same_id = holder.get("owner") == payload["owner"]
        raise LockHeld(
            "Rollout lock %s is held by %s, %d s since its last sign of life (stale after %d s%s). %s"
            "If no rollout is running on this host any more, clear it with "
            "'jetson.specdec.rollout_state: state=unlock force=true' (rollout_break_lock=true) or wait."
            % (path, describe(holder, alive), age, limit,
               ": its controller's keeper stamps the lock while that controller runs" if alive else "",
               "It carries this run's id but not this run's token: another controller (or an earlier, "
               "interrupted run with the same run id) holds it. " if same_id else
               "Another rollout is probably running on this host. "), holder)
    if _after_stale_decision is not None and not check_mode:
        _after_stale_decision()
    warning = ("Took over a stale rollout lock %s from %s: %d s without a heartbeat > %d s%s."
               % (path, describe(holder, alive), age, limit,
                  " (its controller's keeper stopped: that controller ended or lost the host)" if alive else ""))
    return True, payload, [warning]


def refresh(path, token, now, timeout=None, check_mode=False, clock=None):
    """Heartbeat: stamp ``refreshed_at`` on the lock we hold.  Returns the holder.

    Raises LockHeld when the lock is gone or someone else holds it (it was
    taken over as stale): the rollout must stop, another run may be working.
    """
    if not token:
        raise StateError("state=refresh needs the token returned by state=lock (lock.token)")
    path = os.path.abspath(path)
    if check_mode:
        holder = read_holder(path)
        _check_ours(path, holder, token, "refresh")
        return holder
    with guarded(path):
        holder = read_holder(path)
        _check_ours(path, holder, token, "refresh")
        new = _stamp(dict(holder, refreshed_at=iso(now)), clock)
        if timeout is not None:
            new["timeout"] = int(timeout)
        try:
            _write_new(path, new, replace=True)
        except OSError as exc:
            raise StateError(describe_os_error("refresh the rollout lock", path, exc))
    return new


def _check_ours(path, holder, token, action):
    if holder is None:
        raise LockHeld("Cannot %s the rollout lock %s: it is gone (removed with force, or by hand). Another "
                       "rollout may have started on this host; stop this one." % (action, path), None)
    if not _matches(holder, token, None):
        raise LockHeld("Cannot %s the rollout lock %s: it now belongs to %s, not to this run. It was taken over "
                       "(this run went quiet for longer than its timeout) or broken by hand; stop this rollout."
                       % (action, path, describe(holder)), holder)


def release(path, token=None, owner=None, force=False, check_mode=False, controller=None):
    """Remove the lock if we hold it (or ``force``).  Returns (changed, holder, warnings)."""
    path = os.path.abspath(path)
    warnings = []
    if not force and not token and not owner:
        raise StateError("state=unlock needs the token returned by state=lock, or force=true")
    if check_mode:
        holder = read_holder(path)
        if holder is None:
            return False, None, warnings
        if not force:
            _check_release(path, holder, token, owner, controller)
        return True, holder, warnings
    if read_holder(path) is None:
        return False, None, warnings
    with guarded(path):
        holder = read_holder(path)
        if holder is None:
            return False, None, warnings
        if not force:
            _check_release(path, holder, token, owner, controller)
            if not token:
                warnings.append("Released the rollout lock %s by run id only; pass the token returned by "
                                "state=lock so a second controller with the same run id cannot release it."
                                % path)
        try:
            os.unlink(path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise StateError(describe_os_error("remove the rollout lock", path, exc))
        _remove_alive(path)
    return True, holder, warnings


def _check_release(path, holder, token, owner, controller):
    if not _matches(holder, token, owner, controller):
        raise LockHeld("Rollout lock %s belongs to %s, not to this run; it was left in place. Pass force=true "
                       "to remove it anyway." % (path, describe(holder)), holder)
