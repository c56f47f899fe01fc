# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import clock_hold as ch

AGX = {0: "MAXN", 1: "15W", 2: "30W", 3: "50W"}
NANO_SUPER = {0: "15W", 1: "25W", 2: "MAXN_SUPER"}


def state(name, mode_id, pinned):
    return {"power_mode": {"name": name, "id": mode_id}, "pinned": pinned}


@pytest.mark.parametrize("modes, expected", [
    (AGX, {"id": 0, "name": "MAXN"}),
    (NANO_SUPER, {"id": 2, "name": "MAXN_SUPER"}),  # never hard-coded as 0
    ({0: "MAXN_SUPER", 3: "MAXN"}, {"id": 3, "name": "MAXN"}),
    ({0: "120W", 1: "90W"}, None),
])
def test_maxn_is_resolved_by_name(modes, expected):
    assert ch.maxn_mode(modes) == expected


def test_mode_list_from_nvpmodel_verbose():
    out = ("NVPM VERB: Config file: /etc/nvpmodel.conf\nNVPM VERB: POWER_MODEL: ID=0 NAME=MAXN\n"
           "NVPM VERB: POWER_MODEL: ID=1 NAME=120W\nNVPM VERB: PM_CONFIG: DEFAULT=120W(1)\n")
    assert ch.parse_mode_list(out) == [(0, "MAXN"), (1, "120W")]


@pytest.mark.parametrize("now, steps", [
    (state("30W", 2, False), ["record", "store", "mode", "pin"]),
    (state("30W", 2, True), ["record", "store", "mode", "pin"]),  # a mode change drops the pin
    (state("MAXN", 0, False), ["record", "store", "pin"]),
    (state("MAXN", 0, None), ["record", "store", "pin"]),  # unknown floor: pin, and restore afterwards
    (state("MAXN", 0, True), []),
])
def test_hold_steps(now, steps):
    plan = ch.plan_hold(now, AGX, None, "/s/clock-hold.l4t_dfs.conf", "run")
    assert plan["steps"] == steps
    assert plan["after"] == state("MAXN", 0, True)
    if steps:
        assert plan["record"]["power_mode"] == now["power_mode"] and plan["record"]["pinned"] == now["pinned"]
    else:
        assert plan["record"] is None


def test_a_second_hold_keeps_the_recorded_original():
    record = {"version": 1, "power_mode": {"name": "30W", "id": 2}, "pinned": False, "store_file": "/s/f"}
    plan = ch.plan_hold(state("MAXN", 0, True), AGX, record)
    assert plan["steps"] == [] and plan["record"] is record


def test_hold_refuses_a_board_whose_mode_cannot_be_read():
    with pytest.raises(ch.HoldError, match="power mode cannot be read"):
        ch.plan_hold({"power_mode": None, "pinned": False}, AGX)


@pytest.mark.parametrize("now, steps", [
    (state("MAXN", 0, True), ["mode", "restore", "forget"]),
    (state("30W", 2, True), ["restore", "forget"]),
])
def test_release_steps(now, steps):
    record = {"version": 1, "power_mode": {"name": "30W", "id": 2}, "pinned": False, "store_file": "/s/f"}
    plan = ch.plan_release(now, record)
    assert plan["steps"] == steps and plan["after"] == state("30W", 2, False)
    assert ch.plan_release(now, None)["steps"] == []


def test_mismatch_names_what_is_wrong():
    assert ch.mismatch(state("MAXN", 0, True), state("MAXN", 0, True)) is None
    assert ch.mismatch(state("MAXN", 0, True), state("30W", 2, False)) == \
        "the power mode is 30W, not MAXN; the GPU clock floor is not pinned"
    assert ch.mismatch(state("30W", 2, None), state("30W", 2, True)) is None  # unknown: not judged


@pytest.mark.parametrize("record", [None, [], {"version": 2, "power_mode": {"id": 0}}, {"version": 1}])
def test_records_of_another_shape_are_refused(record):
    with pytest.raises(ch.HoldError, match="restore the board's power mode and clocks by hand"):
        ch.check_record(record, "/var/lib/jetson-specdec/clock-hold.json")
