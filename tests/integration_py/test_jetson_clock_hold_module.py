# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""jetson_clock_hold against the test bed's nvpmodel and jetson_clocks stand-ins on a copied board tree."""
import json
import os
import shutil
import sys

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import conditions
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.files import RootReader
from ansible_collections.jetson.specdec.plugins.modules import jetson_clock_hold
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

TESTS = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BOARD = os.path.join(TESTS, "fixtures", "boards", "agx-orin-64gb-devkit-r36.4.4", "root")
SIM_BIN = os.path.join(TESTS, "simulator", "bin")
NODE = "sys/class/devfreq/17000000.gpu"
WATCHED = ("var/lib/nvpmodel/status", NODE + "/min_freq", NODE + "/max_freq")


@pytest.fixture
def board(tmp_path, monkeypatch):
    """An AGX Orin at 30W under DVFS (nobody ran jetson_clocks), with the stand-in tools in its tree."""
    root = tmp_path / "root"
    shutil.copytree(BOARD, str(root))
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"gpu_devfreq": {"node": NODE, "max_hz": 1300500000}}))
    monkeypatch.setenv("JETSON_SIM_SYSROOT", str(root))
    monkeypatch.setenv("JETSON_SIM_PROFILE", str(profile))
    monkeypatch.setenv("HOME", str(tmp_path))
    for rel, tool in (("usr/sbin/nvpmodel", "nvpmodel"), ("usr/bin/jetson_clocks", "jetson_clocks")):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('#!/bin/sh\nexec %s %s "$@"\n' % (sys.executable, os.path.join(SIM_BIN, tool)))
        path.chmod(0o755)
    (root / "var/lib/nvpmodel/status").write_text("pmode:0002\n")
    for name, value in (("max_freq", 612000000), ("min_freq", 306000000), ("cur_freq", 612000000)):
        (root / NODE).mkdir(parents=True, exist_ok=True)
        (root / NODE / name).write_text("%d\n" % value)
    return root


def snapshot(root):
    return dict((rel, (root / rel).read_text()) for rel in WATCHED)


def args(root, tmp, **kw):
    base = {"state": "held", "root": str(root), "run_under_root": True, "state_dir": str(tmp / "state"),
            "owner": "run-1"}
    base.update(kw)
    return base


def sample(root):
    return conditions.sample(RootReader(str(root)))


def test_hold_then_release_puts_back_exactly_what_was_there(board, tmp_path):
    before = snapshot(board)
    failed, held = run_module(jetson_clock_hold.main, args(board, tmp_path))
    assert not failed, held
    assert held["changed"] and held["steps"] == ["record", "store", "mode", "pin"]
    assert held["before"] == {"power_mode": {"name": "30W", "id": 2}, "pinned": False}
    assert held["after"] == {"power_mode": {"name": "MAXN", "id": 0}, "pinned": True}
    during = sample(board)  # what vllm_bench samples during the window
    assert during["maxn"] and during["clocks_pinned"] and during["gpu"]["min_hz"] == 1300500000
    assert (tmp_path / "state" / "clock-hold.json").exists()

    failed, released = run_module(jetson_clock_hold.main, args(board, tmp_path, state="released"))
    assert not failed, released
    assert released["changed"] and released["steps"] == ["mode", "restore", "forget"]
    assert released["after"] == {"power_mode": {"name": "30W", "id": 2}, "pinned": False}
    assert snapshot(board) == before
    assert sorted(os.listdir(str(tmp_path / "state"))) == []


def test_both_directions_are_idempotent(board, tmp_path):
    run_module(jetson_clock_hold.main, args(board, tmp_path))
    failed, again = run_module(jetson_clock_hold.main, args(board, tmp_path))
    assert not failed and not again["changed"] and again["steps"] == []
    # the record still holds the original, not the held state
    assert again["record"]["power_mode"] == {"name": "30W", "id": 2}
    run_module(jetson_clock_hold.main, args(board, tmp_path, state="released"))
    failed, twice = run_module(jetson_clock_hold.main, args(board, tmp_path, state="released"))
    assert not failed and not twice["changed"] and twice["steps"] == []


def test_a_board_already_at_maxn_with_pinned_clocks_is_left_alone(board, tmp_path):
    (board / "var/lib/nvpmodel/status").write_text("pmode:0000\n")
    for name in ("max_freq", "min_freq"):
        (board / NODE / name).write_text("1300500000\n")
    failed, held = run_module(jetson_clock_hold.main, args(board, tmp_path))
    assert not failed and not held["changed"] and held["record"] is None
    assert not (tmp_path / "state" / "clock-hold.json").exists()


def test_check_mode_reports_the_diff_and_changes_nothing(board, tmp_path):
    before = snapshot(board)
    check = dict(args(board, tmp_path), _ansible_check_mode=True, _ansible_diff=True)
    failed, planned = run_module(jetson_clock_hold.main, check)
    assert not failed and planned["changed"]
    assert planned["steps"] == ["record", "store", "mode", "pin"]
    assert planned["diff"]["before"] == "power mode 30W (id 2), clocks under DVFS\n"
    assert planned["diff"]["after"] == "power mode MAXN (id 0), clocks held by jetson_clocks\n"
    assert snapshot(board) == before and not (tmp_path / "state").exists()


def test_an_interrupted_hold_is_restored_by_the_next_release(board, tmp_path):
    before = snapshot(board)
    run_module(jetson_clock_hold.main, args(board, tmp_path))
    # the controller died here; the next run holds again, then releases
    run_module(jetson_clock_hold.main, args(board, tmp_path, owner="run-2"))
    failed, released = run_module(jetson_clock_hold.main, args(board, tmp_path, state="released"))
    assert not failed and released["changed"]
    assert snapshot(board) == before


def test_a_mode_change_undone_by_someone_else_is_pinned_again(board, tmp_path):
    run_module(jetson_clock_hold.main, args(board, tmp_path))
    (board / NODE / "min_freq").write_text("306000000\n")  # e.g. an nvpmodel -m by hand
    failed, held = run_module(jetson_clock_hold.main, args(board, tmp_path))
    assert not failed and held["steps"] == ["pin"] and held["after"]["pinned"] is True


def test_a_failing_step_is_undone_and_named(board, tmp_path):
    before = snapshot(board)
    (board / "usr/bin/jetson_clocks").unlink()
    failed, result = run_module(jetson_clock_hold.main, args(board, tmp_path))
    assert failed
    assert "jetson_clocks is not installed" in result["msg"] and "rollout_bench_hold_clocks" in result["msg"]
    assert "put back to power mode 30W (id 2)" in result["msg"]
    assert snapshot(board) == before and not (tmp_path / "state" / "clock-hold.json").exists()


def test_a_board_without_maxn_is_refused_before_any_change(board, tmp_path):
    conf = board / "etc/nvpmodel.conf"
    conf.write_text(conf.read_text().replace("NAME=MAXN", "NAME=60W"))
    before = snapshot(board)
    failed, result = run_module(jetson_clock_hold.main, args(board, tmp_path))
    assert failed and "needs a MAXN power mode" in result["msg"] and "0=60W" in result["msg"]
    assert snapshot(board) == before


def test_a_mode_change_that_needs_a_reboot_is_refused_and_undone(board, tmp_path):
    # nvpmodel's own words when a mode needs a reboot and nobody types YES
    tool = board / "usr/sbin/nvpmodel"
    tool.write_text('#!/bin/sh\nif [ "$1" = "-m" ]; then\n'
                    'echo "NVPM WARN: Reboot required for changing to this power mode: $2"\n'
                    'echo "NVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:"\n'
                    'echo "NVPM ERROR: bad input!"; exit 1; fi\n'
                    'exec %s %s "$@"\n' % (sys.executable, os.path.join(SIM_BIN, "nvpmodel")))
    before = snapshot(board)
    failed, result = run_module(jetson_clock_hold.main, args(board, tmp_path))
    assert failed and "needs a reboot on this board, which a rollout never does" in result["msg"]
    assert "put back to power mode 30W (id 2), clocks under DVFS" in result["msg"]
    assert snapshot(board) == before and not (tmp_path / "state" / "clock-hold.json").exists()


def test_a_record_this_code_cannot_read_is_left_alone(board, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "clock-hold.json").write_text(json.dumps({"version": 9}))
    failed, result = run_module(jetson_clock_hold.main, args(board, tmp_path, state="released"))
    assert failed and "not a clock-hold record of version 1" in result["msg"]
    assert json.loads((state / "clock-hold.json").read_text()) == {"version": 9}


def test_a_sysroot_needs_run_under_root(board, tmp_path):
    failed, result = run_module(jetson_clock_hold.main, args(board, tmp_path, run_under_root=False))
    assert failed and "run_under_root=true" in result["msg"]
