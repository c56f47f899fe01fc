# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import datetime
import json
import os
import stat

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import state as rs

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def later(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def test_config_hash_is_canonical():
    a = rs.config_hash({"model": "m", "spec": {"k": 5, "method": "eagle3"}})
    b = rs.config_hash({"spec": {"method": "eagle3", "k": 5}, "model": "m"})
    assert a == b and len(a) == 64
    assert a != rs.config_hash({"model": "m", "spec": {"k": 4, "method": "eagle3"}})
    with pytest.raises(rs.StateError):
        rs.config_hash({})


@pytest.mark.parametrize("state,new_hash,force,expected,needle", [
    ({}, "h1", False, True, "no previous rollout"),
    ({"status": "pending", "config_hash": "h1"}, "h1", False, True, "interrupted"),
    ({"status": "kept", "config_hash": "h1"}, "h1", False, False, "converged: already kept"),
    ({"status": "reverted", "config_hash": "h1"}, "h1", False, False, "converged"),
    ({"status": "refused", "config_hash": "h1"}, "h1", False, False, "converged"),
    ({"status": "kept", "config_hash": "h1"}, "h2", False, True, "config changed"),
    ({"status": "kept", "config_hash": "h1"}, "h1", True, True, "forced"),
    ({"status": "failed", "config_hash": "h1", "error": "OOM"}, "h1", False, True, "OOM"),
    ({"status": "baseline", "config_hash": None}, "h1", False, True, "only a baseline"),
])
def test_needs_rollout(state, new_hash, force, expected, needle):
    needed, reason = rs.needs_rollout(state, new_hash, force)
    assert needed is expected
    assert needle in reason


def test_merge_is_idempotent_and_stamps_only_on_change():
    first = rs.merge_state(rs.empty_state(), {"status": "pending", "config_hash": "h"}, NOW)
    assert first["created_at"] == first["updated_at"] == "2026-03-01T12:00:00Z"
    again = rs.merge_state(first, {"status": "pending"}, later(60))
    assert not rs.content_differs(first, again)
    assert again["updated_at"] == "2026-03-01T12:00:00Z"
    kept = rs.merge_state(first, {"status": "kept"}, later(60))
    assert kept["updated_at"] == "2026-03-01T12:01:00Z" and kept["created_at"] == first["created_at"]


def test_merge_appends_attempt_and_rejects_bad_fields():
    s = rs.merge_state(rs.empty_state(), {}, NOW, attempt={"method": "eagle3", "result": "oom"})
    s = rs.merge_state(s, {}, later(5), attempt={"method": "draft_model", "result": "keep"})
    assert [a["method"] for a in s["attempts"]] == ["eagle3", "draft_model"]
    assert s["attempts"][1]["recorded_at"] == "2026-03-01T12:00:05Z"
    with pytest.raises(rs.StateError, match="status must be one of"):
        rs.merge_state(s, {"status": "done"}, NOW)
    with pytest.raises(rs.StateError, match="unknown state field"):
        rs.merge_state(s, {"stauts": "kept"}, NOW)


def test_atomic_write_modes_and_no_leftovers(tmp_path):
    target = tmp_path / "new" / "state.json"
    rs.atomic_write_text(str(target), "{}\n")
    assert target.read_text() == "{}\n"
    assert stat.S_IMODE(os.stat(str(target)).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(str(target.parent)).st_mode) == 0o755
    assert os.listdir(str(target.parent)) == ["state.json"]


def test_read_missing_and_corrupt(tmp_path):
    path = str(tmp_path / "state.json")
    state, warnings = rs.read_state(path, NOW)
    assert state == rs.empty_state() and warnings == []
    with open(path, "w") as handle:
        handle.write("{not json")
    state, warnings = rs.read_state(path, NOW, move_corrupt=False)
    assert state["status"] is None and "check mode" in warnings[0] and os.path.exists(path)
    state, warnings = rs.read_state(path, NOW)
    aside = path + ".corrupt-20260301T120000Z"
    assert os.path.exists(aside) and not os.path.exists(path)
    assert aside in warnings[0]


def test_read_rejects_newer_schema(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"schema_version": 99}))
    state, warnings = rs.read_state(str(path), NOW)
    assert "newer than this collection" in warnings[0]


def test_lock_lifecycle(tmp_path):
    path = str(tmp_path / "rollout.lock")
    changed, holder, warnings = rs.acquire_lock(path, "run-a", "ctl-1", NOW)
    assert changed and holder["owner"] == "run-a" and not warnings
    assert json.loads(open(path).read())["started_at"] == "2026-03-01T12:00:00Z"
    # our own lock again: no change
    assert rs.acquire_lock(path, "run-a", "ctl-1", later(10))[0] is False
    with pytest.raises(rs.LockHeld) as err:
        rs.acquire_lock(path, "run-b", "ctl-2", later(100), timeout=3600)
    msg = str(err.value)
    assert "'run-a'" in msg and "ctl-1" in msg and "state=unlock force=true" in msg and path in msg
    with pytest.raises(rs.LockHeld, match="belongs to owner 'run-a'"):
        rs.release_lock(path, "run-b")
    # stale: taken over with a warning
    changed, holder, warnings = rs.acquire_lock(path, "run-b", "ctl-2", later(4000), timeout=3600)
    assert changed and holder["owner"] == "run-b" and "stale" in warnings[0]
    assert rs.release_lock(path, "run-b")[0] is True and not os.path.exists(path)
    assert rs.release_lock(path, "run-b") == (False, None)


def test_lock_check_mode_creates_nothing(tmp_path):
    path = str(tmp_path / "rollout.lock")
    assert rs.acquire_lock(path, "run-a", None, NOW, check_mode=True)[0] is True
    assert not os.path.exists(path)


def test_force_unlock_and_unparsable_lock_uses_mtime(tmp_path):
    path = tmp_path / "rollout.lock"
    path.write_text("garbage")
    os.utime(str(path), (0, 0))  # 1970: certainly stale
    changed, holder, warnings = rs.acquire_lock(str(path), "run-c", None, NOW)
    assert changed and warnings
    assert rs.release_lock(str(path), None, force=True)[0] is True


def test_parse_iso_forms():
    assert rs.parse_iso("2026-03-01T12:00:00Z") == NOW
    assert rs.parse_iso("2026-03-01T12:00:00+00:00") == NOW
    assert rs.parse_iso("yesterday") is None
