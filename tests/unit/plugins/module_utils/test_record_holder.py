# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""holder.py: who took a rollout lock, and whether that controller process is certainly gone."""
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


def test_identity_names_this_process_tree_on_linux():
    ident = me()
    assert ident["host"] == "ctl-1"
    assert ident["boot_id"] and ident["pid"] > 1 and isinstance(ident["start"], int)
    assert h.process_start(ident["pid"]) == ident["start"]


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


def test_a_reused_pid_is_gone_too():
    ident = dict(me(), start=me()["start"] - 1)  # the pid lives, but started later than the recorded one
    assert "started later" in h.holder_gone(holder_of(ident), dict(me(), pid=1234567))


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


@pytest.mark.parametrize("holder", [None, {}, {"controller_id": None}, {"controller_id": "ctl-1"}, "x", []])
def test_locks_without_an_identity_are_never_gone(holder):
    assert h.holder_gone(holder, me()) == ""


def test_a_live_holder_and_this_very_run_are_not_gone():
    assert h.holder_gone(holder_of(me()), me()) == ""
    parent = dict(me(), pid=os.getppid(), start=h.process_start(os.getppid()))
    assert h.holder_gone(holder_of(parent), me()) == ""


def test_stat_with_spaces_and_parentheses_in_the_name(tmp_path):
    (tmp_path / "77").mkdir()
    fields = ["S", "1"] + ["0"] * 17 + ["987654"] + ["0"] * 10
    (tmp_path / "77" / "stat").write_text("77 (a b) (c)) " + " ".join(fields) + "\n")
    assert h.process_start(77, str(tmp_path)) == 987654
    assert h.process_start(78, str(tmp_path)) is None
