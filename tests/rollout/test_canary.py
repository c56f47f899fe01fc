"""A failing canary stops the rollout: the rescue re-raises, max_fail_percentage sees it."""
import re

import pytest

from harness import assert_serving, board, recap

PREFIX = "specdec-fc-"
# The canary's baseline dies in its benchmark (after the warm-up): an unexpected failure.
BOARDS = [
    board("fc-canary", "agx-01", faults={"crash_after_requests": 5, "when": "baseline"}),
    board("fc-second", "agx-01"),
    board("fc-third", "thor-01"),
]
OTHERS = ["fc-second", "fc-third"]


def main_pid(fleet, host):
    return fleet.sh(host, "systemctl show -p MainPID --value vllm").stdout.strip()


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    rc, out, dummy = fleet.run("playbooks/deploy.yml", vllm_server_speculation=False)
    assert rc == 0, out[-3000:]
    fleet.pids = dict((h, main_pid(fleet, h)) for h in OTHERS)
    fleet.units = dict((h, fleet.unit(h)) for h in OTHERS)
    # default canary batches: [1, 25%, 100%], max_fail_percentage 50
    fleet.result = fleet.run("playbooks/rollout.yml", rollout_run_id="canary")
    return fleet


def test_rollout_stops_after_the_canary(fleet):
    rc, out, dummy = fleet.result
    assert rc != 0
    rec = recap(out)
    assert rec["fc-canary"]["failed"] == 1
    assert "Benchmark, decide, keep or revert" in out
    # the per-host play ran once (one batch); nobody else was benchmarked: the evaluation prints each step it starts
    assert re.findall(r"^(fc-\S+): Benchmark the (baseline|candidate)", out, re.M) == [("fc-canary", "baseline")], out[-4000:]


def test_canary_is_back_on_its_baseline_with_a_failed_state(fleet):
    assert_serving(fleet, "fc-canary", speculative=False)
    state = fleet.state("fc-canary")
    assert state["status"] == "failed" and state["error"], state
    assert state["info"]["config_after"] == "baseline"
    assert not fleet.lock_held("fc-canary")
    assert "status=\"failed\"" in fleet.prom("fc-canary") or "failed" in fleet.prom("fc-canary")


@pytest.mark.parametrize("host", OTHERS)
def test_other_hosts_untouched(fleet, host):
    assert fleet.state(host) is None
    assert not fleet.lock_held(host)
    assert fleet.unit(host) == fleet.units[host]
    assert main_pid(fleet, host) == fleet.pids[host]
    assert_serving(fleet, host, speculative=False)


def test_report_rebuilt_from_the_spool(fleet):
    rc, out, dummy = fleet.run("playbooks/report.yml", rollout_run_id="canary")
    assert rc == 0, out[-3000:]
    rows = fleet.report_rows("canary")
    assert rows["fc-canary"]["status"] == "failed"
    assert all(rows[h]["status"] == "queued" for h in OTHERS), rows
