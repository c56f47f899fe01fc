# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Who holds a rollout lock, seen from the controller (stdlib only, Linux /proc).

A rollout stopped by Ctrl-C or ``timeout -s INT`` never reaches its ``always``
section: its lock stays on the host.  The host cannot tell whether the
controller that took it is alive, but that controller can, for its own
processes.  So the lock records the controller's identity (host name, boot id,
the pid of its ``ansible-playbook`` and that process's start time, which a
reused pid does not share) and a later run on the same controller that finds
the process gone takes the lock over at once (lock.py, ``take_over_token``).
A holder on another controller (another host name or boot) is never judged
here: its heartbeat age decides, as before.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

PROC = "/proc"


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (OSError, IOError):
        return None


def boot_id(proc=PROC):
    raw = _read(os.path.join(proc, "sys", "kernel", "random", "boot_id"))
    return raw.decode("ascii", "replace").strip() if raw else None


def process_start(pid, proc=PROC):
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or None when there
    is no such process.  With the boot id it names one process: a pid reused later starts later."""
    raw = _read(os.path.join(proc, str(pid), "stat"))
    if not raw:
        return None
    # the command name (field 2) is in parentheses and may hold spaces or ')': split after the last one
    fields = raw.decode("ascii", "replace").rpartition(")")[2].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _parent(pid, proc=PROC):
    raw = _read(os.path.join(proc, str(pid), "stat"))
    if not raw:
        return None
    fields = raw.decode("ascii", "replace").rpartition(")")[2].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def playbook_pid(pid=None, proc=PROC):
    """The ``ansible-playbook`` process this one belongs to.

    Templating runs in a worker that ansible-playbook forked for the task (and that ends with it); a fork keeps
    the command line, so the main process is the farthest ancestor with the same one.
    """
    pid = pid or os.getpid()
    cmdline = _read(os.path.join(proc, str(pid), "cmdline"))
    seen = set()
    while cmdline and pid not in seen:
        seen.add(pid)
        parent = _parent(pid, proc)
        if not parent or parent <= 1 or _read(os.path.join(proc, str(parent), "cmdline")) != cmdline:
            break
        pid = parent
    return pid


def controller_identity(host, proc=PROC, pid=None):
    """{host, boot_id, pid, start}: this controller and its ansible-playbook process, for the lock."""
    main = playbook_pid(pid, proc)
    return {"host": host, "boot_id": boot_id(proc), "pid": main, "start": process_start(main, proc)}


def holder_gone(holder, me, proc=PROC):
    """Why ``holder`` (a lock's content) is certainly gone, or "" when that cannot be said from here.

    Only a holder that took the lock from this very controller (same host name and boot id) is judged: its
    ansible-playbook process no longer exists, or the pid now names a process that started later.
    """
    ident = (holder or {}).get("controller_id") if isinstance(holder, dict) else None
    if not isinstance(ident, dict) or not isinstance(me, dict):
        return ""
    if not ident.get("boot_id") or ident.get("boot_id") != me.get("boot_id") or ident.get("host") != me.get("host"):
        return ""
    pid = ident.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        return ""
    if pid == me.get("pid") and ident.get("start") == me.get("start"):
        return ""  # this very run (a lock it took earlier in the play): not gone
    start = process_start(pid, proc)
    if start is None:
        return ("its controller process (ansible-playbook, pid %d on this controller %s) has ended: the run was "
                "interrupted or killed" % (pid, me.get("host")))
    if ident.get("start") is not None and start != ident.get("start"):
        return ("its controller process (ansible-playbook, pid %d on this controller %s) has ended; the pid now "
                "belongs to a process started later" % (pid, me.get("host")))
    return ""
