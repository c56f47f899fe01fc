"""The sequential verdict on a simulated fleet (issue 15): round after round until settled.

Both noisy hosts throttle (the simulator's thermal episode) from the 22nd request after each
vLLM start: a round sends 19 requests (probe, a warm-up and 8 prompts per level), then the
equivalence check's answers (4 more requests to the engine, after the measurement), so the first
round on a server runs at full speed and the second, on the same server, almost wholly
throttled; the two candidate rounds disagree and the drift between rounds is measured large;
every later start throttles again from its 22nd request.  A request count, not model seconds:
model time grows with how badly requests batch, which CPU contention on the test host changes
(a loaded CI machine throttled the candidate's first round too and settled on "revert").
- noisy (slowdown 2.2, budget 6 rounds): the evidence does not settle after baseline,
  candidate, candidate: the rollout measures more rounds, interleaving the arms, and records
  every round;
- inconclusive (slowdown 3, budget 4 rounds, a c=8 tolerance out of reach): the evidence cannot
  settle keep or revert within the budget: inconclusive, reverted and flagged;
- crash in round 2: the candidate dies during its second round (not its first): the host is
  reverted, not failed, and serves the baseline (bug 4 of the issue).
- throttled (issue 16, board conditions): the board throttles visibly (the simulator's fault
  thermal_throttle: the GPU devfreq clock falls to 40 % of its pinned maximum, the zone reads hot)
  during the first 12 requests of every candidate start, so the sample vllm_bench takes after the
  c=1 level shows it: the round that opens a candidate server is set aside, the candidate measured
  again on the same server, and the verdict rests on the rounds measured at full clock.
- prompts: the operator's prompt file (rollout_bench_dataset) is checked on the controller,
  copied to the host and measured on; a second run with a file whose third line has no prompt
  fails in the read-only pass, naming the line, and changes nothing (issue 16, workloads).
Observable results only: state files, what each host serves, the fleet report.
"""
import calendar
import os
import time

import pytest

from harness import assert_serving, assert_settled, assert_state, board

PREFIX = "specdec-lv-"
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
# Short rounds: these tests are about the loop, not the numbers (8 prompts per level and round).
SHORT = {"rollout_bench_num_prompts": 8, "rollout_bench_warmup_prompts": 1, "rollout_bench_output_len": 32,
         "rollout_verdict_restart_s": 5}
# the probe, warm-up 1 + 8 prompts at concurrency 1 and at 8 and the equivalence check's one answers
# request: 20 completions per round; the 21st is in round 2
CRASH_AT = 21
THROTTLE = {"thermal": {"after_requests": 21, "duration_s": 100000, "slowdown": 3.0}}
BOARDS = [
    board("lv-noisy", "thor-01",
          noise=dict(THROTTLE, step_jitter_cv=0.08, acceptance_spread=0.3, thermal=dict(THROTTLE["thermal"], slowdown=2.2)),
          # exactly six rounds: the sixth switches back to the candidate after two baseline rounds
          hostvars={"rollout_verdict_min_rounds": 6, "rollout_verdict_max_rounds": 6}),
    # c=8 may not settle it either: on a loaded CI machine (2026-12-07) the throttle reached the first
    # candidate round's c=8 level too, both candidate rounds read c=8 -56 % alike and the regression
    # settled "revert" in round 3. What this host proves is a c=1 that never settles, so its c=8
    # tolerance is out of reach.
    # Nor may c=1 settle below the keep bar: on a loaded machine (2026-12-07) the unthrottled candidate measured only
    # about +18 %, its throttled round pulled the estimate to -32 % and the interval's top (+16 %) fell under the 30 %
    # bar: "marginal", revert. Intervals of 3.5 standard errors keep both bars inside it whatever the load.
    # The budget's last look (rollout_verdict_budget_end_z, 1 standard error by default) would judge the same four
    # rounds at narrower intervals and might settle them: off here, so the host shows what a budget that ends with
    # the evidence open does (the look itself: tests/unit/plugins/module_utils/test_verdict_budget_end.py).
    board("lv-inconclusive", "thor-01", noise=THROTTLE,
          hostvars={"rollout_verdict_max_rounds": 4, "rollout_c8_regression_tolerance": 0.95, "rollout_noise_z": 3.5,
                    "rollout_verdict_budget_end_z": None}),
    board("lv-crash", "thor-01", faults={"crash_after_requests": CRASH_AT, "when": "speculative"}),
    board("lv-prompts", "thor-01", hostvars={"rollout_bench_dataset": os.path.join(DATA, "prompts.jsonl")}),
    board("lv-throttled", "thor-01", faults={"thermal_throttle": {"after_requests": 0, "duration_requests": 12,
                                                                  "slowdown": 2.5}, "when": "speculative"},
          hostvars={"rollout_verdict_max_rounds": 12}),
]
ORDER = ["baseline", "candidate", "candidate", "baseline", "baseline", "candidate", "candidate", "baseline"]


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS, hostvars=SHORT)
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="loop")
    fleet.after_first = dict((h, fleet.state(h)) for h in fleet.hosts)
    fleet.bad_file = fleet.run("playbooks/rollout.yml", "--limit", "lv-prompts,localhost", rollout_serial=["100%"],
                               rollout_run_id="bad-file", rollout_force=True,
                               rollout_bench_dataset=os.path.join(DATA, "bad-prompts.jsonl"))
    return fleet


def rounds(state):
    """The arms of the rounds, after checking that each measured what it says: every candidate round a
    speculating server, every baseline round one without speculation (a switch that did not happen
    would measure the other arm under its name)."""
    measured = state["benchmarks"]["rounds"]
    assert all(r["speculating"] is (r["arm"] == "candidate") for r in measured), measured
    return [r["arm"] for r in measured]


def test_the_run_finishes_without_a_failed_host(fleet):
    rc, out, dummy = fleet.first
    assert rc == 0, out[-4000:]


def test_a_noisy_host_is_measured_round_after_round_with_the_arms_interleaved(fleet):
    state = fleet.state("lv-noisy")
    assert state["status"] in ("kept", "reverted"), state
    verdict = state["verdict"]
    arms = rounds(state)
    assert arms == ORDER[:6], (arms, verdict["reasons"])
    assert verdict["rounds_used"] == len(arms)
    assert_settled(state)  # any decision the noise leads to, but the action and status follow from it
    assert isinstance(verdict["metrics"]["ttft_change"], float)  # the TTFT guard reports on every verdict
    for key in ("c1_throughput_gain", "c1_tpot_drop", "c8_throughput_change"):
        est = verdict["estimates"][key]
        assert est["low"] <= est["point"] <= est["high"], est
    assert_serving(fleet, "lv-noisy", speculative=state["status"] == "kept")


def test_a_host_whose_evidence_never_settles_is_inconclusive_reverted_and_flagged(fleet):
    state = assert_state(fleet, "lv-inconclusive", "reverted", "inconclusive")
    verdict = state["verdict"]
    assert verdict["action"] == "revert" and verdict["flagged"] is True
    assert rounds(state) == ORDER[:4] and verdict["rounds_used"] == 4
    assert "round budget" in verdict["reasons"][-1] and "Not settled yet" in " ".join(verdict["reasons"])
    assert state["last_good"]["kind"] == "baseline"
    assert_serving(fleet, "lv-inconclusive", speculative=False)


def test_a_candidate_dying_in_its_second_round_is_reverted_not_failed(fleet):
    state = assert_state(fleet, "lv-crash", "reverted", "revert")
    assert state["verdict"]["flagged"] is True
    assert "failed during its benchmark" in state["verdict"]["reasons"][0], state["verdict"]
    # the baseline and the candidate's first round are kept; the round that broke is not a result
    assert rounds(state) == ["baseline", "candidate"], rounds(state)
    assert_serving(fleet, "lv-crash", speculative=False)


def test_the_ith_round_of_each_arm_was_measured_on_prompt_set_i(fleet):
    """Issue 31: the prompts rotate in pairs. What each round's benchmark on the board reported drawing: B C C B B C
    measured on sets 0 0 1 1 2 2 (the i-th baseline and the i-th candidate round on set i)."""
    measured = fleet.after_first["lv-noisy"]["benchmarks"]["rounds"]
    assert [(r["arm"], r.get("prompt_set")) for r in measured] == [
        ("baseline", 0), ("candidate", 0), ("candidate", 1), ("baseline", 1), ("baseline", 2), ("candidate", 2)]


def test_a_host_that_settles_early_gets_its_answer_while_a_slow_one_still_measures(fleet):
    """Issue 32: a host's evaluation is one task, so no board waits for the slowest of its batch. lv-crash (reverted
    after its second round) has its baseline back and its outcome written while lv-noisy (six rounds, the same
    batch) still measures: before its last round starts. Under a task per step, every host waited at every step for
    the slowest and every outcome was written after the last round of the batch."""
    crash, noisy = fleet.after_first["lv-crash"], fleet.after_first["lv-noisy"]
    starts = [r.get("at") for r in noisy["benchmarks"]["rounds"]]
    assert len(starts) >= 5, starts
    # updated_at is whole seconds, rounded down: the write was before written + 1, so written + 1 <= last proves it
    # came first. The last round, not a fixed one: on a loaded CI host lv-crash's revert (a vLLM restart) took 33 s
    # and its outcome came 1.5 s after lv-noisy's fourth round started (2026-12-07), still 23 s before its sixth.
    written = calendar.timegm(time.strptime(crash["updated_at"], "%Y-%m-%dT%H:%M:%SZ"))
    assert written + 1 <= starts[-1], (crash["updated_at"], starts)


def test_a_round_measured_while_the_board_throttled_is_set_aside_and_measured_again(fleet):
    state = fleet.state("lv-throttled")
    assert state is not None and state["status"] in ("kept", "reverted"), state
    verdict = state["verdict"]
    arms = rounds(state)
    assert arms[:3] == ["baseline", "candidate", "candidate"], (arms, verdict["reasons"])
    # every candidate start throttles (the fault applies to each speculative start): the round that
    # opens a candidate server is set aside, the one after it on the same server is evidence
    opening = [i + 1 for i, arm in enumerate(arms) if arm == "candidate" and arms[i - 1] == "baseline"]
    aside = verdict["set_aside"]
    assert [(a["round"], a["arm"]) for a in aside] == [(n, "candidate") for n in opening], verdict
    for entry in aside:
        assert "GPU frequency dropped 60 % (1575 -> 630 MHz)" in entry["reasons"][0], aside
        assert any("throttled (630 MHz under a pinned 1575 MHz)" in r for r in entry["reasons"]), aside
    assert verdict["reasons"][0].startswith("Round 2 (candidate) is set aside, not evidence:"), verdict["reasons"]
    # the evidence is the rounds at full clock (the candidate c=1 some 40 % faster); the throttled
    # rounds alone read a candidate some 45 % slower. The decision itself is keep unless the test
    # host's own load spread the rounds so far that 12 rounds did not settle it (inconclusive), or slowed
    # the stand-in's speculative steps until the gain's interval lay below the keep bar (marginal: CI,
    # 2026-12-06, +14 % with interval +0.5 .. +29.7 %, reverted below the keep bar).
    assert verdict["estimates"]["c1_throughput_gain"]["point"] > 0.1, verdict["reasons"]
    assert verdict["action"] == "keep" or verdict["decision"] in ("inconclusive", "marginal"), verdict["reasons"]
    assert state["status"] == ("kept" if verdict["action"] == "keep" else "reverted")
    # The state keeps the conditions of the last candidate round. Usually that round is evidence, at full
    # clock; when a loaded test host spread the rounds until the budget ended right after a switch, it is
    # an opening round, throttled and set aside. Either way its samples agree with the verdict about it.
    conditions = state["benchmarks"]["candidate"]["conditions"]
    assert [c["when"] for c in conditions] == ["before", "after concurrency 1", "after concurrency 8"], conditions
    # the state's candidate is the last candidate round that measured every level (record.last_round): a later round
    # the verdict asked at the open levels only (the others settled) is not it
    measured = state["benchmarks"]["rounds"]
    every = max(len(r["levels"]) for r in measured)
    last_candidate = max(i + 1 for i, r in enumerate(measured) if r["arm"] == "candidate" and len(r["levels"]) == every)
    throttled = any(c["throttled"] or not c["clocks_pinned"] for c in conditions)
    assert throttled == (last_candidate in set(a["round"] for a in aside)), (last_candidate, aside, conditions)
    assert_serving(fleet, "lv-throttled", speculative=verdict["action"] == "keep")
    with open(os.path.join(fleet.reports, "loop", "report.md")) as handle:
        assert "(B C* C" in handle.read()


def test_the_report_shows_each_hosts_intervals_and_rounds(fleet):
    rows = fleet.report_rows("loop")
    assert rows["lv-inconclusive"]["decision"] == "inconclusive"
    with open(os.path.join(fleet.reports, "loop", "report.md")) as handle:
        text = handle.read()
    assert "**Evidence**" in text and "4 rounds (B C C B)" in text
    # every measured host: how far each arm runs from the board's bandwidth limit (issue 16, roofline)
    assert text.count("**Roofline**: at c=1 the baseline decodes at") >= 3, text


def test_the_operators_prompts_are_copied_to_the_host_and_measured_on(fleet):
    state = fleet.after_first["lv-prompts"]
    assert state["status"] in ("kept", "reverted"), state
    for arm in ("baseline", "candidate"):
        workload = state["benchmarks"][arm]["workload"]
        assert (workload["name"], workload["format"], workload["count"]) == ("prompts.jsonl", "custom", 6), workload
    sha = state["benchmarks"]["candidate"]["workload"]["sha256"]
    copy = "/var/lib/jetson-specdec/workloads/%s/prompts.jsonl" % sha[:16]
    assert fleet.sh("lv-prompts", "stat -c %%a %s" % copy).stdout.strip() == "640"
    assert state["config"]["workload"] == sha  # a new file is a new config: the hosts are judged again
    with open(os.path.join(fleet.reports, "loop", "report.md")) as handle:
        assert "**Workload**: prompts.jsonl (custom, 6 prompts" in handle.read()


def test_a_bad_prompt_file_is_refused_naming_the_line_before_any_host_changes(fleet):
    rc, out, dummy = fleet.bad_file
    assert rc != 0
    assert "bad-prompts.jsonl line 3 has no 'prompt'" in out and "no host was changed" in out, out[-3000:]
    assert "Benchmark a round" not in out and "Copy the prompt file" not in out
    assert fleet.state("lv-prompts") == fleet.after_first["lv-prompts"]  # not even the state file was touched
    assert_serving(fleet, "lv-prompts", speculative=fleet.after_first["lv-prompts"]["status"] == "kept")
