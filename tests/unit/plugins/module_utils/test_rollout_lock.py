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
