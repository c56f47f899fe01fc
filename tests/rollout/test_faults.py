"""Fault scenarios: every host ends serving its last good config with a consistent state.

One fleet, one rollout over all of it (serial 100 %, so every fault runs at once),
then a converged re-run (changed=0, no benchmark) and a check-mode run (nothing changes).
"""
import os
import re

import pytest

from harness import assert_serving, assert_settled, assert_state, board, measured_arms, recap

PREFIX = "specdec-ft-"
BOARDS = [
    board("ft-keep", "thor-01"),
    # loading any drafter runs out of memory: the ladder falls to n-gram (nothing to load), which is judged
    board("ft-oom", "agx-01", faults={"oom_when_speculative": True}),
    board("ft-reject", "agx-01", faults={"reject_speculative_config": "draft vocabulary does not match the target",
                                         "when": "speculative"}),
    # the candidate's warmup (2) passes; it dies during the concurrency-1 run of its benchmark
    board("ft-crash", "agx-01", faults={"crash_after_requests": 8, "when": "speculative"}),
    board("ft-hang", "agx-01", faults={"hang_at_startup": True, "when": "speculative"},
          hostvars={"vllm_server_health_timeout": 8}),
    board("ft-gone", "thor-01"),
]
REVERTED = ["ft-reject", "ft-crash", "ft-hang"]
REACHABLE = ["ft-keep", "ft-oom"] + REVERTED


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    fleet.stop("ft-gone")
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="first")
    return fleet


def test_first_run_finishes_with_only_the_unreachable_host_failing(fleet):
    rc, out, dummy = fleet.first
    rec = recap(out)
    # a stopped container under the docker connection fails its first task (ssh would be unreachable)
    assert rec["ft-gone"]["unreachable"] + rec["ft-gone"]["failed"] == 1
    for host in REACHABLE:
        assert rec[host]["failed"] == 0 and rec[host]["unreachable"] == 0, out[-4000:]
    assert rc in (2, 4), out[-3000:]  # 2: a host failed, 4: a host was unreachable


def test_kept_host(fleet):
    assert_serving(fleet, "ft-keep", speculative=True)
    state = assert_state(fleet, "ft-keep", "kept")
    # the default rollout_marginal_action (revert) keeps only a result that met the keep bar
    assert state["verdict"]["decision"] == "keep" and state["verdict"]["action"] == "keep", state["verdict"]
    assert state["last_good"]["kind"] == "candidate"


def test_out_of_memory_falls_to_ngram_which_is_judged_and_served(fleet):
    state = fleet.state("ft-oom")
    first, last = state["attempts"][0], state["attempts"][-1]
    assert (first["result"], first["cause"]) == ("failed", "out_of_memory"), state["attempts"]
    assert last["result"] == "started" and last["label"].startswith("ngram"), state["attempts"]
    # n-gram is the only rung that started (every drafter runs out of memory), and whatever the verdict,
    # every candidate round measured it speculating
    assert [a["result"] for a in state["attempts"]].count("started") == 1, state["attempts"]
    assert state["verdict"]["rounds_used"] >= 3 and "candidate" in measured_arms(state), state["verdict"]
    kept = assert_settled(state)["action"] == "keep"
    assert_serving(fleet, "ft-oom", speculative=kept)
    assert ("ngram" in fleet.unit("ft-oom")) is kept, fleet.unit("ft-oom")


@pytest.mark.parametrize("host,cause", [("ft-reject", None), ("ft-crash", None), ("ft-hang", None)])
def test_faulty_candidate_is_reverted(fleet, host, cause):
    assert_serving(fleet, host, speculative=False)
    state = assert_state(fleet, host, "reverted", "revert")
    assert state["last_good"]["kind"] == "baseline"
    assert state["verdict"]["flagged"] is True
    assert state["info"]["config_after"] == "baseline"
    if host == "ft-crash":
        # the candidate started, then broke while it was measured
        assert any("failed during its benchmark" in r for r in state["verdict"]["reasons"]), state["verdict"]
    else:
        # no rung of the fallback ladder started
        assert state["attempts"] and all(a["result"] == "failed" for a in state["attempts"]), state["attempts"]
        if cause:
            assert any(a.get("cause") == cause for a in state["attempts"]), state["attempts"]


def test_report_lists_every_host(fleet):
    rows = fleet.report_rows("first")
    assert rows["ft-keep"]["decision"] == "keep" and rows["ft-keep"]["status"] == "kept", rows["ft-keep"]
    for host in REVERTED:
        assert rows[host]["decision"] == "revert", rows[host]
    assert rows["ft-gone"]["status"] == "unreachable"


def test_rerun_on_converged_fleet_changes_nothing(fleet):
    before = dict((h, fleet.state(h)["updated_at"]) for h in REACHABLE)
    rc, out, seconds = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="second")
    rec = recap(out)
    for host in REACHABLE:
        assert rec[host]["changed"] == 0 and rec[host]["failed"] == 0, (host, rec[host])
        assert fleet.state(host)["updated_at"] == before[host]
        assert not fleet.lock_held(host)
    assert "Benchmark the" not in out  # no bench task ran
    assert "Could not match supplied host pattern" not in out  # no host queued is not a warning (issue 19)
    rows = fleet.report_rows("second")
    assert all(rows[h]["status"] == "unchanged" for h in REACHABLE), rows
    print("converged re-run: %.1f s" % seconds)


def test_check_mode_changes_nothing(fleet):
    pids = dict((h, fleet.sh(h, "systemctl show -p MainPID --value vllm").stdout.strip()) for h in REACHABLE)
    units = dict((h, fleet.unit(h)) for h in REACHABLE)
    states = dict((h, fleet.state(h)) for h in REACHABLE)
    rc, out, dummy = fleet.run("playbooks/rollout.yml", "--check", rollout_force=True, rollout_run_id="check")
    rec = recap(out)
    for host in REACHABLE:
        assert rec[host]["failed"] == 0, out[-3000:]
        assert fleet.unit(host) == units[host]
        assert fleet.state(host) == states[host]
        assert fleet.sh(host, "systemctl show -p MainPID --value vllm").stdout.strip() == pids[host]
        assert not fleet.lock_held(host)
    rows = fleet.report_rows("check")
    assert all(rows[h]["status"] == "planned" for h in REACHABLE), rows
    # A plan, not just "planned": per host, without -v, what a real run would start and for how long.
    assert "DRY RUN (--check): nothing was changed. A real run would:" in out, out[-3000:]
    assert re.search(r"^  ft-keep: benchmark \S+.*, k=\d+, utilization 0\.\d+ \(baseline 0\.\d+\).* rounds of \d+ prompts", out, re.M), out[-3000:]
    with open(os.path.join(fleet.reports, "check", "report.md")) as handle:
        assert "DRY RUN (--check): no host was changed" in handle.read()


@pytest.mark.parametrize("bad,rule", [
    # one fleet run per rule costs about a minute; every rule's text is unit-tested, so CI runs one of them
    pytest.param({"rollout_bench_output_range_ratio": 1.5},
                 "rollout_bench_output_range_ratio must be within [0, 1), got 1.5", marks=pytest.mark.slow),
    pytest.param({"rollout_lock_liveness": 5}, "keeper.liveness (rollout_lock_liveness) must be 0 (no keeper) or at least 10",
                 marks=pytest.mark.slow),
    ({"rollout_keep_throughput_gain": -1}, "keep_throughput_gain must be a number >= 0"),
])
def test_impossible_settings_are_refused_before_any_change(fleet, bad, rule):
    """A setting no host can use fails every host in the read-only check, naming the rule; nothing changes."""
    pids = dict((h, fleet.sh(h, "systemctl show -p MainPID --value vllm").stdout.strip()) for h in REACHABLE)
    units = dict((h, fleet.unit(h)) for h in REACHABLE)
    states = dict((h, fleet.state(h)) for h in REACHABLE)
    rc, out, dummy = fleet.run("playbooks/rollout.yml", rollout_force=True, rollout_run_id="bad-%s" % sorted(bad)[0],
                               **bad)
    rec = recap(out)
    assert rc == 2 or rc == 4, out[-3000:]
    assert rule in out, out[-3000:]
    assert "Benchmark the" not in out  # no host got as far as a benchmark
    for host in REACHABLE:
        assert rec[host]["failed"] == 1 and rec[host]["changed"] == 0, (host, rec[host])
        assert fleet.unit(host) == units[host]
        assert fleet.state(host) == states[host]
        assert fleet.sh(host, "systemctl show -p MainPID --value vllm").stdout.strip() == pids[host]
        assert not fleet.lock_held(host)
