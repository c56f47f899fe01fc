"""The controller dies between apply and verdict, the board reboots; a re-run resolves the pending host.

The killed run leaves its lock (owner = its run id) and its candidate running as a trial, a
runtime drop-in under /run. The board reboots: it comes back on the unit's launch, the baseline
(the last good config), with the lock and the pending state kept. A re-run refuses a fresh
foreign lock and says how to proceed; with -e rollout_break_lock=true it takes the host over,
puts the baseline back, evaluates again and ends kept or reverted, and what it ends on survives
the next reboot.
"""
import re
import time

import pytest

from harness import assert_serving, assert_state, board, recap

PREFIX = "specdec-fk-"
# vLLM takes a few wall seconds to start here (as it takes minutes on a board), so a start is
# seen waiting: without it the simulator serves before the first look and no progress line is due.
BOARDS = [board("fk-agx", "agx-01", faults={"startup_delay_s": 4})]
HOST = "fk-agx"


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    proc = fleet.start("playbooks/rollout.yml", rollout_run_id="killed")
    deadline = time.time() + 600
    try:
        while time.time() < deadline:
            state = fleet.state(HOST)
            if state and state["status"] == "pending" and "--speculative-config" in fleet.trial(HOST):
                break
            assert proc.poll() is None, "the rollout ended before the host was pending"
            time.sleep(0.5)
        else:
            pytest.fail("the host never became pending with its candidate on trial")
    finally:
        fleet.kill(proc)  # SIGKILL to ansible-playbook's process group, like a dying controller
    return fleet


def test_killed_run_leaves_a_pending_host_and_its_lock(fleet):
    assert fleet.state(HOST)["status"] == "pending"
    assert fleet.lock_held(HOST)
    assert '"killed"' in fleet.sh(HOST, "cat /var/lib/jetson-specdec/rollout.lock").stdout


def wait_serving(fleet, host, seconds=300):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if fleet.active(host) == "active" and fleet.models(host):
            return
        time.sleep(2)
    pytest.fail("%s does not serve %d s after its reboot: %s" % (host, seconds, fleet.active(host)))


def test_a_reboot_mid_trial_comes_back_on_the_last_good_launch(fleet):
    # the killed run left its candidate as a trial over a baseline unit
    assert "--speculative-config" not in fleet.unit(HOST)
    fleet.reboot(HOST)
    wait_serving(fleet, HOST)
    assert fleet.trial(HOST) == "", "the trial survived the reboot"
    assert not fleet.speculative(HOST), fleet.running_unit(HOST)
    # what the re-run needs survives: the pending state and the dead run's lock
    assert fleet.state(HOST)["status"] == "pending"
    assert fleet.lock_held(HOST)


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
    rc, out, dummy = fleet.run("playbooks/rollout.yml", rollout_run_id="resolved", rollout_break_lock=True,
                               rollout_progress_interval=1, vllm_server_progress_interval=1)
    assert rc == 0, out[-4000:]
    # each benchmark said where it was while it ran (vllm_bench's progress_interval), without retry noise
    lines = re.findall(r"^%s: (baseline|candidate): (.*); run (\d+)/(\d+), .* elapsed" % HOST, out, re.M)
    assert {"baseline", "candidate"} <= set(arm for arm, dummy, dummy2, dummy3 in lines), out[-6000:]
    assert any(step.startswith("measuring c=") for dummy, step, dummy2, dummy3 in lines), lines
    # and each start of vLLM where it was (vllm_server's wait)
    assert re.search(r"^%s: vLLM start: waiting for vLLM to serve, .* of at most " % HOST, out, re.M), out[-6000:]
    assert "FAILED - RETRYING" not in out
    state = fleet.state(HOST)
    assert state["status"] in ("kept", "reverted"), state
    assert_state(fleet, HOST, state["status"])
    assert_serving(fleet, HOST, speculative=state["status"] == "kept")
    assert state["info"]["run_id"] == "resolved"
    record = [e["record"] for e in fleet.report("resolved")["hosts"] if e["row"]["host"] == HOST][0]
    assert record["resumed_pending"] is True
    assert record["lock_broken"]["owner"] == "killed"
    # the outcome is the unit's launch, not a trial: a reboot keeps it
    fleet.reboot(HOST)
    wait_serving(fleet, HOST)
    assert_serving(fleet, HOST, speculative=state["status"] == "kept")
