"""The controller dies between apply and verdict; a re-run resolves the pending host.

The killed run leaves its lock (owner = its run id). A re-run refuses a fresh foreign
lock and says how to proceed; with -e rollout_break_lock=true it takes the host over,
puts the baseline back, evaluates again and ends kept or reverted.
"""
import time

import pytest

from harness import assert_serving, assert_state, board, recap

PREFIX = "specdec-fk-"
BOARDS = [board("fk-agx", "agx-01")]
HOST = "fk-agx"


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    proc = fleet.start("playbooks/rollout.yml", rollout_run_id="killed")
    deadline = time.time() + 600
    try:
        while time.time() < deadline:
            state = fleet.state(HOST)
            if state and state["status"] == "pending":
                break
            assert proc.poll() is None, "the rollout ended before the host was pending"
            time.sleep(0.5)
        else:
            pytest.fail("the host never became pending")
    finally:
        fleet.kill(proc)  # SIGKILL to ansible-playbook's process group, like a dying controller
    return fleet


def test_killed_run_leaves_a_pending_host_and_its_lock(fleet):
    assert fleet.state(HOST)["status"] == "pending"
    assert fleet.lock_held(HOST)
    assert '"killed"' in fleet.sh(HOST, "cat /var/lib/jetson-specdec/rollout.lock").stdout


def test_rerun_refuses_a_fresh_foreign_lock(fleet):
    time.sleep(3)  # let a half-started candidate settle; the re-run must not touch it
    unit = fleet.unit(HOST)
    rc, out, dummy = fleet.run("playbooks/rollout.yml", rollout_run_id="blocked")
    assert rc != 0
    assert recap(out)[HOST]["failed"] == 1
    assert "rollout_break_lock=true" in out
    assert fleet.state(HOST)["status"] == "pending"
    assert fleet.unit(HOST) == unit
    assert fleet.lock_held(HOST)


def test_rerun_with_break_lock_resolves_the_pending_host(fleet):
    rc, out, dummy = fleet.run("playbooks/rollout.yml", rollout_run_id="resolved", rollout_break_lock=True)
    assert rc == 0, out[-4000:]
    state = fleet.state(HOST)
    assert state["status"] in ("kept", "reverted"), state
    assert_state(fleet, HOST, state["status"])
    assert_serving(fleet, HOST, speculative=state["status"] == "kept")
    assert state["info"]["run_id"] == "resolved"
    record = [e["record"] for e in fleet.report("resolved")["hosts"] if e["row"]["host"] == HOST][0]
    assert record["resumed_pending"] is True
    assert record["lock_broken"]["owner"] == "killed"
