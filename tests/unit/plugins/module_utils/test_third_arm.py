# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The third arm (issue 36): vLLM 0.32's batch-size schedule checked with vLLM's texts, rendered into the
speculative config JSON, the threshold chosen from the measured levels, the version gate, and the schedule
judged by the same sequential verdict against the baseline."""
import json
import random

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import batch_schedule as bs
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import (
    SpecConfigError, render_spec_config_json)
from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec
from ansible_collections.jetson.specdec.plugins.module_utils.record.why import explain
from ansible_collections.jetson.specdec.plugins.module_utils.record.report import host_row, runs_now_label
from ansible_collections.jetson.specdec.plugins.module_utils.verdict import third_arm

from .test_verdict_decide import result

PARAMS = {"keep_throughput_gain": 0.3, "c8_regression_tolerance": 0.05}
RUNGS = [{"rung": 0, "label": "eagle3 at utilization 0.70"}, {"rung": 1, "label": "speculation off (baseline)"}]
RECORD = {"attempts": [{"rung": 0, "label": "eagle3 at utilization 0.70", "result": "started"}]}


def verdict(changes, gain=0.55, decision="revert", rule=None):
    """A candidate's verdict as spec_decide returns it, trimmed: ``changes`` {level: throughput change}."""
    levels = sorted(changes)
    estimates = {"c1_throughput_gain": {"point": gain, "low": gain - 0.1, "high": gain + 0.1}}
    for level in levels:
        key = "c8_throughput_change" if level == max(levels) else "throughput_change_c%d" % level
        estimates[key] = {"point": changes[level], "low": changes[level] - 0.05, "high": changes[level] + 0.05}
    return {"decision": decision, "action": "keep" if decision == "keep" else "revert", "rule": rule,
            "estimates": estimates, "metrics": {"low_concurrency": 1, "regression_levels": levels}}


# --------------------------------------------------------------------------- vLLM's rules, vLLM's texts

@pytest.mark.parametrize("schedule, message", [
    (None, "num_speculative_tokens_per_batch_size is required for dynamic speculative decoding."),
    ({"1-4": 3}, "num_speculative_tokens_per_batch_size must be a non-empty list of (range_start, range_end, "
                 "num_speculative_tokens) entries."),
    ([], "num_speculative_tokens_per_batch_size must not be empty."),
    ([[1, 4]], "Each num_speculative_tokens_per_batch_size entry must be a 3-item sequence: (range_start, "
               "range_end, num_speculative_tokens)."),
    ([[0, 4, 3]], "Batch-size range (0, 4) must be positive."),
    ([[4, 2, 3]], "Batch-size range start must be <= end for (4, 2, 3)."),
    ([[1, 4, -1]], "num_speculative_tokens_per_batch_size values must be >= 0."),
    ([[1, 4, 3], [3, 8, 0]], "Batch-size ranges must be non-overlapping and sorted."),
    ([[2, 4, 3]], "The first batch-size range must start at 1 so every runtime batch size has a defined schedule."),
])
def test_a_schedule_vllm_would_refuse_is_refused_with_vllms_message(schedule, message):
    with pytest.raises(bs.ScheduleError) as caught:
        bs.validate_schedule(schedule)
    assert str(caught.value) == message


def test_unsorted_ranges_are_sorted_and_the_lookup_is_vllms():
    assert bs.validate_schedule([[5, 8, 0], [1, 4, 3]]) == [[1, 4, 3], [5, 8, 0]]
    schedule = [[1, 1, 4], [2, 4, 3], [5, 16, 2], [17, 256, 0]]
    assert [bs.k_at(schedule, b, 4) for b in (1, 2, 4, 5, 16, 17, 20)] == [4, 3, 3, 2, 2, 0, 0]
    # clamped to the start-up maximum; gaps take the previous k
    assert bs.k_at([[1, 2, 6], [10, 20, 0]], 5, 3) == 3


def test_the_third_arms_schedule_speculates_up_to_the_threshold_and_not_above():
    assert bs.build_schedule(3, 4, 8) == [[1, 3, 4], [4, 8, 0]]
    assert bs.build_schedule(8, 4, 8) == [[1, 8, 4], [9, 9, 0]]  # a range past max_num_seqs is harmless
    with pytest.raises(bs.ScheduleError, match="schedule.k"):
        bs.build_schedule(3, 0, 8)
    with pytest.raises(bs.ScheduleError, match="schedule.threshold"):
        bs.build_schedule(0, 3, 8)


def test_the_speculative_config_json_carries_the_schedule_as_vllm_parses_it():
    cfg = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}
    text = render_spec_config_json(cfg, {"num_speculative_tokens_per_batch_size": bs.build_schedule(1, 3, 8)})
    assert text == ('{"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B","num_speculative_tokens":3,'
                    '"num_speculative_tokens_per_batch_size":[[1,1,3],[2,8,0]]}')
    assert json.loads(text)["num_speculative_tokens_per_batch_size"] == [[1, 1, 3], [2, 8, 0]]
    with pytest.raises(SpecConfigError) as caught:
        render_spec_config_json(cfg, {"num_speculative_tokens_per_batch_size": [[2, 8, 3]]})
    assert "The first batch-size range must start at 1" in str(caught.value)
    # other extra keys stay scalars
    with pytest.raises(SpecConfigError, match="scalar"):
        render_spec_config_json(cfg, {"disable_padded_drafter_batch": [1]})


# --------------------------------------------------------------------------- the gate

def test_the_gate_names_the_rule_and_the_fix():
    assert bs.supports_schedule((0, 32, 0), "eagle3") is None
    assert bs.supports_schedule((0, 33, 1), "draft_model") is None
    old = bs.supports_schedule((0, 20, 1), "eagle3")
    assert old.startswith("schedule.vllm_too_old:") and "0.20.1" in old and "upgrade vLLM to 0.32" in old
    assert bs.supports_schedule(None, "eagle3").startswith("schedule.vllm_unknown:")
    assert bs.supports_schedule((0, 32, 0), "suffix").startswith("schedule.method_fixed_k:")


# --------------------------------------------------------------------------- the threshold

@pytest.mark.parametrize("changes, threshold, first", [
    ({8: -0.26}, 1, 8),                             # only c=1 and c=8 measured: the schedule speculates at batch 1
    ({2: 0.2, 4: 0.01, 8: -0.26}, 4, 8),            # c=4 did not regress: up to batch 4
    ({2: 0.2, 4: -0.12, 8: -0.3}, 2, 4),            # the first regressing level bounds it
    ({2: -0.04, 4: -0.2, 8: -0.3}, 2, 4),           # within the tolerance is no regression
    ({2: -0.3, 4: 0.1, 8: -0.3}, 1, 2),             # a later recovery does not raise it
    ({8: 0.02}, None, None),                        # nothing regressed: no threshold
])
def test_the_threshold_is_the_highest_measured_level_below_the_first_regression(changes, threshold, first):
    assert third_arm.choose_threshold(verdict(changes), 0.05) == (threshold, first)


def test_the_third_arm_is_tried_only_after_a_c1_win_with_a_regression_on_a_vllm_that_has_the_schedule():
    tried = third_arm.plan(verdict({2: 0.2, 4: -0.12, 8: -0.3}), PARAMS, True, "0.32.0", "eagle3", 3, 8)
    assert tried["try"] and tried["threshold"] == 2 and tried["schedule"] == [[1, 2, 3], [3, 8, 0]]
    assert tried["line"] == "speculates up to batch 2; above that it runs the baseline's path"
    assert tried["regressed_at"] == 4 and "+55 %" in tried["reason"]
    cases = [
        (third_arm.plan(verdict({8: -0.3}), PARAMS, False, "0.32.0", "eagle3", 3), "rollout_third_arm is off"),
        (third_arm.plan(verdict({8: 0.0}, decision="keep"), PARAMS, True, "0.32.0", "eagle3", 3), "not reverted"),
        (third_arm.plan(verdict({8: -0.3}, rule="verdict.failure_rate"), PARAMS, True, "0.32.0", "eagle3", 3),
         "not reverted"),
        (third_arm.plan(verdict({8: -0.3}, gain=0.12), PARAMS, True, "0.32.0", "eagle3", 3), "did not win"),
        (third_arm.plan(verdict({8: -0.03}), PARAMS, True, "0.32.0", "eagle3", 3), "no level regressed"),
        (third_arm.plan(verdict({8: -0.3}), PARAMS, True, "0.20.1", "eagle3", 3), "schedule.vllm_too_old"),
        (third_arm.plan(verdict({8: -0.3}), PARAMS, True, None, "eagle3", 3), "schedule.vllm_unknown"),
    ]
    for out, why in cases:
        assert out["try"] is False and why in out["reason"], out


# --------------------------------------------------------------------------- the threshold probe

def probe_result(tok_s, failed=None):
    """A vllm_bench result trimmed to what the probe reads: {level: tok/s}, ``failed`` {level: count}."""
    return {"runs": [{"concurrency": level, "completed": 30, "failed": (failed or {}).get(level, 0), "duration_s": 40.0,
                      "throughput_tok_s": value, "tpot_ms_p50": 20.0} for level, value in sorted(tok_s.items())]}


@pytest.mark.parametrize("threshold, first, measured, between", [
    (1, 8, [1, 8], [2, 4]),           # the default levels: both powers of two between are unmeasured
    (2, 8, [1, 2, 8], [4]),           # expected concurrency 2 is measured already
    (4, 8, [1, 2, 4, 8], []),         # rollout_bench_concurrency [1, 2, 4, 8]: nothing to probe
    (1, 2, [1, 2, 8], []),            # c=2 regressed: nothing between 1 and 2
    (1, 16, [1, 16], [2, 4, 8]),
])
def test_the_probe_measures_the_unmeasured_powers_of_two_below_the_first_regression(threshold, first, measured, between):
    assert third_arm.levels_between(threshold, first, measured) == between


def test_with_the_default_levels_the_plan_asks_for_a_probe_at_2_and_4_and_keeps_threshold_1_until_then():
    out = third_arm.plan(verdict({8: -0.3}), PARAMS, True, "0.32.0", "eagle3", 3, 8)
    assert out["try"] and out["probe_levels"] == [2, 4] and out["threshold"] == 1 and out["probe"] is None
    off = third_arm.plan(verdict({8: -0.3}), PARAMS, True, "0.32.0", "eagle3", 3, 8, measure_between=False)
    assert off["try"] and off["probe_levels"] == [] and off["threshold"] == 1
    # a gate that refuses the schedule asks for no probe either: the probe would cost restarts for nothing
    old = third_arm.plan(verdict({8: -0.3}), PARAMS, True, "0.20.1", "eagle3", 3, 8)
    assert not old["try"] and old["probe_levels"] == []


@pytest.mark.parametrize("base, cand, failed, threshold, words", [
    ({2: 100, 4: 180}, {2: 118, 4: 176}, None, 4, "c=2 +18 %, c=4 -2 %; threshold 4"),     # -2 % is within 5 %
    ({2: 100, 4: 180}, {2: 118, 4: 164}, None, 2, "c=2 +18 %, c=4 -9 %; threshold 2"),
    ({2: 100, 4: 180}, {2: 90, 4: 200}, None, 1, "c=2 -10 %, c=4 +11 %; threshold 1"),     # a later recovery does not count
    ({2: 100, 4: 180}, {2: 130, 4: 200}, {2: 1}, 1, "threshold 1"),                          # failing more is a regression
])
def test_the_probe_raises_the_threshold_over_each_level_that_did_not_regress(base, cand, failed, threshold, words):
    probe = {"baseline": probe_result(base), "candidate": probe_result(cand, failed)}
    out = third_arm.plan(verdict({8: -0.3}), PARAMS, True, "0.32.0", "eagle3", 3, 8, probe=probe)
    assert out["try"] and out["threshold"] == threshold and out["probe_levels"] == [], out
    assert out["schedule"] == bs.build_schedule(threshold, 3, 8)
    assert out["line"] == "speculates up to batch %d; above that it runs the baseline's path" % threshold
    assert words in out["reason"], out["reason"]
    assert out["probe"]["levels"] == [2, 4] and out["probe"]["changes"]["2"]["baseline_tok_s"] == base[2]


@pytest.mark.parametrize("probe, why", [
    ({"baseline": probe_result({2: 100}), "candidate": probe_result({2: 120, 4: 150})}, "baseline's probe benchmark has no level 4"),
    ({"baseline": probe_result({2: 100, 4: 180}), "candidate": {"runs": []}}, "candidate's probe benchmark has no level 2"),
    ({"baseline": probe_result({2: 100, 4: 180}), "candidate": probe_result({2: 120, 4: float("nan")})}, "finite"),
])
def test_a_probe_that_cannot_be_read_turns_the_third_arm_off_naming_why(probe, why):
    out = third_arm.plan(verdict({8: -0.3}), PARAMS, True, "0.32.0", "eagle3", 3, 8, probe=probe)
    assert out["try"] is False and out["reason"].startswith("schedule.probe_failed:") and why in out["reason"], out


def test_the_record_keeps_the_probe_and_the_report_line_names_the_threshold():
    probe = {"baseline": probe_result({2: 100, 4: 180}), "candidate": probe_result({2: 118, 4: 164})}
    plan = third_arm.plan(verdict({8: -0.3}), PARAMS, True, "0.32.0", "eagle3", 3, 8, probe=probe)
    kept = rec.third_arm_record(dict(plan, candidate_verdict=verdict({8: -0.3})), True)
    assert kept["threshold"] == 2 and kept["probe"]["changes"]["4"]["change"] == pytest.approx(-0.0889, abs=1e-4)
    assert kept["kept"] is True and kept["tried"] is True


def test_the_check_mode_plan_says_it_would_try_a_third_arm_or_why_not():
    launch = {"candidate": {"plan": {"speculative_config": {"method": "eagle3", "model": "h/e", "num_speculative_tokens": 3}},
                            "rungs": [], "gpu_memory_utilization": 0.7}, "baseline": {"gpu_memory_utilization": 0.75}}
    on = rec.dry_run_plan(launch, {"verdict": {}, "third_arm": {"enabled": True, "vllm_version": "0.32.0"}})
    assert "would try a third arm" in on["line"] and on["third_arm"].startswith("would try a third arm")
    old = rec.dry_run_plan(launch, {"verdict": {}, "third_arm": {"enabled": True, "vllm_version": "0.20.1"}})
    assert "no third arm (schedule.vllm_too_old)" in old["line"]
    off = rec.dry_run_plan(launch, {"verdict": {}, "third_arm": {"enabled": False}})
    assert "third arm" not in off["line"]


# --------------------------------------------------------------------------- judged like a candidate

def _rounds(truth, schedule_truth, seed=3):
    """Baseline and candidate rounds until the candidate's verdict, then the schedule's rounds until its own."""
    rng = random.Random(seed)
    rounds = []
    params = {"min_rounds": 3, "max_rounds": 12}
    while True:
        out = rec.run_verdict(RECORD, rounds, RUNGS, None, params)
        if out["action"] != "measure_more":
            break
        arm = out["next_round"]["arm"]
        rounds.append({"phase": arm, "result": result(rng, **(truth if arm == "candidate" else {}))})
    first = out
    plan = third_arm.plan(first, PARAMS, True, "0.32.0", "eagle3", 3, 8)
    assert plan["try"], plan
    while True:
        out = rec.run_verdict(RECORD, rounds, RUNGS, None, params) if any(
            r["phase"] == "schedule" for r in rounds) else {"action": "measure_more", "next_round": {"arm": "candidate"}}
        if out["action"] != "measure_more":
            return first, plan, out, rounds
        arm = "schedule" if out["next_round"]["arm"] == "candidate" else "baseline"
        rounds.append({"phase": arm, "result": result(rng, **(schedule_truth if arm == "schedule" else {}))})


def test_a_schedule_that_keeps_the_c1_gain_without_the_c8_loss_is_kept():
    first, plan, final, rounds = _rounds({"gain": 0.6, "tpot": -0.4, "c8": -0.3}, {"gain": 0.6, "tpot": -0.4, "c8": 0.0})
    assert first["action"] == "revert" and first["metrics"]["c8_throughput_change"] < -0.2
    assert final["action"] == "keep", final["reasons"]
    # the schedule's verdict rests on the baseline's rounds and its own, not the candidate's
    phases = [r["phase"] for r in rounds]
    assert final["rounds_used"] == phases.count("baseline") + phases.count("schedule")
    assert abs(final["metrics"]["c8_throughput_change"]) < 0.05
    done = rec.judged(dict(RECORD, status="queued"), final, rounds, RUNGS[0], {}, third_arm=dict(plan, candidate_verdict=first))
    assert done["status"] == "kept" and done["third_arm"]["kept"] is True
    assert done["config_after"] == ("eagle3 at utilization 0.70, speculates up to batch 1; above that it runs the "
                                    "baseline's path")
    assert done["candidate"] == rec.compact_result(rounds[-1]["result"] if phases[-1] == "schedule" else
                                                   [r for r in rounds if r["phase"] == "schedule"][-1]["result"])
    line = explain(done)["third_arm"]
    assert "speculates up to batch 1" in line and line.endswith("was kept") and "-3" in line


def test_a_schedule_whose_own_cost_loses_at_c8_is_reverted():
    first, plan, final, rounds = _rounds({"gain": 0.6, "tpot": -0.4, "c8": -0.3}, {"gain": 0.45, "tpot": -0.3, "c8": -0.15})
    assert final["action"] == "revert", final["reasons"]
    done = rec.judged(dict(RECORD, status="queued"), final, rounds, RUNGS[0], {}, third_arm=dict(plan, candidate_verdict=first))
    assert done["status"] == "reverted" and done["config_after"] == "baseline"
    assert done["third_arm"]["tried"] is True and done["third_arm"]["kept"] is False
    assert done["third_arm"]["candidate_verdict"]["decision"] == "revert"
    assert explain(done)["third_arm"].endswith("judged against the baseline and reverted")


def test_a_gate_refusal_is_in_the_report_and_a_plain_revert_says_nothing():
    refused = rec.judged(dict(RECORD, status="queued"), verdict({8: -0.3}), [], RUNGS[0], {},
                         third_arm=third_arm.plan(verdict({8: -0.3}), PARAMS, True, "0.20.1", "eagle3", 3))
    assert explain(refused)["third_arm"].startswith("not tried: schedule.vllm_too_old")
    plain = rec.judged(dict(RECORD, status="queued"), verdict({8: 0.0}, gain=0.05), [], RUNGS[0], {},
                       third_arm=third_arm.plan(verdict({8: 0.0}, gain=0.05), PARAMS, True, "0.32.0", "eagle3", 3))
    assert explain(plain)["third_arm"] is None


def test_the_report_says_a_kept_schedule_speculates_only_up_to_its_batch():
    first, plan, final, rounds = _rounds({"gain": 0.6, "tpot": -0.4, "c8": -0.3}, {"gain": 0.6, "tpot": -0.4, "c8": 0.0})
    done = rec.judged(dict(RECORD, status="queued"), final, rounds, RUNGS[0], {}, third_arm=dict(plan, candidate_verdict=first))
    line = explain(done)["third_arm"]
    assert "the schedule (it speculates up to batch 1; above that it runs the baseline's path; vLLM's " \
           "num_speculative_tokens_per_batch_size [1-1: k=3] [2-" in line, line
    row = host_row(done)
    assert row["schedule_upto"] == 1 and runs_now_label(row) == "eagle3 k=3 up to batch 1", row
    # the same host without the schedule (the candidate kept as it is) speculates at every batch size
    plain = host_row(dict(done, third_arm=dict(done["third_arm"], kept=False)))
    assert plain["schedule_upto"] is None and runs_now_label(plain) == "eagle3 k=3"


def test_the_report_line_of_a_probed_schedule_names_the_levels_between():
    probe = {"baseline": probe_result({2: 100, 4: 180}), "candidate": probe_result({2: 118, 4: 164})}
    plan = third_arm.plan(verdict({8: -0.3}), PARAMS, True, "0.32.0", "eagle3", 3, 8, probe=probe)
    done = rec.judged(dict(RECORD, status="queued"), verdict({8: -0.3}), [], RUNGS[0], {},
                      third_arm=dict(plan, candidate_verdict=verdict({8: -0.3})))
    line = explain(done)["third_arm"]
    assert "measured between: c=2 +18 %, c=4 -9 %; the schedule (it speculates up to batch 2;" in line, line
