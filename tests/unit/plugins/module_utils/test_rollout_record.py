# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The per-host rollout record (record/record.py) and its filter."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.record import FilterModule
from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec

JETSON = {"family": "thor", "variant": "t5000", "model": "NVIDIA Jetson AGX Thor", "l4t": {"release": "39.2"},
          "jetpack": "7.1", "memory_total_bytes": 128 * 2 ** 30, "power_mode": {"name": "MAXN"}, "warnings": ["w"]}
RUNGS = [{"rung": 0, "label": "eagle3 at utilization 0.70", "step": "planned"},
         {"rung": 1, "label": "eagle3 at utilization 0.65", "step": "lower_utilization"},
         {"rung": 2, "label": "ngram at utilization 0.65", "step": "smaller_speculation"},
         {"rung": 3, "label": "speculation off (baseline)", "step": "off", "vllm_server_speculation": False}]
PARAMS = {"keep_throughput_gain": 0.3, "keep_tpot_drop": 0.2, "revert_throughput_gain": 0.1,
          "c8_regression_tolerance": 0.0, "marginal_action": "keep", "z": 2.0, "low_concurrency": 1,
          "high_concurrency": 8}


def bench(tok_s, tpot, c8=400.0, simulated=False):
    return {"runs": [{"concurrency": 1, "throughput_tok_s": tok_s, "tpot_ms_p50": tpot, "failed": 0},
                     {"concurrency": 8, "throughput_tok_s": c8, "tpot_ms_p50": 60.0, "failed": 0}],
            "simulated": simulated}


def stored(needs, status="kept", reason="config changed"):
    return {"needs_rollout": needs, "needs_rollout_reason": reason,
            "rollout_state": {"status": status, "verdict": {"decision": "keep"},
                              "benchmarks": {"baseline": bench(20, 50), "candidate": bench(30, 30)},
                              "info": {"config_after": "eagle3 at utilization 0.70", "simulated": True}}}


def test_new_record_decides_simulated_once_from_the_facts_root():
    real = rec.new_record("h", "run", JETSON, "/")
    assert real["simulated"] is False and real["status"] == "started"
    assert real["facts"] == {"family": "thor", "variant": "t5000", "model": "NVIDIA Jetson AGX Thor", "l4t": "39.2",
                             "jetpack": "7.1", "memory_total_bytes": 128 * 2 ** 30, "power_mode": "MAXN",
                             "memory_bandwidth_gbps": None, "warnings": ["w"]}
    assert rec.new_record("h", "run", JETSON, "/opt/jetson-sim/root")["simulated"] is True


def test_a_benchmark_answered_by_the_stand_in_makes_the_record_simulated():
    record = rec.new_record("h", "run", JETSON)
    assert rec.bench(record, [{"phase": "baseline", "result": bench(1, 1, simulated=True)}])["simulated"] is True
    assert rec.bench(record, [{"phase": "baseline", "result": bench(1, 1)}])["simulated"] is False
    assert record["simulated"] is False  # inputs are never changed


def test_converged_host_is_unchanged_with_the_stored_results():
    out = rec.from_stored(rec.new_record("h", "run", JETSON), stored(False, reason="converged"))
    assert out["status"] == "unchanged" and out["previous_status"] == "kept"
    assert out["config_after"] == "eagle3 at utilization 0.70" and out["simulated"] is True
    assert out["reasons"] == ["converged"] and out["candidate"] == bench(30, 30)


def test_check_mode_says_what_a_real_run_would_do():
    out = rec.from_stored(rec.new_record("h", "run", JETSON), stored(True), check_mode=True)
    assert out["status"] == "planned"
    assert out["reasons"] == ["check mode: a real run would benchmark and judge speculation (config changed)"]
    refused = rec.from_stored(rec.new_record("h", "run", JETSON), stored(True), True, "refused h:\nfamily: no")
    assert refused["reasons"][0] == "check mode: a real run would refuse speculation, run the baseline: family: no (config changed)"
    assert refused["reasons"][1] == "refused h:\nfamily: no"
    assert refused["plan"] == {"would": "refuse", "reason": "family: no", "line": "refuse speculation, run the baseline: family: no"}


LAUNCH = {"baseline": {"gpu_memory_utilization": 0.75},
          "candidate": {"gpu_memory_utilization": 0.7, "rungs": RUNGS,
                        "plan": {"speculative_config": {"method": "eagle3", "model": "nvidia/head", "num_speculative_tokens": 5}}}}
SETTINGS = {"verdict": dict(PARAMS, min_rounds=3, max_rounds=40, round_prompts=30, max_wall_s=14400.0)}


def test_check_mode_plans_the_speculation_the_ladder_and_the_round_budget():
    out = rec.from_stored(rec.new_record("h", "run", JETSON), stored(True), True, "", launch=LAUNCH, settings=SETTINGS)
    plan = out["plan"]
    assert (plan["would"], plan["method"], plan["model"], plan["k"], plan["utilization"]) == (
        "benchmark", "eagle3", "nvidia/head", 5, 0.7)
    assert plan["ladder"] == ["eagle3 at utilization 0.65", "ngram at utilization 0.65", "speculation off (baseline)"]
    assert plan["line"] == ("benchmark eagle3 nvidia/head, k=5, utilization 0.7 (baseline 0.75); if it does not start: "
                            "eagle3 at utilization 0.65 -> ngram at utilization 0.65 -> speculation off (baseline); "
                            "3 to 40 rounds of 30 prompts at concurrency 1 and 8, at most 240 min")
    assert out["reasons"][0] == "check mode: a real run would %s (config changed)" % plan["line"]
    # n-gram has no model; a single-level benchmark names one level
    ngram = {"candidate": {"gpu_memory_utilization": 0.8, "rungs": [],
                           "plan": {"speculative_config": {"method": "ngram", "num_speculative_tokens": 3}}}}
    line = rec.dry_run_plan(ngram, {"verdict": dict(SETTINGS["verdict"], high_concurrency=None)})["line"]
    assert line.startswith("benchmark ngram, k=3, utilization 0.8 (baseline None); 3 to 40 rounds") and "concurrency 1," in line


def test_a_host_that_needs_a_rollout_is_queued():
    out = rec.from_stored(rec.new_record("h", "run", JETSON), stored(True))
    assert out["status"] == "queued" and "config changed" in out["reasons"][0]


def test_under_the_lock_refusal_gives_one_reason_per_rule():
    out = rec.locked(rec.new_record("h", "run", JETSON), {"owner": "old"}, stored(True),
                     "vllm_server preflight refused h (nothing was changed):\nfamily.x: no\nmemory.y: no")
    assert out["status"] == "refused" and out["reasons"] == ["family.x: no", "memory.y: no"]
    assert out["lock_broken"] == {"owner": "old"}
    assert rec.locked(rec.new_record("h", "run", JETSON), None, stored(False), "")["status"] == "unchanged"
    assert "lock_broken" not in rec.locked(rec.new_record("h", "run", JETSON), None, stored(True), "")


def test_ladder_starts_at_the_planned_rung_and_walks_down_on_out_of_memory():
    record = rec.new_record("h", "run", JETSON)
    assert rec.ladder(record, RUNGS) == {"next": 0, "rung": RUNGS[0], "exhausted": False}
    record = rec.add_attempt(record, RUNGS[0], False, "out_of_memory", "CUDA out of memory", rungs=RUNGS)
    assert record["attempts"][-1]["next_rung"] == 1 and record["attempts"][-1]["result"] == "failed"
    assert rec.ladder(record, RUNGS)["rung"] == RUNGS[1]


def test_a_kv_cache_shortfall_runs_the_smaller_speculation_at_the_utilization_that_failed():
    rungs = [dict(r) for r in RUNGS]
    for rung, util in zip(rungs[:3], (0.70, 0.65, 0.65)):
        rung.update(gpu_memory_utilization=util, vllm_server_speculative_utilization_drop=round(0.75 - util, 2))
    kv = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
    record = rec.add_attempt(rec.new_record("h", "run", JETSON), rungs[0], False, "kv_cache_shortfall", kv, rungs=rungs)
    assert record["attempts"][-1]["next_rung"] == 2
    state = rec.ladder(record, rungs)
    assert state["rung"]["label"] == "ngram at utilization 0.70" and state["rung"]["gpu_memory_utilization"] == 0.70
    assert state["rung"]["vllm_server_speculative_utilization_drop"] == 0.05
    # it fails the same way: off (the last speculative rung), with the hand-off
    record = rec.add_attempt(record, state["rung"], False, "kv_cache_shortfall", kv, rungs=rungs)
    assert rec.ladder(record, rungs)["exhausted"]
    assert "ngram at utilization 0.70 did not fit" in record["attempts"][-1]["next"]


def test_rejected_config_ends_the_ladder_at_once():
    record = rec.add_attempt(rec.new_record("h", "run", JETSON), RUNGS[0], False, "rejected_speculative_config",
                             "error: unrecognized speculative config", rungs=RUNGS)
    state = rec.ladder(record, RUNGS)
    assert state["exhausted"] and state["rung"] is None
    verdict = rec.ladder_exhausted_verdict(record)
    assert verdict["action"] == "revert" and verdict["flagged"]
    assert "Rung 0 (eagle3 at utilization 0.70) failed: rejected_speculative_config." in verdict["reasons"]
    assert verdict["reasons"][-1] == record["attempts"][-1]["next"]


def noisy(rng, tok_s, tpot, c8=400.0, n=30, cv=0.05):
    """A benchmark with per-request data (what spec_decide weighs), around the given medians."""
    runs = []
    for conc, tput, tp in ((1, tok_s, tpot), (8, c8, 60.0)):
        e2e = 128 * 1000.0 / tput * conc
        reqs = [{"ok": True, "ttft_ms": 50.0, "tpot_ms": tp * rng.lognormvariate(0, cv),
                 "e2e_ms": e2e * rng.lognormvariate(0, cv), "output_tokens": 128,
                 "start_s": i * e2e / 1000.0 / conc, "end_s": (i + 1) * e2e / 1000.0 / conc} for i in range(n)]
        runs.append({"concurrency": conc, "completed": n, "failed": 0, "output_tokens": 128 * n,
                     "duration_s": n * e2e / 1000.0 / conc, "throughput_tok_s": tput, "tpot_ms_p50": tp,
                     "errors": {}, "requests": reqs})
    return {"runs": runs, "simulated": False}


def drive(record, truth, broke=None, seed=3, **params):
    """The evaluation's loop (record/evaluation.py): measure the arm the verdict asks for, until it stops."""
    import random
    rng = random.Random(seed)
    rounds = [{"phase": "baseline", "result": noisy(rng, 20, 50)}]  # evaluate.yml measures the baseline first
    while True:
        out = rec.run_verdict(record, rounds, RUNGS, broke, dict(PARAMS, **params))
        if out["decision"] != "continue":
            return out, rounds
        arm = out["next_round"]["arm"]
        rounds.append({"phase": arm, "result": noisy(rng, *(truth if arm == "candidate" else (20, 50)))})


def test_run_verdict_measures_until_the_evidence_settles():
    record = rec.new_record("h", "run", JETSON)
    out, rounds = drive(record, (30, 30, 440))  # +50 % throughput, TPOT -40 %, c8 +10 %: keep
    assert (out["decision"], out["action"]) == ("keep", "keep")
    # baseline, candidate, candidate: one arm measured twice before any decision (min_rounds 3), and a keep
    # waits for the baseline's second round (verdict.one_baseline_round)
    assert [r["phase"] for r in rounds] == ["baseline", "candidate", "candidate", "baseline"]
    assert out["metrics"]["ttft_change"] == 0.0  # the TTFT guard ran (same first-token time in both arms)
    out, rounds = drive(record, (19, 52))  # slower: revert
    assert out["action"] == "revert" and out["decision"] == "revert"
    # right at the revert threshold (+10 %) the evidence never settles; the round budget ends it, reverted and flagged
    out, rounds = drive(record, (22, 40, 440), max_rounds=6)
    assert (out["decision"], out["action"], out["flagged"]) == ("inconclusive", "revert", True)
    assert len(rounds) == 6 and "round budget" in out["reasons"][-1]


def test_repeats_off_decides_on_one_round_each():
    record = rec.new_record("h", "run", JETSON)
    out, rounds = drive(record, (22, 40, 440), min_rounds=2, max_rounds=2)
    assert len(rounds) == 2 and out["decision"] == "inconclusive" and out["action"] == "revert"
    out, rounds = drive(record, (30, 30, 520), min_rounds=2, max_rounds=2)
    assert len(rounds) == 2 and out["action"] == "keep"


def test_a_broken_candidate_or_an_exhausted_ladder_is_reverted_whatever_the_numbers():
    record = rec.new_record("h", "run", JETSON)
    rounds = [{"phase": "baseline", "result": bench(20, 50)}, {"phase": "candidate", "result": bench(30, 30)}]
    broke = rec.run_verdict(record, rounds, RUNGS, "stalled", PARAMS)
    assert broke["action"] == "revert" and broke["flagged"] and "stalled" in broke["reasons"][0]


def test_judged_record_keeps_a_line_per_round_and_no_request_lists():
    import random
    rng = random.Random(1)
    rounds = [{"phase": "baseline", "result": noisy(rng, 20, 50)}, {"phase": "candidate", "result": noisy(rng, 30, 30, 440)},
              {"phase": "candidate", "result": noisy(rng, 30, 30, 440)}, {"phase": "baseline", "result": noisy(rng, 20, 50)}]
    verdict = rec.run_verdict(rec.new_record("h", "run", JETSON), rounds, RUNGS, None, PARAMS)
    out = rec.judged(rec.new_record("h", "run", JETSON), verdict, rounds, RUNGS[0], stored(True))
    assert [r["arm"] for r in out["rounds"]] == ["baseline", "candidate", "candidate", "baseline"]
    assert out["rounds"][1]["levels"][0]["concurrency"] == 1 and out["rounds"][1]["levels"][0]["throughput_tok_s"] == 30
    assert all("requests" not in run for arm in ("baseline", "candidate") for run in out[arm]["runs"])
    assert "requests" in rounds[0]["result"]["runs"][0]  # the inputs are never changed


def test_judged_record_keeps_the_last_benchmark_of_each_arm_and_the_started_rung():
    rounds = [{"phase": "baseline", "result": bench(20, 50)}, {"phase": "candidate", "result": bench(30, 30)},
              {"phase": "candidate", "result": bench(31, 29, simulated=True)}, {"phase": "baseline", "result": bench(21, 49)}]
    verdict = {"decision": "keep", "action": "keep", "reasons": ["faster"]}
    out = rec.judged(rec.new_record("h", "run", JETSON), verdict, rounds, RUNGS[1], stored(True, status="pending"))
    assert out["status"] == "kept" and out["config_after"] == RUNGS[1]["label"]
    assert out["baseline"] == bench(21, 49) and out["candidate"]["runs"][0]["throughput_tok_s"] == 31
    assert out["simulated"] is True and out["resumed_pending"] is True
    assert out["config_before"] == "eagle3 at utilization 0.70"
    assert out["attempts"][-1]["result"] == "started" and out["reasons"] == ["faster"]
    assert [r["arm"] for r in out["rounds"]] == ["baseline", "candidate", "candidate", "baseline"]
    reverted = rec.judged(rec.new_record("h", "run", JETSON), {"decision": "revert", "action": "revert"}, rounds,
                          None, stored(True))
    assert reverted["status"] == "reverted" and reverted["config_after"] == "baseline" and reverted["attempts"] == []
    assert len(rec.judged({}, {"decision": "keep", "action": "keep"}, rounds[:2], None, stored(True))["rounds"]) == 2
    with pytest.raises(rec.RecordError, match="keep or revert"):
        rec.judged({}, {"decision": "continue", "action": "measure_more"}, rounds, None, stored(True))


def test_failure_without_an_answer_is_unreachable_and_with_facts_is_failed():
    gone = rec.failed(None, "Failed to connect to the host via docker", "Read the board's facts", host="h", run_id="r")
    assert gone["status"] == "unreachable" and gone["host"] == "h" and gone["failed_task"] == "Read the board's facts"
    assert rec.failed(None, "boom", host="h", run_id="r", unreachable=True)["status"] == "unreachable"
    assert rec.failed(None, "boom", host="h", run_id="r")["status"] == "failed"
    with_facts = rec.failed(None, "unreachable? no: a bad setting", host="h", run_id="r", jetson=JETSON)
    assert with_facts["status"] == "failed" and with_facts["facts"]["family"] == "thor"


def test_failure_after_the_host_changed_records_what_ran_and_the_restore():
    record = rec.failed(rec.new_record("h", "run", JETSON), "bench died", "Benchmark", stored=stored(True))
    assert record["status"] == "failed" and record["config_after"] == "baseline"
    assert record["config_before"] == "eagle3 at utilization 0.70"
    lost = rec.restore_failed(record, "unit failed")
    assert lost["config_after"] == "unknown" and lost["error"] == "bench died Restoring the baseline failed too: unit failed"


def test_finish_adds_the_wall_time():
    assert rec.finish({"host": "h"}, "100.0", 112.34)["timings"] == {"seconds": 12.3}


def test_missing_hosts_get_a_no_record_entry_whatever_their_name():
    records = rec.with_missing([{"host": "a", "status": "kept"}], ["a", "b'quote\"d", "c"])
    assert [r["host"] for r in records] == ["a", "b'quote\"d", "c"]
    assert records[1] == {"host": "b'quote\"d", "status": "unreachable", "error": rec.NO_RECORD_ERROR}


def test_filter_dispatches_events_and_names_an_unknown_one():
    filters = FilterModule().filters()
    record = filters["rollout_record"]({}, "new", "h", "r", JETSON, "/")
    assert filters["rollout_record"](record, "refused", "x:\nrule: no")["reasons"] == ["rule: no"]
    with pytest.raises(AnsibleFilterError, match="unknown event 'nope'"):
        filters["rollout_record"](record, "nope")
    assert filters["rollout_bench_result"]({"runs": [], "changed": False, "invocation": {}}) == {"runs": []}
    rounds = [{"phase": "baseline", "result": {"n": 1}}, {"phase": "baseline", "result": {"n": 2}}]
    assert filters["rollout_rounds"](rounds, "baseline") == {"n": 2, "runs": []}
    assert filters["rollout_rounds"](rounds, "baseline", "all") == [{"n": 1, "runs": []}, {"n": 2, "runs": []}]
    with pytest.raises(AnsibleFilterError, match="drift_prior"):
        filters["rollout_verdict"](record, [], RUNGS, None, dict(PARAMS, drift_prior=-1))


def test_state_outcome_of_a_kept_a_reverted_and_a_refused_host():
    rounds = [{"phase": "baseline", "result": bench(20, 50)}, {"phase": "candidate", "result": bench(30, 30)}]
    rung = dict(RUNGS[0], vllm_server_speculative_method="eagle3")
    kept = rec.judged(rec.new_record("h", "run", JETSON), {"decision": "keep", "action": "keep"}, rounds, rung,
                      stored(True))
    out = rec.state_outcome(kept, ["vllm", "serve", "--spec"], ["vllm", "serve"], rung, "thor", "m", "run")
    assert out["status"] == "kept" and out["last_good"] == {"kind": "candidate", "argv": ["vllm", "serve", "--spec"],
                                                            "rung": rung["label"]}
    assert out["info"] == {"family": "thor", "model": "m", "method": "eagle3", "run_id": "run", "simulated": False,
                           "config_after": rung["label"], "k_tuning": None}
    assert out["benchmarks"]["baseline"] == bench(20, 50) and out["benchmarks"]["candidate"] == bench(30, 30)
    assert [r["arm"] for r in out["benchmarks"]["rounds"]] == [r["phase"] for r in rounds]
    assert out["attempts"][-1]["result"] == "started"
    reverted = rec.judged(rec.new_record("h", "run", JETSON), {"decision": "revert", "action": "revert"}, rounds, rung,
                          stored(True))
    back = rec.state_outcome(reverted, ["vllm", "serve"], ["vllm", "serve"], rung, "thor", "m", "run")
    assert back["last_good"] == {"kind": "baseline", "argv": ["vllm", "serve"]} and back["info"]["method"] is None
    refused = rec.refused(rec.new_record("h", "run", JETSON), "x:\nfamily.no: no")
    assert refused["config_after"] == "baseline"  # speculation off by policy: the rollout runs the baseline
    assert rec.state_outcome(refused, ["vllm", "serve", "m"], ["vllm", "serve"], None, "orin-nano", "m", "run") == {
        "status": "refused", "verdict": {"decision": "refused", "reasons": ["family.no: no"]},
        "last_good": {"kind": "baseline", "argv": ["vllm", "serve"]},
        "info": {"family": "orin-nano", "model": "m", "run_id": "run", "simulated": False, "config_after": "baseline"}}
    with pytest.raises(rec.RecordError, match="queued"):
        rec.state_outcome({"status": "queued"}, [], [], None, "thor", "m", "run")


def test_k_tuning_is_recorded_with_its_prediction_or_why_it_failed():
    from ansible_collections.jetson.specdec.plugins.module_utils.record.why import k_tuning
    choice = {"k": 4, "predicted_speedup": {"1": 1.2, "2": 1.4, "4": 1.6, "8": 1.5}, "measured_speedup": 1.45,
              "reasons": ["k=4 has the highest predicted speedup, 1.600x"], "unrelated": 1}
    out = rec.k_tuned(rec.new_record("h", "run", JETSON), choice, 8)
    assert out["k_tuning"]["k"] == 4 and out["k_tuning"]["probe_k"] == 8 and "unrelated" not in out["k_tuning"]
    text = k_tuning(out)
    assert text.startswith("probe at k=8 (measured 1.45x) -> k=4 chosen")
    assert text.index("k=2 1.40x") < text.index("k=8 1.50x")  # in k order, not string order
    assert "; measured" not in text  # no measured rounds recorded: nothing claimed
    confirmed = dict(choice, k=5, predicted_k=4, start_k=5, measured_k=[5, 8, 4],
                     measured_by_k={"4": 1.55, "5": 1.62, "8": 1.5}, acceptance_at_start=0.64)
    out2 = rec.k_tuned(rec.new_record("h", "run", JETSON), confirmed, 8)
    assert out2["k_tuning"]["measured_k"] == [5, 8, 4] and out2["k_tuning"]["acceptance_at_start"] == 0.64
    assert k_tuning(out2).endswith("; measured k=4 1.55x, k=5 1.62x, k=8 1.50x (predicted k=4; the best measured "
                                   "k is kept)")
    failed = rec.k_tuned({}, {"k": 0, "failed": "CUDA out of memory"}, 8)
    assert failed["k_tuning"] == {"probe_k": 8, "k": None, "failed": "CUDA out of memory"}
    assert "failed, so the board's k was judged: CUDA out of memory" in k_tuning(failed)
    kept = rec.judged(out, {"decision": "keep", "action": "keep"}, [], RUNGS[0], stored(True))
    outcome = rec.state_outcome(kept, ["vllm"], ["vllm"], RUNGS[0], "thor", "m", "run")
    assert outcome["info"]["k_tuning"]["k"] == 4
    # the role hands the choice to the judged record (no record step of its own)
    judged = rec.judged(rec.new_record("h", "run", JETSON), {"decision": "keep", "action": "keep"}, [], RUNGS[0],
                        stored(True), k_choice=choice, probe_k=8)
    assert judged["k_tuning"] == out["k_tuning"]
    assert "k_tuning" not in rec.judged(rec.new_record("h", "run", JETSON), {"decision": "keep", "action": "keep"}, [],
                                        RUNGS[0], stored(True))


def test_the_plans_warnings_reach_the_record_once():
    launch = {"baseline": {"warnings": ["w-base"]},
              "candidate": {"warnings": ["num_speculative_tokens 9 is above the agx_orin start 3", "w-base"]}}
    record = dict(rec.new_record("h", "run", JETSON), warnings=["w-base"])
    out = rec.from_stored(record, stored(True), launch=launch)
    assert out["warnings"] == ["w-base", "num_speculative_tokens 9 is above the agx_orin start 3"]
    assert "warnings" not in rec.from_stored(rec.new_record("h", "run", JETSON), stored(True), launch={"candidate": {}})


def test_the_plans_headroom_gives_the_roofline_inputs():
    launch = dict(LAUNCH, candidate=dict(LAUNCH["candidate"], headroom={"fits": True, "breakdown": {
        "target_weight_bytes": 16 * 10 ** 9, "speculative_weight_bytes": 10 ** 9, "kv_bytes_per_token": 131072}}))
    out = rec.from_stored(rec.new_record("h", "run", JETSON), stored(True), launch=launch)
    assert out["roofline_inputs"] == {"target_weight_bytes": 16 * 10 ** 9, "draft_weight_bytes": 10 ** 9,
                                      "kv_bytes_per_token": 131072, "k": 5}
    assert "roofline_inputs" not in rec.from_stored(rec.new_record("h", "run", JETSON), stored(True), launch=LAUNCH)


def test_a_held_board_plans_the_hold_and_its_power_mode_warning_says_so():
    facts = dict(JETSON, warnings=["The power mode is 120W (id 1), not MAXN, so benchmarks are not comparable "
                                   "with MAXN runs; select the MAXN mode with nvpmodel before benchmarking.", "other"])
    held = dict(SETTINGS, hold_clocks=True)
    out = rec.from_stored(rec.new_record("h", "run", facts), stored(True), True, "", launch=LAUNCH, settings=held)
    assert out["plan"]["line"].endswith("at most 240 min; at MAXN with jetson_clocks held, then put back as it was")
    assert out["facts"]["warnings"] == [
        "The power mode is 120W (id 1), not MAXN, so benchmarks are not comparable with MAXN runs (rollout_bench_hold_"
        "clocks holds MAXN and jetson_clocks while benchmarking and puts this mode back afterwards.)", "other"]
    plain = rec.from_stored(rec.new_record("h", "run", facts), stored(True), True, "", launch=LAUNCH, settings=SETTINGS)
    assert plain["facts"]["warnings"] == facts["warnings"] and "jetson_clocks" not in plain["plan"]["line"]


def test_judged_record_keeps_what_the_prefetch_did_and_the_report_says_it():
    from ansible_collections.jetson.specdec.plugins.module_utils.record.why import explain
    rounds = [{"phase": "baseline", "result": bench(20, 50)}, {"phase": "candidate", "result": bench(30, 30)}]
    result = {"changed": True, "models": [
        {"model": "acme/head", "status": "fetched", "seconds": 41.23, "path": "/x", "definite": False},
        {"model": "acme/draft", "status": "failed", "seconds": 2.0, "cause": "unreachable",
         "line": "Error: Local entry not found. [Errno 111] Connection refused", "fix": "make the Hub reachable"}]}
    out = rec.judged(rec.new_record("h", "run", JETSON), {"decision": "keep", "action": "keep"}, rounds, RUNGS[0],
                     stored(True), prefetch=result)
    assert out["prefetch"][0] == {"model": "acme/head", "status": "fetched", "seconds": 41.23}
    assert out["prefetch"][1]["cause"] == "unreachable" and "path" not in out["prefetch"][1]
    text = explain(out)["prefetch"]
    assert "fetched acme/head in 41.2 s while the baseline served" in text
    assert "acme/draft not fetched (unreachable)" in text
    # a fetch under a second (a cache, the stand-in's Hub) says no time: no "fetched ... in 0.0 s" in a report
    quick = rec.judged(rec.new_record("h", "run", JETSON), {"decision": "keep", "action": "keep"}, rounds, RUNGS[0],
                       stored(True), prefetch={"changed": True, "models": [
                           {"model": "acme/head", "status": "fetched", "seconds": 0.04, "path": "/x"}]})
    assert explain(quick)["prefetch"] == "fetched acme/head while the baseline served"
    # a skipped prefetch (nothing to fetch, or rollout_prefetch: false) leaves no entry
    skipped = rec.judged(rec.new_record("h", "run", JETSON), {"decision": "keep", "action": "keep"}, rounds, RUNGS[0],
                         stored(True), prefetch={"skipped": True, "changed": False})
    assert "prefetch" not in skipped and explain(skipped)["prefetch"] is None


def test_each_round_says_whether_the_server_it_measured_was_speculating():
    rounds = [{"phase": "baseline", "result": bench(20, 50)},
              {"phase": "candidate", "result": dict(bench(30, 30), spec_decode={"acceptance_rate": 0.7, "drafts": 10})},
              # a candidate round that measured a server without speculation (a switch that did not happen)
              {"phase": "candidate", "result": dict(bench(20, 50), spec_decode=None)}]
    assert [(r["arm"], r["speculating"]) for r in rec.round_summary(rounds)] == [
        ("baseline", False), ("candidate", True), ("candidate", False)]


def test_each_round_says_which_prompt_set_it_drew_when_the_benchmark_said():
    rounds = [{"phase": "baseline", "result": dict(bench(20, 50), config={"seed": 0, "prompt_set": 0})},
              {"phase": "candidate", "result": dict(bench(30, 30), config={"seed": 0, "prompt_set": 1})},
              {"phase": "candidate", "result": bench(30, 30)},  # an older vllm_bench: no prompt_set
              {"phase": "candidate", "result": dict(bench(30, 30), config={"prompt_set": True})}]  # not a number
    assert [r.get("prompt_set") for r in rec.round_summary(rounds)] == [0, 1, None, None]


@pytest.mark.parametrize("text,rate", [
    ('{"verdict": {"decision": "keep", "metrics": {"acceptance_rate": 0.72}}}', 0.72),
    ('{"verdict": {"metrics": {"acceptance_rate": 1}}}', 1.0),
    ('{"verdict": {"metrics": {"acceptance_rate": null}}}', None),
    ('{"verdict": {"metrics": {"acceptance_rate": true}}}', None),
    ('{"verdict": {"metrics": {"acceptance_rate": 1.7}}}', None),
    ('{"verdict": {"decision": "refused", "reasons": []}}', None),
    ('{"verdict": null}', None), ('[]', None), ('{"verdict": {"metr', None), ("", None), (None, None),
])
def test_the_stored_acceptance_is_the_last_verdicts_or_none(text, rate):
    assert rec.stored_acceptance(text) == rate


def test_the_stored_acceptance_filter_reads_slurps_base64():
    import base64
    stored = FilterModule().filters()["rollout_stored_acceptance"]
    content = base64.b64encode(b'{"verdict": {"metrics": {"acceptance_rate": 0.66}}}').decode()
    assert stored(content) == 0.66
    assert stored(None) is None and stored("") is None and stored("!!not base64!!") is None


POLICY = ("policy.speculation_off: speculation is off by policy (group_vars): vllm_server_speculation is false for h "
          "(board family thor; set in group_vars/thor.yml, the host's host_vars or -e), so the baseline runs.")


@pytest.mark.parametrize("refusal", ["", "vllm_server preflight refused h (nothing was changed):\nfamily.x: no"])
def test_a_host_the_inventory_turns_off_is_off_by_policy_not_refused(refusal):
    # the operator's choice comes first, whether or not the rules would also refuse speculation
    out = rec.locked(rec.new_record("h", "run", JETSON), None, stored(True), refusal, policy_off=POLICY)
    assert out["status"] == "off" and out["config_after"] == "baseline"
    assert out["reasons"] == [POLICY] and "vllm_server_speculation" in out["reasons"][0]
    # converged under the lock: unchanged, whatever the policy
    assert rec.locked(rec.new_record("h", "run", JETSON), None, stored(False), refusal, policy_off=POLICY)["status"] == "unchanged"
    outcome = rec.state_outcome(out, ["vllm", "serve", "--spec"], ["vllm", "serve"], None, "thor", "m", "run")
    assert outcome["status"] == "off" and outcome["verdict"] == {"decision": "off", "reasons": [POLICY]}
    assert outcome["last_good"] == {"kind": "baseline", "argv": ["vllm", "serve"]}
    assert outcome["info"]["config_after"] == "baseline"


def test_check_mode_plans_the_baseline_of_a_host_set_off_before_any_refusal():
    for refusal in ("", "refused h:\nfamily: no"):
        out = rec.from_stored(rec.new_record("h", "run", JETSON), stored(True), True, refusal, launch=LAUNCH,
                              settings=SETTINGS, policy_off=POLICY)
        assert out["status"] == "planned" and out["plan"]["would"] == "off", out
        assert "off by policy" in out["plan"]["line"] and out["reasons"][1] == POLICY
    # not in check mode: queued like any host that needs a rollout (main.yml applies the baseline)
    assert rec.from_stored(rec.new_record("h", "run", JETSON), stored(True), policy_off=POLICY)["status"] == "queued"


def test_the_off_event_of_the_filter():
    filters = FilterModule().filters()
    out = filters["rollout_record"]({"host": "h"}, "off", POLICY)
    assert out["status"] == "off" and out["reasons"] == [POLICY]


DRIFT = {"findings": ["the unit runs X, not the last good config (baseline): Y"], "action": "reapply",
         "rule": "drift.running_config", "message": "drift.running_config: h drifted from its last good config: ..."}


def test_a_converged_host_that_drifted_is_queued_never_unchanged_and_says_why():
    out = rec.from_stored(rec.new_record("h", "run", JETSON), stored(False, "reverted", reason="converged"), drift=DRIFT)
    assert out["status"] == "queued"
    assert DRIFT["message"] in out["reasons"][0] and DRIFT["message"] in out["warnings"]
    assert out["drift"] == {"findings": DRIFT["findings"], "action": "reapply", "rule": "drift.running_config"}
    # no drift (action None): unchanged as before
    same = rec.from_stored(rec.new_record("h", "run", JETSON), stored(False, reason="converged"),
                           drift={"findings": [], "action": None, "message": ""})
    assert same["status"] == "unchanged" and "drift" not in same


def test_check_mode_says_a_drifted_baseline_host_would_get_its_config_back_without_a_benchmark():
    out = rec.from_stored(rec.new_record("h", "run", JETSON), stored(False, "reverted", reason="converged"), True,
                          drift=DRIFT)
    assert out["status"] == "planned"
    assert out["plan"]["line"].startswith("put back the last good config"), out["plan"]


def test_under_the_lock_a_drifted_host_stays_queued_and_is_then_recorded_as_corrected():
    record = rec.from_stored(rec.new_record("h", "run", JETSON), stored(False, "reverted", reason="converged"), drift=DRIFT)
    locked = rec.locked(record, None, stored(False, "reverted", reason="converged"), drift=DRIFT)
    assert locked["status"] == "queued"
    # without drift, a host converged meanwhile is unchanged
    assert rec.locked(record, None, stored(False, "reverted", reason="converged"))["status"] == "unchanged"
    done = rec.drift_corrected(locked, stored(False, "reverted"), DRIFT)
    assert done["status"] == "reverted" and done["drift"]["corrected"] is True
    assert done["reasons"][0] == "Drift corrected: " + DRIFT["message"]
    assert done["warnings"].count(DRIFT["message"]) == 1


def test_a_rounds_board_time_is_its_benchmark_plus_the_switch_before_it():
    """decide_rounds: wall_s = the benchmark's own wall time + the measured gap of the switch that changed the arm;
    no wall_s (spec_decide estimates) when either is unknown; the first round and a same-arm round add no switch."""
    gap = {"serving_gap_s": 95.5, "stopped_at_monotonic": 10.0}
    rounds = [{"phase": "baseline", "result": {"wall_s": 40.0}, "serving": {}},
              {"phase": "candidate", "result": {"wall_s": 42.0}, "serving": gap},
              {"phase": "candidate", "result": {"wall_s": 41.0}, "serving": gap},
              {"phase": "baseline", "result": {"wall_s": 39.0}, "serving": {"serving_gap_s": None}},
              {"phase": "candidate", "result": {}, "serving": gap},
              {"phase": "baseline", "result": {"wall_s": 40.0}}]
    out = rec.decide_rounds(rounds)
    assert [r.get("wall_s") for r in out] == [40.0, 137.5, 41.0, None, None, None]
    assert [r.get("switch_s") for r in out] == [None, 95.5, None, None, 95.5, None]
    assert [r["arm"] for r in out] == ["baseline", "candidate", "candidate", "baseline", "candidate", "baseline"]


@pytest.mark.parametrize("bad", [True, float("nan"), -1.0, "12"])
def test_a_board_time_that_is_not_a_duration_is_left_to_the_estimate(bad):
    rounds = [{"phase": "baseline", "result": {"wall_s": bad}},
              {"phase": "candidate", "result": {"wall_s": 10.0}, "serving": {"serving_gap_s": bad}}]
    out = rec.decide_rounds(rounds)
    assert "wall_s" not in out[0] and "wall_s" not in out[1] and "switch_s" not in out[1]


def test_the_schedules_rounds_keep_their_switch_and_the_baselines_board_time_extends_the_budget():
    rounds = [{"phase": "baseline", "result": {"wall_s": 50.0, "runs": [{"duration_s": 20.0, "completed": 30}]}},
              {"phase": "candidate", "result": {"wall_s": 50.0}},
              {"phase": "schedule", "result": {"wall_s": 45.0}, "serving": {"serving_gap_s": 80.0}}]
    kept, params = rec.schedule_rounds(rounds, {"max_wall_s": 1000.0, "max_rounds": 10, "max_requests": 100})
    assert params["max_wall_s"] == 1050.0
    assert kept[1]["serving"] == {"serving_gap_s": 80.0}
    assert rec.decide_rounds(kept)[1]["wall_s"] == 125.0
