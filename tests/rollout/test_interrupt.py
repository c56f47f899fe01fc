"""The operator interrupts a rollout (SIGINT, as `timeout -s INT` or Ctrl-C sends) between apply and
verdict, the board reboots; a re-run resolves the pending host (issue 30 item 3).

The interrupted run prints what it saw of each host (Ansible sends no end-of-play results) and
leaves its lock (owner = its run id, controller_id = this controller's ansible-playbook) and its
candidate running as a trial, a runtime drop-in under /run. The board reboots: it comes back on
the unit's launch, the baseline (the last good config), with the lock and the pending state kept.
A re-run refuses a fresh lock of another controller and says how to proceed; the lock of this
controller's ended run it takes over at once (no rollout_break_lock, no hour of waiting), says that
it restores the last good config first, evaluates again and ends kept or reverted, and what it
ends on survives the next reboot. Revert wins over any rollout's lock and records whose it took.
"""
import json
import os
import re
import signal
import time

import pytest

from harness import LOCK, assert_serving, assert_state, board, recap

PREFIX = "specdec-fk-"
# vLLM takes a few wall seconds to start here (as it takes minutes on a board), so a start is
# seen waiting: without it the simulator serves before the first look and no progress line is due.
BOARDS = [board("fk-agx", "agx-01", faults={"startup_delay_s": 4})]
HOST = "fk-agx"
ALIVE = LOCK + ".alive"


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    # the keeper stamps the lock every 2 s (a sixth of the liveness) while this ansible-playbook runs
    proc = fleet.start("playbooks/rollout.yml", rollout_run_id="killed", rollout_lock_liveness=12)
    deadline = time.time() + 600
    fleet.alive_stamps = []
    try:
        while time.time() < deadline:
            fleet.alive_stamps.append(alive_stamp(fleet))
            state = fleet.state(HOST)
            if state and state["status"] == "pending" and "--speculative-config" in fleet.trial(HOST):
                break
            assert proc.poll() is None, "the rollout ended before the host was pending"
            time.sleep(0.5)
        else:
            pytest.fail("the host never became pending with its candidate on trial")
        # what `timeout -s INT` does: SIGINT to ansible-playbook alone (it passes it to its workers)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            fleet.kill(proc)
    time.sleep(4)  # the keeper looks for its controller every second; a beat under way may still land
    fleet.stamp_after_exit = alive_stamp(fleet)
    log = sorted(f for f in os.listdir(fleet.workdir) if f.startswith("started-"))[-1]
    with open(os.path.join(fleet.workdir, log)) as handle:
        fleet.interrupted_output = handle.read()
    fleet.interrupted_rc = proc.returncode
    return fleet


def lock_content(fleet):
    return json.loads(fleet.sh(HOST, "cat /var/lib/jetson-specdec/rollout.lock").stdout)


def alive_stamp(fleet):
    """The controller's keeper stamp next to the lock, or None."""
    out = fleet.sh(HOST, "cat %s 2>/dev/null" % ALIVE).stdout
    return json.loads(out) if out.strip() else None


def board_clock(fleet):
    boot, uptime = fleet.sh(HOST, "cat /proc/sys/kernel/random/boot_id; cut -d' ' -f1 /proc/uptime", check=True).stdout.split()
    return boot, float(uptime)


def write_stamp(fleet, token, age, liveness):
    """A keeper stamp of ``token`` made ``age`` seconds ago on the board's clock."""
    boot, uptime = board_clock(fleet)
    stamp = {"token": token, "boot_id": boot, "uptime": uptime - age, "refreshed_at": "2030-01-01T00:00:00Z",
             "liveness": liveness}
    fleet.sh(HOST, "cat > %s <<'EOF'\n%s\nEOF" % (ALIVE, json.dumps(stamp)), check=True)


def test_the_keeper_stamped_the_lock_while_the_run_ran_and_stopped_with_it(fleet):
    token = lock_content(fleet)["token"]
    stamps = [s for s in fleet.alive_stamps if s]
    assert stamps and all(s["token"] == token and s["liveness"] == 12 for s in stamps), stamps[-3:]
    # it beat all along (every 2 s), not only between the run's steps
    assert len(set(s["uptime"] for s in stamps)) >= 3, stamps
    # and stopped with its controller: the stamp no longer moves
    after = fleet.stamp_after_exit
    time.sleep(5)
    assert alive_stamp(fleet) == after, "the keeper outlived the interrupted ansible-playbook"


def test_interrupted_run_prints_each_hosts_state_and_leaves_a_pending_host_and_its_lock(fleet):
    out = fleet.interrupted_output
    assert fleet.interrupted_rc != 0
    assert "JETSON SPECDEC: RUN INTERRUPTED" in out, out[-3000:]
    assert re.search(r"^  %s: .*; last task: " % HOST, out, re.M), out[-3000:]
    assert fleet.state(HOST)["status"] == "pending"
    assert fleet.lock_held(HOST)
    lock = lock_content(fleet)
    assert lock["owner"] == "killed"
    # who took it: this controller's ansible-playbook, and the board's boot and uptime for its age
    assert lock["controller_id"]["pid"] > 1 and lock["controller_id"]["boot_id"], lock
    assert lock["boot_id"] and lock["uptime"] > 0, lock


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


def test_rerun_refuses_a_fresh_lock_of_another_controller(fleet):
    time.sleep(3)  # let a half-started candidate settle; the re-run must not touch it
    unit = fleet.unit(HOST)
    original = fleet.sh(HOST, "cat /var/lib/jetson-specdec/rollout.lock").stdout
    # the same lock as if another controller had taken it: its process cannot be judged from here
    foreign = dict(json.loads(original))
    foreign["controller_id"] = dict(foreign["controller_id"], host="another-controller")
    fleet.sh(HOST, "cat > /var/lib/jetson-specdec/rollout.lock <<'EOF'\n%s\nEOF" % json.dumps(foreign), check=True)
    # that controller's keeper beats (a live run): its stamp is fresh for the whole re-run
    write_stamp(fleet, foreign["token"], 0, 600)
    try:
        rc, out, dummy = fleet.run("playbooks/rollout.yml", rollout_run_id="blocked")
    finally:
        fleet.sh(HOST, "cat > /var/lib/jetson-specdec/rollout.lock <<'EOF'\n%s\nEOF" % original.strip(), check=True)
        fleet.sh(HOST, "rm -f %s" % ALIVE, check=True)
    assert rc != 0
    assert recap(out)[HOST]["failed"] == 1
    assert "rollout_break_lock=true" in out
    assert "its controller's keeper stamps the lock" in " ".join(out.split()), out[-3000:]
    assert fleet.state(HOST)["status"] == "pending"
    assert fleet.unit(HOST) == unit
    assert fleet.lock_held(HOST)


def test_rerun_takes_over_the_lock_of_this_controllers_ended_run_and_resolves_the_host(fleet):
    started = time.time()
    rc, out, dummy = fleet.run("playbooks/rollout.yml", rollout_run_id="resolved",
                               rollout_progress_interval=1, vllm_server_progress_interval=1)
    assert rc == 0, out[-4000:]
    # at once, not after the lock's hour: the takeover is the first thing the run does on the host
    assert re.search(r"Took over the rollout lock .*'killed'.*has ended", out), out[-6000:]
    assert re.search(r"%s: run killed was interrupted here .*restoring the last good config \(baseline\) before"
                     % HOST, out), out[-6000:]
    assert out.index("restoring the last good config") < out.index("Benchmark the baseline")
    assert time.time() - started < 900
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


def test_revert_wins_over_a_rollouts_fresh_lock_and_records_whose_it_took(fleet):
    live = {"owner": "nightly", "controller": "another-controller", "token": "7" * 32,
            "started_at": "2030-01-01T00:00:00Z", "refreshed_at": "2030-01-01T00:00:00Z", "timeout": 3900,
            "controller_id": {"host": "another-controller", "boot_id": "x", "pid": 4242, "start": 1}}
    fleet.sh(HOST, "cat > /var/lib/jetson-specdec/rollout.lock <<'EOF'\n%s\nEOF" % json.dumps(live), check=True)
    rc, out, dummy = fleet.run("playbooks/revert.yml", "--limit", HOST)
    assert rc == 0, out[-4000:]
    assert "Took over the rollout lock" in out and "'nightly'" in out, out[-3000:]
    state = assert_state(fleet, HOST, "reverted")
    assert state["info"]["revert_took_lock_from"]["owner"] == "nightly", state["info"]
    assert_serving(fleet, HOST, speculative=False)


def test_deploy_respects_the_reverted_verdict_unless_forced(fleet):
    """The host is reverted (the test before): the agx_orin group's speculation does not come back by a deploy."""
    assert fleet.state(HOST)["status"] == "reverted"
    rc, out, dummy = fleet.run("playbooks/deploy.yml", "--limit", HOST)
    assert rc == 0, out[-4000:]
    assert "%s: the rollout reverted speculation here" % HOST in out, out[-3000:]
    assert_serving(fleet, HOST, speculative=False)
    unit = fleet.unit(HOST)  # the group's baseline (the revert before may have written another one, issue 30 item 4)
    # asked for on the command line (extra vars outrank the playbook): refused by rule, nothing changed
    for spelling in (True, "true", "yes"):
        rc, out, dummy = fleet.run("playbooks/deploy.yml", "--limit", HOST, vllm_server_speculation=spelling)
        assert rc != 0 and "deploy.recorded_verdict" in out, out[-3000:]
        assert fleet.unit(HOST) == unit
    assert_serving(fleet, HOST, speculative=False)
    rc, out, dummy = fleet.run("playbooks/deploy.yml", "--limit", HOST, deploy_force=True)
    assert rc == 0, out[-4000:]
    assert fleet.speculative(HOST)


def test_a_dead_foreign_controllers_lock_is_taken_over_once_its_keeper_stopped_for_its_liveness(fleet):
    """Issue 30 item 3: another controller's run died (its keeper with it). While its keeper's stamp is fresh
    the lock is refused (the watch's revert takes the lock as a rollout does: rollout_revert_break_lock=false);
    once the stamp is older than its liveness, the lock is taken over - minutes, not the hour of its steps."""
    boot, uptime = board_clock(fleet)
    # its last heartbeat between steps 5 minutes ago, well within the 3,900 s its steps declare
    dead = {"owner": "nightly-2", "controller": "another-controller", "token": "8" * 32,
            "started_at": "2026-01-01T00:00:00Z", "refreshed_at": "2026-01-01T00:00:00Z", "timeout": 3900,
            "boot_id": boot, "uptime": uptime - 300,
            "controller_id": {"host": "another-controller", "boot_id": "x", "pid": 4242, "start": 1}}
    fleet.sh(HOST, "cat > %s <<'EOF'\n%s\nEOF" % (LOCK, json.dumps(dead)), check=True)
    write_stamp(fleet, dead["token"], 10, 60)
    rc, out, dummy = fleet.run("playbooks/revert.yml", "--limit", HOST, rollout_revert_break_lock=False)
    assert rc != 0 and "stale after 60 s: its controller's keeper stamps the lock" in " ".join(out.split()), out[-3000:]
    assert lock_content(fleet)["token"] == dead["token"]
    write_stamp(fleet, dead["token"], 90, 60)  # its keeper's last beat 90 s ago
    rc, out, dummy = fleet.run("playbooks/revert.yml", "--limit", HOST, rollout_revert_break_lock=False)
    assert rc == 0, out[-4000:]
    flat = " ".join(out.split())  # a warning may be wrapped to the terminal's width
    assert re.search(r"Took over a stale rollout lock .*'nightly-2'.* > 60 s \(its controller's keeper stopped", flat), \
        out[-3000:]
    assert_state(fleet, HOST, "reverted")
    assert not fleet.lock_held(HOST) and alive_stamp(fleet) is None
