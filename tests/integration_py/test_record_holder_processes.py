# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""holder.py against real processes: a forked worker finds its parent, a process that ended is gone
(tests/unit/plugins/module_utils/test_record_holder.py has the rest, without starting one)."""
import os
import subprocess
import sys

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import holder as h


def me():
    return h.controller_identity("ctl-1")


def holder_of(ident):
    return {"owner": "killed", "token": "0" * 32, "controller_id": ident}


def dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_forked_worker_finds_its_parent_with_the_same_command_line():
    # a child started by fork keeps the parent's command line: the farthest such ancestor is the main process
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.write(write, str(h.playbook_pid()).encode())
        os._exit(0)
    os.close(write)
    found = int(os.read(read, 64))
    os.waitpid(pid, 0)
    assert found == h.playbook_pid() == h.playbook_pid(os.getpid())


def test_a_dead_process_of_this_controller_is_gone():
    ident = dict(me(), pid=dead_pid())
    reason = h.holder_gone(holder_of(ident), me())
    assert "has ended" in reason and "pid %d" % ident["pid"] in reason


@pytest.mark.parametrize("change", [
    {"host": "ctl-2"},                 # another controller: only its heartbeat can say
    {"boot_id": "another-boot"},       # this controller rebooted: the pid means nothing now... and its heartbeat ages
    {"boot_id": None},                 # no /proc on that controller
    {"pid": None}, {"pid": "123"}, {"pid": True}, {"pid": 1}, {"pid": 0},
])
def test_what_cannot_be_judged_from_here_is_never_gone(change):
    ident = dict(me(), pid=dead_pid())
    ident.update(change)
    assert h.holder_gone(holder_of(ident), me()) == ""
