"""The report says why: every host's reasons, ladder path, what it runs now and a next step (recorded demo records)."""
import glob
import json
import os

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record.record import normalize
from ansible_collections.jetson.specdec.plugins.module_utils.record.report import build_report, render_markdown
from ansible_collections.jetson.specdec.plugins.module_utils.record.why import explain, ladder_path
from ansible_collections.jetson.specdec.plugins.plugin_utils.report_page import render_html

RECORDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "records", "demo-run")


@pytest.fixture(scope="module")
def records():
    out = {}
    for path in glob.glob(os.path.join(RECORDS, "*.json")):
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        out[record["host"]] = record
    return out


def test_reverted_host_names_the_rule_that_reverted_it(records):
    why = explain(normalize(records["agx-02"]))
    assert why["decision"] == "revert"
    text = " ".join(why["why"])
    assert "concurrency 8" in text and "%" in text  # the c=8 regression, with its numbers
    assert why["runs_now"] == "baseline"
    assert why["next_step"]


def test_ladder_host_shows_every_rung_and_its_cause(records):
    why = explain(normalize(records["agx32-01"]))
    assert why["ladder"].count("out_of_memory") == 3
    assert why["ladder"].index("utilization 0.75") < why["ladder"].index("utilization 0.70")
    assert "ran out of memory" in why["next_step"]
    assert why["runs_now"] == "baseline"


def test_refused_host_gives_the_rule_first_and_keeps_running_what_it_ran(records):
    why = explain(normalize(records["nx-01"]))
    assert why["why"][0].startswith("runtime.")
    assert why["runs_now"] == "unchanged"  # a record written before refused hosts got the baseline
    assert "off by policy" in why["next_step"]
    # today the rollout runs the baseline on a refused host, and the record says so
    from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec
    now = rec.refused(rec.new_record("nx-02", "run", {"family": "orin_nx"}), "nx-02:\nfamily.orin_nx: no speculation")
    assert explain(normalize(now))["runs_now"] == "baseline"


def test_failed_host_leads_with_its_error(records):
    why = explain(normalize(records["fl-stale"]))
    assert "lock" in why["why"][0].lower()
    assert "re-run" in why["next_step"]


def test_kept_host_shows_the_rung_it_runs(records):
    why = explain(normalize(records["thor-01"]))
    assert why["ladder"] == "eagle3 at utilization 0.75 (started)"
    assert why["runs_now"] == "eagle3 at utilization 0.75"
    assert any("30%" in reason for reason in why["why"])


def test_every_host_has_a_why_block_in_both_renderings(records):
    report = build_report(list(records.values()), "run-1", "2026-11-30T00:00:00Z", expected_hosts=["orin-09"])
    markdown, page = render_markdown(report), render_html(report)
    for host in records:
        assert "### %s" % host in markdown
        assert 'id="why-%s"' % host in page
    assert markdown.count("**Next step**") == len(records)
    assert markdown.count("**Runs now**") == len(records)


def test_garbage_attempts_and_reasons_do_not_break_the_explanation():
    assert ladder_path(["not a dict", {"label": "ngram", "cause": None}]) == "ngram (started)"
    why = explain({"status": "reverted", "verdict": {"decision": "inconclusive", "reasons": "one string"},
                   "facts": {"warnings": ["power mode is not MAXN"] * 2}})
    assert why["why"] == ["one string"]
    assert why["warnings"] == ["power mode is not MAXN"]
    assert "with the clocks held and rollout_force=true" in why["next_step"]  # a plain re-run leaves it alone
    assert "rollout_bench_hold_clocks=true" in why["next_step"]
    assert explain(None)["runs_now"] == "unknown"


def test_a_sequential_verdict_leads_with_its_conclusion_and_shows_its_intervals_and_rounds():
    from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import spec_decide

    def result(tput, tpot):
        runs = []
        for conc, scale in ((1, 1.0), (8, 5.0)):
            reqs = [{"ok": True, "ttft_ms": 50.0, "tpot_ms": tpot * (1 + 0.01 * (i % 5)), "e2e_ms": 128000.0 / tput,
                     "output_tokens": 128, "start_s": i * 128.0 / tput, "end_s": (i + 1) * 128.0 / tput}
                    for i in range(30)]
            runs.append({"concurrency": conc, "completed": 30, "failed": 0, "output_tokens": 3840,
                         "duration_s": 30 * 128.0 / tput / scale, "throughput_tok_s": tput * scale, "tpot_ms_p50": tpot,
                         "requests": reqs})
        return {"runs": runs}

    rounds = [{"arm": "baseline", "result": result(20.0, 50.0)}, {"arm": "candidate", "result": result(30.0, 30.0)},
              {"arm": "candidate", "result": result(30.5, 29.5)}, {"arm": "baseline", "result": result(20.2, 49.6)}]
    verdict = spec_decide(rounds)
    assert verdict["action"] == "keep"
    record = {"host": "h", "status": "kept", "verdict": verdict, "config_after": "eagle3",
              "rounds": [{"arm": r["arm"]} for r in rounds]}
    why = explain(normalize(record))
    assert why["why"][0].startswith("Keep:")  # the conclusion first, then the numbers behind it
    assert why["evidence"].startswith("throughput c=1 +5") and "(+" in why["evidence"]
    assert "TPOT p50 drop c=1" in why["evidence"] and "throughput c=8" in why["evidence"]
    assert "4 rounds (B C C B)" in why["evidence"]
    assert why["evidence"].endswith("%.1f min of board time" % (verdict["wall_s_used"] / 60)), why["evidence"]
    report = build_report([record], "run", "2026-12-01T00:00:00Z")
    assert "**Evidence**" in render_markdown(report) and "<strong>Evidence</strong>" in render_html(report)
    assert explain(normalize({"host": "old", "status": "kept", "verdict": {"decision": "keep"}}))["evidence"] is None

    # a round measured under other board conditions is marked in the evidence line
    record["verdict"] = dict(verdict, set_aside=[{"round": 2, "arm": "candidate", "reasons": ["the GPU was throttled"]}])
    assert "4 rounds (B C* C B; * set aside)" in explain(normalize(record))["evidence"]


def test_the_workload_is_named_with_its_hash_and_acceptance_per_category():
    wl = {"name": "prompts.jsonl", "format": "spec_bench", "count": 3, "sha256": "ab" * 32,
          "acceptance_by_category": {"math": {"acceptance_rate": 0.612}, "writing": None}}
    why = explain(normalize({"host": "h", "status": "kept", "candidate": {"runs": [], "workload": wl}}))
    assert why["workload"] == ("prompts.jsonl (spec_bench, 3 prompts, sha256 abababababab; acceptance by category: "
                               "math 0.61, writing n/a)")
    synthetic = {"runs": [], "workload": {"name": "synthetic", "format": "token_ids"}}
    assert explain(normalize({"host": "h", "status": "reverted", "baseline": synthetic}))["workload"] == "synthetic (token_ids)"
    assert explain(normalize({"host": "h", "status": "refused"}))["workload"] is None


def _roofline_record(tpot_base, tpot_cand, simulated=None):
    def result(tpot, length=None):
        return {"runs": [{"concurrency": 1, "tpot_ms_p50": tpot, "throughput_tok_s": 1000.0 / tpot}],
                "config": {"input_len": 512, "output_len": 64}, "simulated": simulated,
                "spec_decode": {"mean_acceptance_length": length} if length else None}
    return {"host": "agx-01", "status": "kept", "facts": {"family": "agx_orin", "memory_bandwidth_gbps": 204.8},
            "roofline_inputs": {"target_weight_bytes": 16 * 10 ** 9, "draft_weight_bytes": 10 ** 9,
                                "kv_bytes_per_token": 131072, "k": 3},
            "baseline": result(tpot_base), "candidate": result(tpot_cand, 2.5)}


def test_the_roofline_says_how_far_each_arm_is_from_the_bandwidth_limit():
    # 16 GB of weights + 544 tokens of KV per step at 204.8 GB/s: 12.74 tok/s; 10 tok/s is 78 %.
    # The candidate reads 3 more GB per step and emits 2.5 tokens: 26.8 tok/s; 20 tok/s is 74 %.
    text = explain(normalize(_roofline_record(100.0, 50.0)))["roofline"]
    assert text == ("at c=1 the baseline decodes at 78% of the memory-bandwidth limit (12.7 tok/s: 204.8 GB/s over "
                    "16.07 GB per step), the candidate at 74% (26.8 tok/s with 2.50 tokens per step)"), text
    # the stand-in at time_scale 0.1 runs 10x faster than board time: converted back, the same fractions
    simulated = _roofline_record(10.0, 5.0, simulated="agx_orin_64gb; time_scale=0.1")
    assert explain(normalize(simulated))["roofline"] == text
    md = render_markdown(build_report([_roofline_record(100.0, 50.0)], "r", "t"))
    assert "**Roofline**: at c=1 the baseline decodes at 78%" in md
    no_inputs = dict(_roofline_record(100.0, 50.0), roofline_inputs=None)
    assert explain(normalize(no_inputs))["roofline"] is None


def test_the_serving_gaps_of_a_run_are_counted_once_per_restart_and_explained():
    from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec
    waits = [{"serving_gap_s": 12.04, "stopped_at_monotonic": 100.0}, {"serving_gap_s": None, "stopped_at_monotonic": None},
             {"serving_gap_s": 41.3, "stopped_at_monotonic": 180.5, "models": ["m"]},
             {"serving_gap_s": 41.3, "stopped_at_monotonic": 180.5},  # the final health check after the same restart
             {"serving_gap_s": True, "stopped_at_monotonic": 1.0}, {"skipped": True}, "junk"]
    assert rec.serving_gaps(waits) == [12.0, 41.3]
    assert explain(normalize({"status": "kept", "serving_gaps": [12.0, 41.3]}))["serving_gap"] == \
        "longest 41.3 s over 2 restarts that came up (12.0, 41.3 s)"
    assert explain(normalize({"status": "kept", "serving_gaps": [9.5]}))["serving_gap"] == "9.5 s at its one restart that came up"
    assert explain(normalize({"status": "refused"}))["serving_gap"] is None
    ladder = {"status": "reverted", "serving_gaps": [24.1], "attempts": [{"result": "failed"}, {"result": "failed"}]}
    assert explain(normalize(ladder))["serving_gap"] == \
        "24.1 s at its one restart that came up; 2 failed starts before that made the outage longer"
    from ansible_collections.jetson.specdec.plugins.module_utils.record.report import why_items
    items = dict(why_items({"record": {"host": "h", "status": "reverted", "serving_gaps": [12.0, 41.3],
                                       "config_after": "baseline"}}))
    assert items["Serving gap"] == "longest 41.3 s over 2 restarts that came up (12.0, 41.3 s)" and items["Runs now"] == "baseline"


@pytest.mark.parametrize("tuned, expected", [
    (None, ["Draft acceptance rate is 1.00 (> 0.60): consider raising num_speculative_tokens and benchmarking again "
            "(advisory only)."]),
    ({"probe_k": 8, "k": 4}, []),  # the tuning already chose k below its probe: nothing to raise
    ({"probe_k": 5, "k": 5}, ["Draft acceptance rate is 1.00 (> 0.60). k tuning chose k=5, its probe's k "
                              "(rollout_tune_k_max): a larger rollout_tune_k_max may be faster still."]),
])
def test_the_raise_k_advisory_after_k_tuning(tuned, expected):
    advisory = ("Draft acceptance rate is 1.00 (> 0.60): consider raising num_speculative_tokens and benchmarking "
                "again (advisory only).")
    record = {"host": "h", "status": "kept", "verdict": {"action": "keep", "advisories": [advisory, "other"]}}
    if tuned:
        record["k_tuning"] = tuned
    warnings = explain(record)["warnings"]
    assert [w for w in warnings if w.startswith("Draft acceptance")] == expected and "other" in warnings


@pytest.mark.parametrize("causes,expected", [
    (["kv_cache_shortfall", "kv_cache_shortfall"], "KV cache did not fit"),
    (["out_of_memory", "kv_cache_shortfall"], "ran out of memory"),
    (["out_of_memory"], "ran out of memory"),
])
def test_a_ladder_that_ran_out_of_kv_cache_says_so_in_the_next_step(causes, expected):
    attempts = [{"label": "eagle3 at utilization 0.70", "result": "failed", "cause": c} for c in causes]
    why = explain({"status": "reverted", "attempts": attempts, "verdict": {"decision": "revert", "reasons": ["x"]}})
    assert expected in why["next_step"]
    if expected == "KV cache did not fit":
        assert "max_model_len" in why["next_step"]


def test_evidence_lists_every_regression_level_lowest_first():
    from ansible_collections.jetson.specdec.plugins.module_utils.record.why import evidence
    est = {"point": 0.1, "low": 0.0, "high": 0.2}
    verdict = {"estimates": {"c1_throughput_gain": est, "c1_tpot_drop": est, "throughput_change_c8": est,
                             "throughput_change_c2": est, "c8_throughput_change": est},
               "metrics": {"low_concurrency": 1, "high_concurrency": 16}, "rounds_used": 3}
    text = evidence(verdict)
    assert text.index("throughput c=2 ") < text.index("throughput c=8 ") < text.index("throughput c=16 ")


def test_a_host_kept_below_the_keep_bar_leads_with_that_name():
    from .test_verdict_decide import drive
    verdict, _rounds = drive({"gain": 0.20, "tpot": -0.45, "c8": 0.20}, marginal_action="keep")
    out = explain({"status": "kept", "verdict": verdict})
    assert out["why"][0].startswith("Kept below the keep bar (verdict.below_keep_bar)")


def test_board_time_reads_in_board_seconds_or_minutes():
    from ansible_collections.jetson.specdec.plugins.module_utils.record.why import board_time
    assert board_time(95.4) == "95 s"
    assert board_time(852.0) == "14.2 min"
    # a stand-in at time_scale 0.1 ran 10x faster than the board it plays
    assert board_time(85.2, 0.1) == "14.2 min"
    assert [board_time(v) for v in (None, True, float("nan"), -1.0, "9")] == [None] * 5
