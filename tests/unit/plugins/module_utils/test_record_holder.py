# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""holder.py: who took a rollout lock, and whether that controller process is certainly gone (tests/integration_py/
test_record_holder_processes.py starts and forks the processes it judges)."""
import os

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import holder as h


def me():
    return h.controller_identity("ctl-1")


def holder_of(ident):
    return {"owner": "killed", "token": "0" * 32, "controller_id": ident}


def test_identity_names_this_process_tree_on_linux():
    ident = me()
    assert ident["host"] == "ctl-1"
    assert ident["boot_id"] and ident["pid"] > 1 and isinstance(ident["start"], int)
    assert h.process_start(ident["pid"]) == ident["start"]


def test_a_reused_pid_is_gone_too():
    ident = dict(me(), start=me()["start"] - 1)  # the pid lives, but started later than the recorded one
    assert "started later" in h.holder_gone(holder_of(ident), dict(me(), pid=1234567))


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
