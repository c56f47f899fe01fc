# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.modules import rollout_state
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

CONFIG = {"unit_sha256": "ab" * 32, "speculative_config": {"method": "eagle3", "num_speculative_tokens": 5},
          "model": "Qwen/Qwen3-8B", "runtime_version": "0.20.1"}


def run(tmp_path, **args):
    args.setdefault("path", str(tmp_path / "state" / "state.json"))
    return run_module(rollout_state.main, args)


def test_read_missing_file_never_fails(tmp_path):
    failed, result = run(tmp_path, config=CONFIG)
    assert not failed and not result["changed"]
    assert result["rollout_state"]["status"] is None
    assert result["needs_rollout"] is True and "no previous rollout" in result["needs_rollout_reason"]
    assert len(result["config_hash"]) == 64


def test_write_then_converged_read(tmp_path):
    failed, result = run(tmp_path, state="write", status="kept", config=CONFIG,
                         verdict={"decision": "keep"}, attempt={"method": "eagle3", "result": "keep"})
    assert not failed and result["changed"]
    path = result["path"]
    stored = json.load(open(path))
    assert stored["status"] == "kept" and stored["config_hash"] == result["config_hash"]
    assert stored["schema_version"] == 1 and stored["updated_at"].endswith("Z")
    assert oct(os.stat(path).st_mode & 0o777) == "0o640"
    failed, again = run(tmp_path, config=CONFIG)
    assert again["needs_rollout"] is False and "converged" in again["needs_rollout_reason"]
    changed_cfg = dict(CONFIG, runtime_version="0.21.0")
    assert run(tmp_path, config=changed_cfg)[1]["needs_rollout"] is True


def test_write_is_idempotent_and_check_mode_writes_nothing(tmp_path):
    args = dict(state="write", status="pending", config=CONFIG)
    assert run(tmp_path, **args)[1]["changed"] is True
    assert run(tmp_path, **args)[1]["changed"] is False
    before = open(str(tmp_path / "state" / "state.json")).read()
    failed, result = run(tmp_path, state="write", status="kept", _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True
    assert open(str(tmp_path / "state" / "state.json")).read() == before
    assert '"pending"' in result["diff"]["before"] and '"kept"' in result["diff"]["after"]


def test_corrupt_state_is_reported_on_read_and_moved_aside_on_write(tmp_path, monkeypatch):
    warned = []
    # the test harness replaces exit_json, which is where warnings would be attached
    monkeypatch.setattr(AnsibleModule, "warn", lambda self, msg: warned.append(msg))
    path = tmp_path / "state.json"
    path.write_bytes(b"\xff][")
    failed, result = run(tmp_path, path=str(path), config=CONFIG)
    assert not failed and result["rollout_state"]["status"] is None and result["needs_rollout"] is True
    assert any("not valid UTF-8" in w for w in warned)
    assert os.listdir(str(tmp_path)) == ["state.json"]  # the read-only check moves nothing
    failed, result = run(tmp_path, path=str(path), state="write", status="pending", _ansible_check_mode=True)
    assert not failed and os.listdir(str(tmp_path)) == ["state.json"]
    failed, result = run(tmp_path, path=str(path), state="write", status="pending")
    assert not failed and any("moved it to" in w for w in warned)
    assert [p for p in os.listdir(str(tmp_path)) if p.startswith("state.json.corrupt-")]
    assert json.loads(path.read_text())["status"] == "pending"


def test_newer_state_is_refused_by_every_action_and_left_alone(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"schema_version": 2, "status": "kept", "config_hash": "ab" * 32}))
    before = path.read_bytes()
    for args in (dict(config=CONFIG), dict(state="write", status="pending", config=CONFIG)):
        failed, result = run(tmp_path, path=str(path), **args)
        assert failed and "newer than this collection" in result["msg"] and "upgrade" in result["msg"]
    assert path.read_bytes() == before and os.listdir(str(tmp_path)) == ["state.json"]


def test_disk_full_and_read_only_fail_with_the_path_and_the_fix(tmp_path, monkeypatch):
    from ansible_collections.jetson.specdec.plugins.module_utils.record import state as rs
    for code, needle in ((28, "filesystem is full"), (30, "mounted read-only")):
        def fail(*_args, **_kwargs):
            raise OSError(code, os.strerror(code))
        monkeypatch.setattr(rs, "atomic_write_text", fail)
        failed, result = run(tmp_path, state="write", status="pending", config=CONFIG)
        assert failed and needle in result["msg"] and "state.json" in result["msg"]
        assert result["lock_held"] is False


def test_write_with_textfile(tmp_path):
    tf = tmp_path / "textfile"
    failed, result = run(tmp_path, state="write", status="kept", textfile_dir=str(tf),
                         info={"method": "eagle3", "model": "m", "family": "thor", "simulated": False},
                         verdict={"decision": "keep"},
                         benchmarks={"baseline": {"runs": [{"concurrency": 1, "throughput_tok_s": 30.0,
                                                            "tpot_ms_p50": 33.0}]}})
    assert not failed and result["textfile"] == str(tf / "jetson_specdec.prom")
    text = (tf / "jetson_specdec.prom").read_text()
    assert 'jetson_specdec_info{verdict="keep",status="kept",method="eagle3",model="m",family="thor"} 1' in text
    assert 'jetson_specdec_tpot_p50_seconds{phase="baseline",concurrency="1"} 0.033' in text
    assert run(tmp_path, state="write", status="kept", textfile_dir=str(tf))[1]["changed"] is False


def test_lock_conflict_and_force_unlock(tmp_path):
    failed, result = run(tmp_path, state="lock", owner="run-1", controller="ctl-a")
    assert not failed and result["changed"] and result["lock"]["owner"] == "run-1"
    token = result["lock"]["token"]
    lock = tmp_path / "state" / "rollout.lock"
    assert lock.exists() and oct(os.stat(str(lock)).st_mode & 0o777) == "0o600"
    failed, result = run(tmp_path, state="lock", owner="run-2", controller="ctl-b")
    assert failed and "'run-1'" in result["msg"] and "force=true" in result["msg"]
    assert result["lock_held"] is True and result["holder"]["token"] == token
    # same run id, other controller: still someone else
    failed, result = run(tmp_path, state="lock", owner="run-1", controller="ctl-b")
    assert failed and "not this run's token" in result["msg"]
    failed, result = run(tmp_path, state="unlock", token="0" * 32)
    assert failed and "owner 'run-1'" in result["msg"] and lock.exists()
    failed, result = run(tmp_path, state="refresh", token=token)
    assert not failed and result["lock"]["token"] == token and not result["changed"]
    failed, result = run(tmp_path, state="unlock", force=True)
    assert not failed and result["changed"] and not lock.exists()
    failed, result = run(tmp_path, state="refresh", token=token)
    assert failed and "gone" in result["msg"]


def test_lock_timeout_is_derived_from_the_steps(tmp_path):
    failed, result = run(tmp_path, state="lock", owner="run-1", lock_steps=[600, 1800])
    assert not failed and result["lock"]["timeout"] == 3900
    failed, result = run(tmp_path, state="lock", owner="run-2", lock_timeout=60)
    assert failed and "stale after 3900 s" in result["msg"]


def test_a_short_lock_timeout_never_undercuts_the_longest_step(tmp_path):
    """The role passes rollout_lock_timeout and its step durations: the larger one holds (issue 18 item 9)."""
    failed, result = run(tmp_path, state="lock", owner="run-1", lock_timeout=20, lock_steps=[900, 1800])
    assert not failed and result["lock"]["timeout"] == 3900
    (tmp_path / "state" / "rollout.lock").unlink()
    failed, result = run(tmp_path, state="lock", owner="run-1", lock_timeout=7200, lock_steps=[900, 1800])
    assert not failed and result["lock"]["timeout"] == 7200


def test_argument_errors(tmp_path):
    failed, result = run(tmp_path, state="lock")
    assert failed and "owner" in result["msg"]
    failed, result = run(tmp_path, state="unlock")
    assert failed and "force=true" in result["msg"]
    failed, result = run(tmp_path, state="refresh")
    assert failed and "token" in result["msg"]
    failed, result = run(tmp_path, state="write", config={})
    assert failed and "non-empty dict" in result["msg"]


def test_outcome_writes_the_same_state_as_its_fields(tmp_path):
    fields = dict(status="reverted", verdict={"decision": "revert", "reasons": ["c=8 regressed"]},
                  last_good={"kind": "baseline", "argv": ["vllm", "serve", "m"]}, info={"family": "thor"})
    one = run(tmp_path / "a", state="write", config=CONFIG, **fields)[1]["rollout_state"]
    two = run(tmp_path / "b", state="write", config=CONFIG, outcome=fields)[1]["rollout_state"]
    for state in (one, two):
        state.pop("updated_at")
        state.pop("created_at", None)
    assert one == two and two["status"] == "reverted" and two["last_good"]["kind"] == "baseline"
    # the outcome's keys are checked like the fields, and it does not mix with them
    failed, result = run(tmp_path, state="write", outcome={"status": "gone"})
    assert failed and "status" in result["msg"] and "gone" in result["msg"]
    failed, result = run(tmp_path, state="write", outcome={"status": "kept"}, status="kept")
    assert failed and "mutually exclusive" in result["msg"]


def test_lock_with_config_reads_the_state_under_the_lock(tmp_path):
    """One task takes the lock and says whether the host still needs a rollout (another run may have
    converged it while this one waited for its batch)."""
    failed, result = run(tmp_path, state="lock", owner="run-1", config=CONFIG)
    assert not failed and result["needs_rollout"] is True and result["lock"]["owner"] == "run-1"
    token = result["lock"]["token"]
    assert not run(tmp_path, state="write", status="kept", config=CONFIG, token=token)[0]
    assert not run(tmp_path, state="unlock", token=token)[0]
    failed, result = run(tmp_path, state="lock", owner="run-2", config=CONFIG)
    assert not failed and result["needs_rollout"] is False and result["rollout_state"]["status"] == "kept"
    failed, result = run(tmp_path, state="lock", owner="run-3", config=CONFIG, force=True, break_lock=True)
    assert not failed and result["needs_rollout"] is True  # force: judged again even when converged


def test_break_lock_takes_over_a_held_lock_and_returns_it(tmp_path):
    token = run(tmp_path, state="lock", owner="run-1", controller="ctl-a")[1]["lock"]["token"]
    failed, result = run(tmp_path, state="lock", owner="run-2")
    assert failed and result["lock_held"] is True  # without break_lock the lock is respected
    failed, result = run(tmp_path, state="lock", owner="run-2", break_lock=True, _ansible_check_mode=True)
    assert not failed and result["changed"] and result["broken"]["token"] == token  # check mode: what it would do
    failed, result = run(tmp_path, state="lock", owner="run-2", break_lock=True)
    assert not failed and result["broken"]["token"] == token and result["lock"]["owner"] == "run-2"
    # the broken run's heartbeat (a benchmark's, a state write's) now fails, and its write writes nothing
    failed, result = run(tmp_path, state="write", status="kept", token=token)
    assert failed and "run-2" in result["msg"]
    assert not (tmp_path / "state" / "state.json").exists()
    failed, result = run(tmp_path, state="lock", owner="run-3", break_lock=True)
    assert not failed and result["broken"]["owner"] == "run-2"
    (tmp_path / "state" / "rollout.lock").unlink()
    failed, result = run(tmp_path, state="lock", owner="run-4", break_lock=True)
    assert not failed and result["broken"] is None  # nothing to break


def test_a_state_file_that_cannot_be_read_under_the_lock_releases_it(tmp_path):
    """The lock task fails (nothing else would release the lock: the role releases only a lock it holds)."""
    path = tmp_path / "state" / "state.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"schema_version": 99, "status": "kept"}))
    failed, result = run(tmp_path, state="lock", owner="run-1", config=CONFIG)
    assert failed and "newer" in result["msg"] and result["lock_held"] is False
    assert not (tmp_path / "state" / "rollout.lock").exists()


def test_take_over_token_takes_a_gone_holders_fresh_lock_and_returns_it(tmp_path):
    dead = run(tmp_path, state="lock", owner="killed", controller_id={"host": "ctl", "pid": 99})[1]["lock"]
    assert dead["controller_id"] == {"host": "ctl", "pid": 99}
    failed, result = run(tmp_path, state="lock", owner="next", take_over_token="0" * 32)
    assert failed and result["lock_held"] is True and result["holder"]["token"] == dead["token"]
    failed, result = run(tmp_path, state="lock", owner="next", take_over_token=dead["token"],
                         take_over_reason="its controller process ended", config=CONFIG)
    assert not failed and result["broken"]["owner"] == "killed" and result["lock"]["owner"] == "next"
    assert result["needs_rollout"] is True


def test_lock_is_stamped_with_the_boards_boot_and_uptime(tmp_path):
    lock = run(tmp_path, state="lock", owner="run-1")[1]["lock"]
    if os.path.exists("/proc/uptime"):
        assert lock["boot_id"] and lock["uptime"] > 0


def test_clock_hold_record_is_reported(tmp_path):
    failed, result = run(tmp_path, state="read")
    assert result["clock_hold"] is False
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "clock-hold.json").write_text("{}")
    for action in ("read", "lock"):
        failed, result = run(tmp_path, state=action, owner="run-1")
        assert not failed and result["clock_hold"] is True
