# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import datetime
import errno
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
    ({"status": "off", "config_hash": "h1"}, "h1", False, False, "converged: already off"),
    ({"status": "off", "config_hash": "h1"}, "h2", False, True, "config changed"),
    ({"status": "kept", "config_hash": "h1"}, "h2", False, True, "config changed"),
    ({"status": "kept", "config_hash": "h1"}, "h1", True, True, "forced"),
    ({"status": "failed", "config_hash": "h1", "error": "OOM"}, "h1", False, True, "OOM"),
    ({"status": "baseline", "config_hash": None}, "h1", False, True, "only a baseline"),
    # jetson.specdec.watch with rollout_watch_action=reevaluate marks a drifted kept host
    ({"status": "kept", "config_hash": "h1", "info": {"watch_reevaluate": {"reason": "acceptance 20% (kept on 60%)"}}},
     "h1", False, True, "the watch found the kept config drifted (acceptance 20% (kept on 60%)); re-evaluating"),
    ({"status": "kept", "config_hash": "h1", "info": {"watch_reevaluate": None}}, "h1", False, False, "converged"),
    ({"status": "reverted", "config_hash": "h1", "info": {"watch_reevaluate": {"reason": "x"}}}, "h1", False, False,
     "converged: already reverted"),
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


def test_state_file_is_not_world_readable_whatever_the_umask(tmp_path):
    target = tmp_path / "new" / "state.json"
    old = os.umask(0)
    try:
        rs.write_state(str(target), rs.merge_state(rs.empty_state(), {"status": "kept"}, NOW))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(str(target)).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(str(target.parent)).st_mode) == 0o750
    assert rs.load_state(str(target))[0]["status"] == "kept"


def test_read_missing_and_corrupt_never_moves_on_read(tmp_path):
    path = str(tmp_path / "state.json")
    state, warnings = rs.read_state(path, NOW)
    assert state == rs.empty_state() and warnings == []
    with open(path, "w") as handle:
        handle.write("{not json")
    state, warnings = rs.read_state(path, NOW)
    assert state["status"] is None and "not valid JSON" in warnings[0] and "next state write" in warnings[0]
    assert os.listdir(str(tmp_path)) == ["state.json"]
    state, warnings = rs.read_state(path, NOW, move_corrupt=True)
    asides = [n for n in os.listdir(str(tmp_path)) if n.startswith("state.json.corrupt-20260301T120000Z-")]
    assert len(asides) == 1 and not os.path.exists(path)
    assert asides[0] in warnings[0]


def test_corrupt_names_do_not_collide_within_a_second(tmp_path):
    path = tmp_path / "state.json"
    for unused in range(3):
        path.write_text("][")
        rs.read_state(str(path), NOW, move_corrupt=True)  # same NOW: same second
    asides = sorted(n for n in os.listdir(str(tmp_path)) if n.startswith("state.json.corrupt-"))
    assert len(asides) == 3
    assert all((tmp_path / n).read_text() == "][" for n in asides)


@pytest.mark.parametrize("raw,needle", [
    (b"\xff\xfe{}", "not valid UTF-8"),
    (b'{"schema_version": 1, "status": "kept", "error": "\xc3\x28"}', "not valid UTF-8"),
    (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    (json.dumps({"schema_version": 1, "info": json.loads("[" * 80 + "]" * 80)}).encode(), "deeper than 64"),
    (b"[]", "JSON object"),
    (b'"kept"', "JSON object"),
    (b"{}", "schema_version"),
    (b'{"schema_version": "1"}', "schema_version"),
    (b'{"schema_version": true}', "schema_version"),
    (b'{"schema_version": 0}', "schema_version"),
    (b'{"schema_version": 1, "status": 3}', "'status' must be a string"),
    (b'{"schema_version": 1, "config_hash": ["x"]}', "'config_hash' must be a string"),
    (b'{"schema_version": 1, "benchmarks": []}', "'benchmarks' must be an object"),
    (b'{"schema_version": 1, "verdict": "keep"}', "'verdict' must be an object"),
    (b'{"schema_version": 1, "attempts": {}}', "'attempts' must be a list"),
    (b'{"schema_version": 1, "attempts": ["x"]}', "'attempts' must hold objects"),
    (b'{"schema_version": 1, "info": 7}', "'info' must be an object"),
    (b'{"schema_version": 1, "updated_at": 1700000000}', "'updated_at' must be a string"),
])
def test_corrupt_inputs_give_a_clear_reason_not_a_traceback(tmp_path, raw, needle):
    path = tmp_path / "state.json"
    path.write_bytes(raw)
    state, problem = rs.load_state(str(path))
    assert state == rs.empty_state()
    assert needle in problem
    assert path.read_bytes() == raw  # reading never changes the file


@pytest.mark.parametrize("content,needle", [
    ({"schema_version": 2, "status": "kept"}, "schema_version 2 is newer"),
    ({"schema_version": 99}, "schema_version 99 is newer"),
    ({"schema_version": 1, "status": "quarantined"}, "status 'quarantined' is not one this collection knows"),
])
def test_newer_collection_files_are_refused_and_left_alone(tmp_path, content, needle):
    path = tmp_path / "state.json"
    path.write_text(json.dumps(content))
    before = path.read_bytes()
    for move in (False, True):
        with pytest.raises(rs.StateRefused) as err:
            rs.read_state(str(path), NOW, move_corrupt=move)
        assert needle in str(err.value) and "left as it is" in str(err.value)
    assert path.read_bytes() == before and os.listdir(str(tmp_path)) == ["state.json"]


def test_symlinked_or_special_state_files_are_refused(tmp_path):
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps({"schema_version": 1, "status": "kept"}))
    link = tmp_path / "state.json"
    link.symlink_to(real)
    with pytest.raises(rs.StateError, match="symbolic link"):
        rs.load_state(str(link))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(str(fifo))
    with pytest.raises(rs.StateError, match="not a regular file"):
        rs.load_state(str(fifo))


def test_state_dir_other_users_could_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    with pytest.raises(rs.StateError, match="writable by group or others.*chmod go-w"):
        rs.write_state(str(shared / "state.json"), rs.empty_state())
    assert os.listdir(str(shared)) == []
    if os.geteuid() == 0:
        owned = tmp_path / "owned"
        owned.mkdir()
        os.chown(str(owned), 4242, 4242)
        with pytest.raises(rs.StateError, match="belongs to uid 4242"):
            rs.write_state(str(owned / "state.json"), rs.empty_state())


@pytest.mark.parametrize("code,needle", [
    (errno.ENOSPC, "filesystem is full"),
    (errno.EROFS, "mounted read-only"),
    (errno.EACCES, "permission denied"),
    (errno.EDQUOT, "quota"),
])
def test_os_errors_on_write_name_the_path_and_the_fix(tmp_path, monkeypatch, code, needle):
    path = str(tmp_path / "state.json")

    def fail(*_args, **_kwargs):
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(rs, "atomic_write_text", fail)
    with pytest.raises(rs.StateError) as err:
        rs.write_state(path, rs.empty_state())
    msg = str(err.value)
    assert path in msg and needle in msg and errno.errorcode[code] in msg


def test_parse_iso_forms():
    assert rs.parse_iso("2026-03-01T12:00:00Z") == NOW
    assert rs.parse_iso("2026-03-01T12:00:00+00:00") == NOW
    assert rs.parse_iso("yesterday") is None
