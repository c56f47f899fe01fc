"""The third arm (issue 36): keep the c=1 win without the c=8 loss, where the schedule pays.

Three copies of the demo's agx-02 (EAGLE-3 at k=3 gains at concurrency 1 and loses at 8, so the candidate
alone is reverted):
- ta-kept (vLLM 0.32): the rollout measures both arms once at concurrency 2 and 4 (the threshold probe: the
  default levels [1, 8] leave them unmeasured), tries vLLM's batch-size schedule - k=3 up to the highest of 1, 2
  and 4 below the first level where the candidate regressed, k=0 above - judges it against the baseline at every
  level and keeps it: the unit speculates with the schedule;
- ta-costly (vLLM 0.32, the simulator's speculative_schedule_overhead 0.3: the schedule's own cost on every
  step): the schedule is tried, loses at concurrency 8 and is reverted, as the candidate was;
- ta-old (vLLM 0.20.1): no schedule in its SpeculativeConfig: the gate turns the third arm off with its rule,
  and the host is reverted as before.
A check-mode run first says what a real run would do ("would try a third arm", or why not).
Observable results only: state files, the units, the fleet report.
"""
import json
import os

import pytest

from harness import assert_serving, assert_state, board, recap

PREFIX = "specdec-ta-"
TOLERANCE = 0.10
KEEP_GAIN = 0.15
SHORT = {"rollout_bench_num_prompts": 8, "rollout_bench_warmup_prompts": 1, "rollout_bench_output_len": 32,
         "rollout_verdict_restart_s": 5, "rollout_verdict_max_rounds": 10}
BOARDS = [
    # The schedule's c=8 change on the stand-in is a small loss, -1 to -4 % (the head's prefill of every prompt,
    # and the stand-in's own per-step work at time_scale 0.1 under CI's load), two points from the default -5 %
    # tolerance: CI twice ran out of rounds on it (2026-12-05, 2026-12-06) and reverted the host as inconclusive.
    # What this host tests is the third arm kept, so its operator tolerates 10 % at c=8; the candidate's own
    # c=8 loss (-20 to -37 %) still regresses beyond that, and ta-costly keeps the default.
    # The third arm needs the candidate to win at c=1 (its gain at least the keep bar); on the stand-in that gain is
    # +25 to +45 %, and a loaded CI machine (2026-12-07) measured ta-costly's at +25.5 %, below the default 30 % bar:
    # no third arm. What these hosts test is the schedule, not the c=1 margin, so their keep bar is 15 %.
    board("ta-kept", "agx-02", vllm_version="0.32.0",
          hostvars={"rollout_c8_regression_tolerance": TOLERANCE, "rollout_keep_throughput_gain": KEEP_GAIN}),
    board("ta-costly", "agx-02", vllm_version="0.32.0", speculative_schedule_overhead=0.3,
          hostvars={"rollout_keep_throughput_gain": KEEP_GAIN}),
    # Its candidate's c=8 loss must settle as a regression (the gate is asked after a c=8 revert): a loaded CI
    # machine (2026-12-07) measured it at -14 % with 10 % drift between rounds, the interval -22.6 .. -4.5 %
    # still touching the 5 % tolerance after 10 rounds: inconclusive, no gate. More rounds for this host only.
    board("ta-old", "agx-02", vllm_version="0.20.1", hostvars={"rollout_verdict_max_rounds": 16}),
]
KEY = "num_speculative_tokens_per_batch_size"


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS, hostvars=SHORT)
    fleet.checked = fleet.run("playbooks/rollout.yml", "--check", rollout_run_id="ta-check")
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="ta")
    return fleet


def _entry(fleet, run, host):
    return [e for e in fleet.report(run)["hosts"] if e["row"]["host"] == host][0]


def _markdown(fleet, run):
    with open(os.path.join(fleet.reports, run, "report.md")) as handle:
        return handle.read()


def _numbers(host, record):
    """The candidate's and the schedule's c1 gain and c8 change, printed for the docs (pytest -s)."""
    first = (record["third_arm"].get("candidate_verdict") or {}).get("metrics") or {}
    final = record["verdict"]["metrics"]
    print("\n[third arm] %s: candidate c1 %+.1f %%, c8 %+.1f %%; verdict after the schedule: c1 %+.1f %%, c8 %+.1f %%"
          % (host, 100 * first.get("c1_throughput_gain", 0), 100 * first.get("c8_throughput_change", 0),
             100 * (final.get("c1_throughput_gain") or 0), 100 * (final.get("c8_throughput_change") or 0)))


def _arms(state):
    return [r["arm"] for r in state["benchmarks"]["rounds"]]


def test_the_check_mode_plan_says_it_would_try_a_third_arm_or_why_not(fleet):
    rc, out, dummy = fleet.checked
    assert rc == 0 and set(recap(out)) >= {"ta-kept", "ta-old"}, out[-3000:]
    kept = json.dumps(_entry(fleet, "ta-check", "ta-kept")["record"].get("reasons") or [])
    assert "would try a third arm" in kept, kept
    old = json.dumps(_entry(fleet, "ta-check", "ta-old")["record"].get("reasons") or [])
    assert "no third arm (schedule.vllm_too_old)" in old, old
    assert "the levels between measured first on both arms" in kept, kept


def test_the_run_finishes_without_a_failed_host(fleet):
    rc, out, dummy = fleet.first
    assert rc == 0, out[-4000:]


def threshold_from(probe, tolerance):
    """The rule, from the recorded probe: up over 2 and 4 while the candidate did not regress there."""
    threshold = 1
    for level in probe["levels"]:
        measured = probe["changes"][str(level)]
        if measured["change"] < -tolerance or measured["candidate_failed"] > measured["baseline_failed"]:
            break
        threshold = level
    return threshold


def test_a_c8_regressing_host_is_kept_with_the_schedule(fleet):
    state = assert_state(fleet, "ta-kept", "kept", "keep")
    arms = _arms(state)
    assert "schedule" in arms and arms.index("schedule") > arms.index("candidate"), arms
    assert "threshold probe" not in arms, arms  # the probe is not evidence of the verdict
    # every schedule round measured a speculating server (k=3 up to the threshold)
    assert all(r["speculating"] for r in state["benchmarks"]["rounds"] if r["arm"] == "schedule")
    record = _entry(fleet, "ta", "ta-kept")["record"]
    _numbers("ta-kept", record)
    # both arms were measured at 2 and 4 (not rounds of the verdict) and the threshold follows from them
    probe = record["third_arm"]["probe"]
    assert probe["levels"] == [2, 4] and set(probe["changes"]) == {"2", "4"}, probe
    assert all(c["baseline_tok_s"] > 0 and c["candidate_tok_s"] > 0 for c in probe["changes"].values()), probe
    threshold = threshold_from(probe, TOLERANCE)
    print("[third arm] ta-kept: probe %s -> threshold %d" % (
        dict((level, c["change"]) for level, c in probe["changes"].items()), threshold))
    assert record["third_arm"]["threshold"] == threshold, record["third_arm"]
    spec = json.loads(state["last_good"]["argv"][state["last_good"]["argv"].index("--speculative-config") + 1])
    assert spec[KEY][0] == [1, threshold, spec["num_speculative_tokens"]] and spec[KEY][1][2] == 0, spec
    assert ("speculates up to batch %d; above that it runs the baseline's path" % threshold) in state["info"]["config_after"]
    assert_serving(fleet, "ta-kept", speculative=True)
    assert KEY in fleet.unit("ta-kept")
    assert record["third_arm"]["kept"] is True and record["third_arm"]["candidate_verdict"]["decision"] == "revert"
    assert record["third_arm"]["candidate_verdict"]["metrics"]["c8_throughput_change"] < -0.05
    assert "Third arm" in _markdown(fleet, "ta") and "was kept" in _markdown(fleet, "ta")
    assert "measured between: c=2 " in _markdown(fleet, "ta")


def test_a_schedule_whose_own_cost_makes_it_lose_is_reverted(fleet):
    state = assert_state(fleet, "ta-costly", "reverted")
    assert "schedule" in _arms(state), _arms(state)
    record = _entry(fleet, "ta", "ta-costly")["record"]
    _numbers("ta-costly", record)
    assert record["third_arm"]["tried"] is True and record["third_arm"]["kept"] is False, record["third_arm"]
    assert state["last_good"]["kind"] == "baseline"
    assert_serving(fleet, "ta-costly", speculative=False)
    assert "judged against the baseline and reverted" in _markdown(fleet, "ta")


def test_a_vllm_without_the_schedule_turns_the_third_arm_off_with_its_rule(fleet):
    state = assert_state(fleet, "ta-old", "reverted", "revert")
    assert "schedule" not in _arms(state)
    record = _entry(fleet, "ta", "ta-old")["record"]
    assert record["third_arm"]["tried"] is False and record["third_arm"]["reason"].startswith("schedule.vllm_too_old")
    assert record["third_arm"].get("probe") is None  # no probe where no schedule can run
    assert "not tried: " in _markdown(fleet, "ta") and "schedule.vllm_too_old" in _markdown(fleet, "ta")
    assert_serving(fleet, "ta-old", speculative=False)
