# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""A lock kept alive by its controller's keeper is judged by the keeper's liveness (issue 30 item 3): a dead
controller's lock is taken over within minutes, a live one's never ages in a long step."""
import datetime
import json
import os

import pytest

from ansible_collections.jetson.specdec.plugins.action.rollout_state import keeper_settings
from ansible_collections.jetson.specdec.plugins.module_utils.record import lock as rl
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import LockHeld, StateError
from ansible_collections.jetson.specdec.plugins.plugin_utils import lock_keeper

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def later(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def clock(uptime, boot_id="boot-1"):
    return {"boot_id": boot_id, "uptime": float(uptime)}


def stamp(path, token, uptime, liveness=120, boot_id="boot-1", at="2026-03-01T12:00:00Z"):
    with open(rl.alive_path(path), "w") as handle:
        json.dump({"token": token, "boot_id": boot_id, "uptime": uptime, "refreshed_at": at,
                   "liveness": liveness}, handle)


def held_by_a_step_long_run(tmp_path):
    """A lock taken at uptime 1000 with the 3,900 s a rollout declares at the defaults."""
    path = str(tmp_path / "rollout.lock")
    unused, holder, unused2 = rl.acquire(path, "run-a", "ctl-a", NOW, timeout=3900, clock=clock(1000))
    return path, holder["token"]


def test_a_stamped_lock_whose_keeper_stopped_is_taken_over_after_the_liveness_not_the_step(tmp_path):
    path, token = held_by_a_step_long_run(tmp_path)
    stamp(path, token, 1010)  # the keeper's last beat, then its controller died
    with pytest.raises(LockHeld) as held:
        rl.acquire(path, "run-b", "ctl-b", later(100), timeout=600, clock=clock(1100))
    assert "stale after 120 s: its controller's keeper stamps the lock" in str(held.value)
    assert "keeper last beat 2026-03-01T12:00:00Z" in str(held.value)
    changed, holder, warnings = rl.acquire(path, "run-b", "ctl-b", later(140), timeout=600, clock=clock(1140))
    assert changed and holder["owner"] == "run-b"
    assert "130 s without a heartbeat > 120 s (its controller's keeper stopped" in warnings[0], warnings
    assert not os.path.exists(rl.alive_path(path)), "the dead holder's stamp stays behind"


def test_a_live_keeper_keeps_a_lock_whose_steps_are_long_from_ever_aging(tmp_path):
    path, token = held_by_a_step_long_run(tmp_path)
    # no refresh for 5 hours (a host waiting in lockstep for the rest of its batch), a beat every 20 s
    for uptime in range(1020, 1000 + 5 * 3600, 20):
        stamp(path, token, uptime)
        with pytest.raises(LockHeld):
            rl.acquire(path, "run-b", "ctl-b", later(uptime - 1000 + 19), timeout=600, clock=clock(uptime + 19))


@pytest.mark.parametrize("why,content", [
    ("another lock's token", {"token": "f" * 32}),
    ("a liveness below the floor", {"liveness": 5}),
    ("a liveness that is not a number", {"liveness": "120"}),
    ("not JSON", None),
])
def test_a_stamp_that_does_not_belong_to_the_lock_leaves_the_locks_own_rule(tmp_path, why, content):
    path, token = held_by_a_step_long_run(tmp_path)
    if content is None:
        with open(rl.alive_path(path), "w") as handle:
            handle.write("{not json")
    else:
        stamp(path, token, 1010)
        with open(rl.alive_path(path)) as handle:
            data = json.load(handle)
        data.update(content)
        with open(rl.alive_path(path), "w") as handle:
            json.dump(data, handle)
    # 1,000 s after the stamp: a keeper's lock would be stale; the lock's own 3,900 s still hold
    with pytest.raises(LockHeld) as held:
        rl.acquire(path, "run-b", "ctl-b", later(1000), timeout=600, clock=clock(2000))
    assert "stale after 3900 s)" in str(held.value), why


def test_a_stamp_that_is_a_link_is_not_read(tmp_path):
    path, token = held_by_a_step_long_run(tmp_path)
    target = tmp_path / "elsewhere"
    target.write_text(json.dumps({"token": token, "boot_id": "boot-1", "uptime": 1, "liveness": 10}))
    os.symlink(str(target), rl.alive_path(path))
    assert rl.read_alive(path, token) is None


def test_a_lock_or_a_stamp_that_is_no_regular_file_is_never_read_through(tmp_path):
    """The lock and its stamp share one reader: it follows no link and never blocks on a FIFO. A lock that is
    neither is refused with the path; a stamp that is neither is ignored (the lock's own rule applies)."""
    path, token = held_by_a_step_long_run(tmp_path)
    os.mkfifo(rl.alive_path(path))
    assert rl.read_alive(path, token) is None
    other = str(tmp_path / "other.lock")
    os.mkfifo(other)
    with pytest.raises(StateError, match="is not a regular file"):
        rl.read_holder(other)
    linked = str(tmp_path / "linked.lock")
    os.symlink(path, linked)
    with pytest.raises(StateError, match="read the rollout lock"):
        rl.read_holder(linked)


def test_release_and_a_break_remove_the_stamp(tmp_path):
    path, token = held_by_a_step_long_run(tmp_path)
    stamp(path, token, 1010)
    rl.release(path, token=token)
    assert sorted(os.listdir(str(tmp_path))) == ["rollout.lock.guard"]
    path, token = held_by_a_step_long_run(tmp_path)
    stamp(path, token, 1010)
    rl.take_over(path, "revert", "ctl-c", NOW, clock=clock(1020))
    assert not os.path.exists(rl.alive_path(path))


def test_across_a_reboot_the_stamps_wall_clock_time_counts(tmp_path):
    path, token = held_by_a_step_long_run(tmp_path)
    stamp(path, token, 1010, at="2026-03-01T12:00:10Z")
    with pytest.raises(LockHeld):  # another boot: 60 s of wall clock since the stamp
        rl.acquire(path, "run-b", "ctl-b", later(70), timeout=600, clock=clock(30, boot_id="boot-2"))
    changed, unused, unused2 = rl.acquire(path, "run-b", "ctl-b", later(200), timeout=600,
                                          clock=clock(160, boot_id="boot-2"))
    assert changed


class FakeClock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += max(seconds, 0.01)


def test_the_keeper_beats_every_interval_and_stops_when_its_controller_is_gone():
    fake = FakeClock()
    beats = []

    def beat():
        beats.append(fake.now)
        return "ok"

    reason, count = lock_keeper.keep(beat, lambda: fake.now < 95, 20, sleep=fake.sleep, clock=fake)
    assert reason == "controller_gone" and count == 5
    assert [round(b) for b in beats] == [0, 20, 40, 60, 80]


def test_the_keeper_retries_a_failed_beat_soon_and_stops_when_the_lock_is_not_its_own():
    fake = FakeClock()
    outcomes = iter(["ok", "error", "error", "ok", "not_ours"])
    times = []

    def beat():
        times.append(round(fake.now))
        return next(outcomes)

    reason, count = lock_keeper.keep(beat, lambda: True, 20, sleep=fake.sleep, clock=fake)
    assert reason == "lock_not_ours" and count == 2
    assert times == [0, 20, 25, 30, 50]


def test_the_keeper_has_a_lifetime():
    fake = FakeClock()
    reason, count = lock_keeper.keep(lambda: "ok", lambda: True, 20, lifetime=100, sleep=fake.sleep, clock=fake)
    assert reason == "lifetime" and count == 5


def test_a_beat_names_only_a_hex_token():
    with pytest.raises(ValueError):
        lock_keeper.beat_command("/var/lib/jetson-specdec/rollout.lock", "abc; rm -rf /", 120)
    assert lock_keeper.interval_for(120) == 20 and lock_keeper.interval_for(10) == 2


@pytest.mark.parametrize("value,expected", [
    (None, None), ({}, None), ({"liveness": 0}, None), ({"liveness": "0"}, None),
    ({"liveness": 120}, {"liveness": 120, "lifetime": lock_keeper.DEFAULT_LIFETIME}),
    ({"liveness": "60", "lifetime": 600}, {"liveness": 60, "lifetime": 600}),
])
def test_keeper_settings(value, expected):
    assert keeper_settings(value) == expected


@pytest.mark.parametrize("value", [{"liveness": 5}, {"liveness": -1}, {"liveness": True}, {"liveness": "2m"},
                                   {"liveness": 60, "lifetime": 0}, "yes"])
def test_keeper_settings_refuse_what_would_let_a_live_lock_age(value):
    with pytest.raises(ValueError):
        keeper_settings(value)


def _action(args, check_mode=False):
    from unittest import mock
    from ansible_collections.jetson.specdec.plugins.action import rollout_state as action
    task = mock.MagicMock(args=args, check_mode=check_mode)
    plugin = action.ActionModule(task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None,
                                 shared_loader_obj=None)
    return action, plugin


@pytest.mark.parametrize("state", ["read", "lock"])
def test_a_liveness_no_keeper_can_hold_is_refused_before_the_host_is_read_or_locked(state):
    """The read-only pass reads the state with the keeper's settings (roles/rollout/tasks/check.yml): a bad
    rollout_lock_liveness stops there, naming its rule, before the module runs on the host."""
    from unittest import mock
    action, plugin = _action({"state": state, "path": "/var/lib/jetson-specdec/state.json", "keeper": {"liveness": 5}})
    with mock.patch.object(action.ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module") as module:
        result = plugin.run(task_vars={})
    assert result["failed"] is True and result["rule"] == "input.rollout_lock_liveness", result
    assert "at least 10 seconds" in result["msg"]
    module.assert_not_called()


def test_a_read_with_good_keeper_settings_runs_the_module_and_starts_no_keeper():
    from unittest import mock
    action, plugin = _action({"state": "read", "path": "/var/lib/jetson-specdec/state.json", "keeper": {"liveness": 120}})
    with mock.patch.object(action.ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module", return_value={"state": {}}) as module, \
            mock.patch.object(action.lock_keeper, "start", side_effect=AssertionError("a read started a keeper")) as start:
        result = plugin.run(task_vars={})
    assert not result.get("failed"), result
    module.assert_called_once()
    start.assert_not_called()


HELD = {"failed": True, "lock_held": True, "msg": "rollout lock held by run-a (controller ctl-a)",
        "holder": {"token": "ab12", "owner": "run-a", "controller_id": {"host": "ctl", "boot_id": "b", "pid": 4242,
                                                                        "start": 7}}}
LOCK_ARGS = {"state": "lock", "path": "/var/lib/jetson-specdec/state.json", "owner": "run-b", "take_over_gone": True,
             "break_lock": False, "controller_id": {"host": "ctl", "boot_id": "b", "pid": 5000, "start": 9}}


def _run_lock(results, gone):
    """The action on LOCK_ARGS with the module answering ``results`` in turn and holder_gone saying ``gone``."""
    from unittest import mock
    action, plugin = _action(dict(LOCK_ARGS))
    with mock.patch.object(action.ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module", side_effect=list(results)) as module, \
            mock.patch.object(action.lock_holder, "holder_gone", return_value=gone) as judged:
        result = plugin.run(task_vars={})
    return result, [c.kwargs["module_args"] for c in module.call_args_list], judged


def test_a_lock_this_controllers_gone_run_left_is_taken_over_in_the_same_task():
    taken = {"changed": True, "lock": {"token": "cd34"}, "broken": {"owner": "run-a"}, "path": "/var/lib/x/state.json"}
    result, calls, judged = _run_lock([dict(HELD), taken], "its controller process (ansible-playbook, pid 4242) has ended")
    assert not result.get("failed") and result["lock"]["token"] == "cd34", result
    judged.assert_called_once_with(HELD["holder"], LOCK_ARGS["controller_id"])
    first, second = calls
    assert "take_over_gone" not in first and "take_over_token" not in first  # the module never sees the action's option
    assert second["take_over_token"] == "ab12" and second["take_over_reason"].startswith("its controller process")
    assert "break_lock" not in second and second["owner"] == "run-b"


@pytest.mark.parametrize("failed, hint", [
    (HELD, "re-run with -e rollout_break_lock=true, or wait until the lock is stale"),
    ({"failed": True, "lock_held": False, "msg": "the state directory is a link"}, "Fix the state directory"),
])
def test_a_lock_that_cannot_be_taken_fails_with_what_to_do_and_nothing_taken_over(failed, hint):
    result, calls, unused = _run_lock([dict(failed)], "")
    assert result["failed"] is True and len(calls) == 1, (result, calls)
    assert result["msg"].startswith(failed["msg"]) and hint in result["msg"] and "left as it is" in result["msg"]


def test_without_take_over_gone_a_held_lock_fails_as_the_module_says():
    from unittest import mock
    action, plugin = _action(dict(LOCK_ARGS, take_over_gone=False))
    with mock.patch.object(action.ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module", return_value=dict(HELD)) as module, \
            mock.patch.object(action.lock_holder, "holder_gone", side_effect=AssertionError("judged")):
        result = plugin.run(task_vars={})
    assert result["msg"] == HELD["msg"] and module.call_count == 1
