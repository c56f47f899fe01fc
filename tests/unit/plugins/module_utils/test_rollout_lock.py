# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import datetime
import json
import os
import stat

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import lock as rl
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import LockHeld, StateError

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def later(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def stored(path):
    with open(path) as handle:
        return json.load(handle)


def test_lock_is_private_and_carries_a_unique_token(tmp_path):
    path = str(tmp_path / "rollout.lock")
    old = os.umask(0)
    try:
        changed, holder, warnings = rl.acquire(path, "run-a", "ctl-1", NOW, timeout=600)
    finally:
        os.umask(old)
    assert changed and not warnings
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(rl.guard_path(path)).st_mode) == 0o600
    on_disk = stored(path)
    assert on_disk == holder
    assert on_disk["owner"] == "run-a" and on_disk["controller"] == "ctl-1" and on_disk["timeout"] == 600
    assert len(on_disk["token"]) == 32 and on_disk["started_at"] == "2026-03-01T12:00:00Z"
    # no temporary files left next to it
    assert sorted(os.listdir(str(tmp_path))) == ["rollout.lock", "rollout.lock.guard"]


def test_same_run_id_from_a_second_controller_is_refused_and_cannot_release(tmp_path):
    path = str(tmp_path / "rollout.lock")
    unused, first, unused2 = rl.acquire(path, "nightly", "ctl-1", NOW)
    with pytest.raises(LockHeld) as err:
        rl.acquire(path, "nightly", "ctl-2", later(5))
    assert "this run's id but not this run's token" in str(err.value)
    with pytest.raises(LockHeld, match="left in place"):
        rl.release(path, token="f" * 32)
    # the run id alone from another controller does not match either
    with pytest.raises(LockHeld):
        rl.release(path, owner="nightly", controller="ctl-2")
    assert stored(path)["token"] == first["token"]
    changed, holder, unused = rl.release(path, token=first["token"])
    assert changed and holder["token"] == first["token"] and not os.path.exists(path)
    assert rl.release(path, token=first["token"]) == (False, None, [])


def test_release_by_run_id_only_still_works_with_a_warning(tmp_path):
    path = str(tmp_path / "rollout.lock")
    rl.acquire(path, "run-a", "ctl-1", NOW)
    changed, unused, warnings = rl.release(path, owner="run-a")
    assert changed and "pass the token" in warnings[0]


def test_taking_our_own_lock_again_is_a_heartbeat(tmp_path):
    path = str(tmp_path / "rollout.lock")
    unused, holder, unused2 = rl.acquire(path, "run-a", "ctl-1", NOW)
    changed, again, unused = rl.acquire(path, "run-a", "ctl-1", later(30), token=holder["token"])
    assert changed is False and again["refreshed_at"] == "2026-03-01T12:00:30Z"
    assert again["started_at"] == "2026-03-01T12:00:00Z"


def test_heartbeat_keeps_a_long_run_from_going_stale(tmp_path):
    path = str(tmp_path / "rollout.lock")
    unused, holder, unused2 = rl.acquire(path, "run-a", "ctl-1", NOW, timeout=600)
    # a long run: heartbeats every 500 s for over an hour
    for step in range(1, 9):
        rl.refresh(path, holder["token"], later(500 * step))
        with pytest.raises(LockHeld):
            rl.acquire(path, "run-b", "ctl-2", later(500 * step + 599), timeout=600)
    assert stored(path)["refreshed_at"] == "2026-03-01T13:06:40Z"
    # without heartbeats the same lock goes stale and is taken over
    changed, taken, warnings = rl.acquire(path, "run-b", "ctl-2", later(4000 + 601), timeout=600)
    assert changed and taken["owner"] == "run-b" and "stale" in warnings[0]
    # the first run's next heartbeat and its release fail and leave the new holder alone
    with pytest.raises(LockHeld, match="now belongs to owner 'run-b'"):
        rl.refresh(path, holder["token"], later(4700))
    with pytest.raises(LockHeld):
        rl.release(path, token=holder["token"])
    assert stored(path)["token"] == taken["token"]


def test_refresh_of_a_vanished_lock_fails(tmp_path):
    path = str(tmp_path / "rollout.lock")
    unused, holder, unused2 = rl.acquire(path, "run-a", None, NOW)
    rl.release(path, force=True)
    with pytest.raises(LockHeld, match="it is gone"):
        rl.refresh(path, holder["token"], later(10))
    with pytest.raises(StateError, match="needs the token"):
        rl.refresh(path, None, later(10))


def test_a_holder_is_judged_by_its_own_longer_timeout(tmp_path):
    path = str(tmp_path / "rollout.lock")
    rl.acquire(path, "slow-board", "ctl-1", NOW, timeout=7200)
    with pytest.raises(LockHeld, match="stale after 7200 s"):
        rl.acquire(path, "impatient", "ctl-2", later(4000), timeout=600)
    assert rl.acquire(path, "patient", "ctl-2", later(7300), timeout=600)[0] is True


def test_unparsable_lock_falls_back_to_mtime(tmp_path):
    path = tmp_path / "rollout.lock"
    path.write_text("garbage")
    os.utime(str(path), (0, 0))  # 1970: certainly stale
    changed, holder, warnings = rl.acquire(str(path), "run-c", None, NOW)
    assert changed and warnings and stored(str(path))["owner"] == "run-c"


def test_check_mode_touches_nothing(tmp_path):
    path = str(tmp_path / "sub" / "rollout.lock")
    assert rl.acquire(path, "run-a", None, NOW, check_mode=True)[0] is True
    assert not os.path.exists(str(tmp_path / "sub"))
    os.makedirs(str(tmp_path / "sub"))
    unused, holder, unused2 = rl.acquire(path, "run-a", None, NOW)
    before = stored(path)
    assert rl.release(path, token=holder["token"], check_mode=True)[0] is True
    rl.refresh(path, holder["token"], later(60), check_mode=True)
    assert stored(path) == before


@pytest.mark.parametrize("steps,heartbeat,expected", [
    ([], True, 3600),
    ([600, 1800, 120], True, 1800 * 2 + 300),
    ([600, 1800, 120], False, 600 + 1800 + 120 + 300),
    ([60], True, 420),
])
def test_lock_timeout_from_the_configured_durations(steps, heartbeat, expected):
    assert rl.lock_timeout_for(steps, heartbeat=heartbeat) == expected


def test_lock_timeout_rejects_negative_steps():
    with pytest.raises(StateError, match=">= 0"):
        rl.lock_timeout_for([10, -1])


def test_take_over_replaces_a_fresh_lock_in_one_step_and_check_mode_changes_nothing(tmp_path):
    path = str(tmp_path / "state" / "rollout.lock")
    dummy, first, dummy_w = rl.acquire(path, "run-1", "ctl-a", NOW)
    holder, broken = rl.take_over(path, "run-2", "ctl-b", NOW, check_mode=True)
    assert broken["token"] == first["token"] and holder["owner"] == "run-2"
    assert rl.read_holder(path)["token"] == first["token"]  # check mode: the old lock is still there
    holder, broken = rl.take_over(path, "run-2", "ctl-b", NOW)
    assert broken["token"] == first["token"] and rl.read_holder(path)["token"] == holder["token"] != first["token"]
    with pytest.raises(StateError):
        rl.refresh(path, first["token"], NOW)  # the broken run's next heartbeat stops it
    os.unlink(path)
    holder, broken = rl.take_over(path, "run-3", "ctl-c", NOW)
    assert broken is None and rl.read_holder(path)["owner"] == "run-3"


# --------------------------------------------------------------------------- the board's monotonic clock (issue 34)

BOOT = {"boot_id": "boot-1", "uptime": 1000.0}


def clock(uptime, boot_id="boot-1"):
    return {"boot_id": boot_id, "uptime": float(uptime)}


@pytest.mark.parametrize("wall_step", [-86400 * 365, -7200, 0, 3 * 3600, 86400 * 400])
def test_a_wall_clock_step_neither_freezes_nor_ages_a_lock_in_the_same_boot(tmp_path, wall_step):
    path = str(tmp_path / "rollout.lock")
    rl.acquire(path, "run-a", "ctl-1", NOW, timeout=600, clock=clock(1000))
    # the wall clock jumped by wall_step, but only 100 s passed on the board: fresh, whatever the jump
    with pytest.raises(LockHeld):
        rl.acquire(path, "run-b", "ctl-2", later(100 + wall_step), timeout=600, clock=clock(1100))
    # 700 s on the board: stale, even when the wall clock went back a year (it used to stay stuck)
    changed, holder, warnings = rl.acquire(path, "run-b", "ctl-2", later(700 + wall_step), timeout=600,
                                           clock=clock(1700))
    assert changed and holder["owner"] == "run-b" and "700 s without a heartbeat" in warnings[0]


def test_a_heartbeat_restamps_the_board_clock(tmp_path):
    path = str(tmp_path / "rollout.lock")
    unused, holder, unused2 = rl.acquire(path, "run-a", "ctl-1", NOW, timeout=600, clock=clock(1000))
    rl.refresh(path, holder["token"], NOW, clock=clock(1500))  # the wall clock stood still
    assert stored(path)["uptime"] == 1500.0 and stored(path)["boot_id"] == "boot-1"
    with pytest.raises(LockHeld):
        rl.acquire(path, "run-b", "ctl-2", NOW, timeout=600, clock=clock(2000))


@pytest.mark.parametrize("holder_extra", [{"boot_id": "boot-0", "uptime": 5.0}, {}, {"boot_id": "boot-1"},
                                          {"boot_id": "boot-1", "uptime": "5"}, {"boot_id": "boot-1", "uptime": True}])
def test_across_a_reboot_or_without_a_stamp_the_wall_clock_decides(tmp_path, holder_extra):
    path = str(tmp_path / "rollout.lock")
    content = {"owner": "old", "controller": "c", "token": "1" * 32, "started_at": "2026-03-01T12:00:00Z",
               "refreshed_at": "2026-03-01T12:00:00Z", "timeout": 600}
    content.update(holder_extra)
    with open(path, "w") as handle:
        json.dump(content, handle)
    # 100 s of uptime since boot: the monotonic clock would say "fresh" if the stamp were trusted
    assert rl.lock_age(stored(path), path, later(900), clock(100)) == 900
    changed, unused, warnings = rl.acquire(path, "new", "c", later(900), timeout=600, clock=clock(100))
    assert changed and warnings


def test_board_clock_reads_proc_and_says_nothing_when_it_cannot(tmp_path):
    boot, up = tmp_path / "boot_id", tmp_path / "uptime"
    boot.write_text("0b5e2d9c-1\n")
    up.write_text("12345.67 2345.00\n")
    assert rl.board_clock(str(boot), str(up)) == {"boot_id": "0b5e2d9c-1", "uptime": 12345.67}
    assert rl.board_clock(str(tmp_path / "none"), str(up)) == {}
    for bad in ("", "x y", "-3 1"):
        up.write_text(bad)
        assert rl.board_clock(str(boot), str(up)) == {}
    real = rl.board_clock()
    assert real == {} or (real["boot_id"] and real["uptime"] > 0)


# --------------------------------------------------------------------------- a holder found gone (issue 30 item 3)

def test_take_over_token_replaces_exactly_that_fresh_lock(tmp_path):
    path = str(tmp_path / "rollout.lock")
    unused, dead, unused2 = rl.acquire(path, "killed", "ctl-1", NOW, timeout=3900)
    # a wrong token (the lock changed hands meanwhile) is judged as usual: fresh, refused
    with pytest.raises(LockHeld):
        rl.acquire(path, "next", "ctl-1", later(5), timeout=3900, take_over_token="f" * 32)
    changed, holder, warnings = rl.acquire(path, "next", "ctl-1", later(5), timeout=3900,
                                           take_over_token=dead["token"], take_over_reason="its process ended",
                                           controller_id={"host": "ctl-1", "pid": 42})
    assert changed and holder["owner"] == "next" and holder["token"] != dead["token"]
    assert stored(path)["controller_id"] == {"host": "ctl-1", "pid": 42}
    assert "its process ended" in warnings[0] and "'killed'" in warnings[0]
    # the token of a lock already replaced takes nothing a second time
    with pytest.raises(LockHeld):
        rl.acquire(path, "third", "ctl-1", later(6), timeout=3900, take_over_token=dead["token"])
    assert stored(path)["owner"] == "next"
