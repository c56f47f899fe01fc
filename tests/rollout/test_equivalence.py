"""The equivalence check before keep (issue 35) on a small simulated fleet.

Two Thor boards, alike but for one fault: on eq-lossy every speculating server garbles its answers
(the simulator's fault garble: other words from token 1 to 3 on, as a lossy setting such as vLLM's
rejection_sample_method: synthetic would), on eq-clean speculation answers as the baseline does.
The throughput of both candidates is the same (the fault does not touch timing), so only the
answers tell them apart: eq-lossy is refused as lossy after its first candidate round and serves
the baseline; eq-clean is kept. Observable results only: state files, what each host serves, the
fleet report.
"""
import os

import pytest

from harness import assert_serving, assert_state, board

PREFIX = "specdec-eq-"
SHORT = {"rollout_bench_num_prompts": 8, "rollout_bench_warmup_prompts": 1, "rollout_bench_output_len": 32,
         "rollout_verdict_restart_s": 5}
# The timing verdict is not under test here: low bars and more rounds so that a loaded CI host (two
# fleets at once) cannot turn eq-clean's clear speedup into "inconclusive" and hide the equivalence check.
EASY_KEEP = {"rollout_keep_throughput_gain": 0.05, "rollout_keep_tpot_drop": 0.05, "rollout_revert_throughput_gain": 0.01,
             "rollout_c8_regression_tolerance": 0.9, "rollout_marginal_action": "keep", "rollout_verdict_max_rounds": 8}
BOARDS = [
    board("eq-lossy", "thor-01", faults={"garble": True, "when": "speculative"}, hostvars=EASY_KEEP),
    board("eq-clean", "thor-01", hostvars=EASY_KEEP),
]


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS, hostvars=SHORT)
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="eq")
    return fleet


def test_the_run_finishes_without_a_failed_host(fleet):
    rc, out, dummy = fleet.first
    assert rc == 0, out[-4000:]


def test_a_garbling_candidate_is_refused_as_lossy_and_the_host_serves_the_baseline(fleet):
    state = assert_state(fleet, "eq-lossy", "reverted", "lossy")
    verdict = state["verdict"]
    assert verdict["action"] == "revert" and verdict["flagged"] is True
    check = verdict["equivalence"]
    assert check["verdict"] == "lossy" and check["margin"] == 0.2
    assert check["control"] == {"prompts": 4, "matches": 4, "match_rate": 1.0, "agreement": 1.0}, check
    assert check["candidate"]["matches"] == 0 and check["candidate"]["agreement"] < 0.2, check
    assert all(1 <= pos <= 3 for pos in check["first_diff"]), check
    assert len(check["examples"]) == 3 and all(e["expected"] != e["got"] for e in check["examples"]), check
    # refused after its first candidate round: a lossy candidate is not measured again
    assert [r["arm"] for r in state["benchmarks"]["rounds"]] == ["baseline", "candidate"]
    assert verdict["reasons"][-1].startswith("Lossy: the candidate's greedy answers agree"), verdict["reasons"]
    # the baseline answered twice (the control) on the same server, the candidate once
    assert len(state["benchmarks"]["baseline"]["answers"]["passes"]) == 2
    assert len(state["benchmarks"]["candidate"]["answers"]["passes"]) == 1
    assert state["last_good"]["kind"] == "baseline"
    assert_serving(fleet, "eq-lossy", speculative=False)


def test_a_faithful_candidate_is_kept_with_its_equivalence_numbers(fleet):
    state = assert_state(fleet, "eq-clean", "kept")
    # keep, or marginal with marginal_action keep when a loaded test host widened the intervals
    assert state["verdict"]["action"] == "keep" and state["verdict"]["decision"] in ("keep", "marginal")
    check = state["verdict"]["equivalence"]
    assert check["verdict"] == "equivalent" and check["lossy"] is False
    assert check["candidate"] == {"prompts": 4, "matches": 4, "match_rate": 1.0, "agreement": 1.0}, check
    assert check["examples"] == []
    assert_serving(fleet, "eq-clean", speculative=True)


def test_the_report_shows_the_check_per_host(fleet):
    rows = fleet.report_rows("eq")
    # the report names a marginal result kept by rollout_marginal_action: keep "kept below the keep bar"
    assert rows["eq-lossy"]["decision"] == "lossy"
    assert rows["eq-clean"]["decision"] in ("keep", "kept below the keep bar"), rows["eq-clean"]
    with open(os.path.join(fleet.reports, "eq", "report.md")) as handle:
        text = handle.read()
    assert "**Equivalence**: lossy: the candidate's greedy answers agree" in text, text
    assert "**Equivalence**: equivalent: the candidate's greedy answers agree 100 % with the baseline's (4 of 4" in text
    assert "rejection_sample_method: synthetic" in text  # the lossy host's next step
