"""A run that loses its lock stops touching the host and says so (issue 34 item 8).

A rollout is in the middle of its candidate's benchmark when a second controller takes its lock
over (as a revert, a rollout_break_lock or a stale-lock takeover would). The first run's next step
on the host checks its token and fails; its rescue does not put the baseline back (the host is the
new holder's now), writes no failure into the state, leaves the lock and the clocks alone, and
reports that it lost the lock.
"""
import json
import os
import subprocess
import time

import pytest

from harness import REPO, board, recap

PREFIX = "specdec-ll-"
BOARDS = [board("ll-agx", "agx-01")]
HOST = "ll-agx"
LOCK = "/var/lib/jetson-specdec/rollout.lock"
# The second controller's lock, fresh by any clock.
INTRUDER = {"owner": "second", "controller": "controller-2", "token": "9" * 32, "started_at": "2030-01-01T00:00:00Z",
            "refreshed_at": "2030-01-01T00:00:00Z", "timeout": 3900,
            "controller_id": {"host": "controller-2", "boot_id": "b2", "pid": 4242, "start": 7}}
QUICK = {"rollout_bench_num_prompts": 12, "rollout_bench_warmup_prompts": 1, "rollout_bench_output_len": 64,
         "rollout_repeat_on_noise": False}


@pytest.fixture(scope="module")
def fleet(make_fleet):
    return make_fleet(PREFIX, BOARDS, hostvars=QUICK)


def test_a_run_that_lost_its_lock_stops_touching_the_host(fleet):
    log = os.path.join(fleet.workdir, "first.log")
    with open(log, "w") as handle:
        proc = subprocess.Popen(fleet.command("playbooks/rollout.yml", rollout_run_id="first"), cwd=REPO,
                                env=fleet.env(), stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 600
        while time.time() < deadline:
            state = fleet.state(HOST)
            if (state and state["status"] == "pending" and "--speculative-config" in fleet.trial(HOST)
                    and fleet.active(HOST) == "active"):
                break
            assert proc.poll() is None, "the rollout ended before its candidate ran"
            time.sleep(0.3)
        else:
            pytest.fail("the candidate never ran on trial")
        fleet.sh(HOST, "cat > %s.new <<'EOF'\n%s\nEOF\nmv %s.new %s" % (LOCK, json.dumps(INTRUDER), LOCK, LOCK),
                 check=True)
        trial, unit = fleet.trial(HOST), fleet.unit(HOST)
        proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            fleet.kill(proc)
    with open(log) as handle:
        out = handle.read()
    assert proc.returncode != 0 and recap(out)[HOST]["failed"] == 1, out[-4000:]
    assert "This run lost its rollout lock" in out and "'second'" in out, out[-4000:]
    # the rescue did not switch the host: the candidate's trial and the unit are as the takeover found them
    assert fleet.trial(HOST) == trial and fleet.unit(HOST) == unit
    # nothing written after the takeover: still pending (no "failed"), the lock is the new holder's
    assert fleet.state(HOST)["status"] == "pending"
    assert json.loads(fleet.sh(HOST, "cat %s" % LOCK).stdout)["token"] == INTRUDER["token"]
