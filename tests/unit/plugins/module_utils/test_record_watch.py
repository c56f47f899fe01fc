"""The watch of a kept host (record/watch.py): evidence from the state, the window from two scrapes, the judgement."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench.prometheus import parse_text
from ansible_collections.jetson.specdec.plugins.module_utils.record import watch
from ansible_collections.jetson.specdec.plugins.module_utils.record.textfile import render_families

LABELS = 'model_name="llama8b",engine="0"'


def metrics(requests, drafted, accepted, per_pos, tpot_sum, tpot_n, ttft_sum, busy, spec=True):
    """/metrics text in the shape vLLM (prometheus_client) gives it: counters with _total, histograms."""
    lines = ['vllm:request_success_total{%s,finished_reason="stop"} %r' % (LABELS, float(requests)),
             'vllm:request_success_total{%s,finished_reason="length"} 0.0' % LABELS,
             'vllm:request_success_created{%s,finished_reason="stop"} 1.7e9' % LABELS,
             'vllm:request_time_per_output_token_seconds_bucket{%s,le="+Inf"} %r' % (LABELS, float(tpot_n)),
             'vllm:request_time_per_output_token_seconds_count{%s} %r' % (LABELS, float(tpot_n)),
             'vllm:request_time_per_output_token_seconds_sum{%s} %r' % (LABELS, float(tpot_sum)),
             'vllm:time_to_first_token_seconds_count{%s} %r' % (LABELS, float(requests)),
             'vllm:time_to_first_token_seconds_sum{%s} %r' % (LABELS, float(ttft_sum)),
             'vllm:request_inference_time_seconds_count{%s} %r' % (LABELS, float(requests)),
             'vllm:request_inference_time_seconds_sum{%s} %r' % (LABELS, float(busy))]
    if spec:
        drafts = drafted / 3.0
        lines += ['vllm:spec_decode_num_drafts_total{%s} %r' % (LABELS, drafts),
                  'vllm:spec_decode_num_draft_tokens_total{%s} %r' % (LABELS, float(drafted)),
                  'vllm:spec_decode_num_accepted_tokens_total{%s} %r' % (LABELS, float(accepted))]
        lines += ['vllm:spec_decode_num_accepted_tokens_per_pos_total{%s,position="%d"} %r' % (LABELS, i, float(v))
                  for i, v in enumerate(per_pos)]
    return parse_text("\n".join(lines) + "\n")


def bench(tpot_ms, acceptance=None, scale=None, levels=(1, 8)):
    out = {"runs": [{"concurrency": c, "tpot_ms_p50": tpot_ms * (1 + 0.5 * (c > 1)), "throughput_tok_s": 10.0 * c,
                     "completed": 8, "failed": 0} for c in levels]}
    if acceptance is not None:
        out["spec_decode"] = {"acceptance_rate": acceptance, "per_position": [0.8, 0.5, 0.3]}
    if scale:
        out["simulated"] = "thor_t5000; time_scale=%s" % scale
    return out


def kept_state(acc=0.6, cand_ms=20.0, base_ms=30.0, scale=None):
    return {"status": "kept", "updated_at": "2026-12-01T10:00:00Z", "info": {"method": "eagle3"},
            "benchmarks": {"baseline": bench(base_ms, scale=scale), "candidate": [bench(cand_ms, acc, scale)] * 3}}


PARAMS = watch.validate_params({})


def window(acc=0.6, tpot_s=0.020, requests=50, drafted=3000, busy_per_s=1.0, seconds=60.0, spec=True):
    before = metrics(100, 9000, 5400, [3000, 1800, 600], 2.0, 100, 5.0, 60.0, spec)
    accepted = acc * drafted
    after = metrics(100 + requests, 9000 + drafted, 5400 + accepted,
                    [3000 + accepted * 0.5, 1800 + accepted * 0.3, 600 + accepted * 0.2],
                    2.0 + tpot_s * requests, 100 + requests, 5.0 + 0.1 * requests, 60.0 + busy_per_s * seconds, spec)
    return before, after, seconds


def test_evidence_is_the_kept_candidates_acceptance_and_tpot_per_level():
    evid = watch.evidence(kept_state())
    assert evid["acceptance"] == 0.6 and evid["per_position"] == [0.8, 0.5, 0.3]
    assert evid["levels"] == {1: {"candidate_tpot_s": 0.02, "baseline_tpot_s": 0.03},
                              8: {"candidate_tpot_s": 0.03, "baseline_tpot_s": 0.045}}
    assert evid["method"] == "eagle3" and evid["time_scale"] == 1.0


def test_evidence_prefers_the_final_benchmark_and_is_in_board_time_on_a_simulated_board():
    state = kept_state(scale=0.1)
    state["benchmarks"]["final"] = bench(2.0, 0.7, scale=0.1)
    evid = watch.evidence(state)
    assert evid["acceptance"] == 0.7 and evid["time_scale"] == 0.1
    assert evid["levels"][1]["candidate_tpot_s"] == pytest.approx(0.02)


def test_no_candidate_benchmark_is_no_evidence():
    assert watch.evidence({"status": "kept", "benchmarks": {"baseline": bench(30.0)}}) is None
    result = watch.judge(None, watch.observe(*window()), PARAMS, host="agx-01")
    assert result["status"] == "no_evidence" and not result["drifted"]
    assert "rollout_force=true" in result["next_step"]


def test_the_window_reads_the_real_vllm_series():
    obs = watch.observe(*window(acc=0.5, tpot_s=0.025, requests=40, drafted=2400, busy_per_s=2.0))
    assert obs["requests"] == 40 and obs["draft_tokens"] == 2400 and obs["accepted_tokens"] == 1200
    assert obs["acceptance"] == 0.5 and obs["tpot_s"] == pytest.approx(0.025) and obs["ttft_s"] == pytest.approx(0.1)
    assert obs["mean_concurrency"] == 2.0 and obs["speculating"] and not obs["restarted"]
    assert obs["per_position"] == [pytest.approx(0.75), pytest.approx(0.45), pytest.approx(0.3)]


def test_a_steady_host_is_left_alone():
    result = watch.judge(watch.evidence(kept_state()), watch.observe(*window(acc=0.58, tpot_s=0.021)), PARAMS)
    assert result["status"] == "steady" and result["drifted"] is False and result["next_step"] is None
    assert result["level"] == 1
    assert result["reasons"] == ["Steady over the 60s window (50 requests): acceptance 58.0% (kept on 60.0%), "
                                 "TPOT 21.0 ms (kept on 20.0 ms at c=1)."]


def test_fallen_acceptance_is_drift_with_the_numbers_and_the_next_step():
    result = watch.judge(watch.evidence(kept_state()), watch.observe(*window(acc=0.3, tpot_s=0.021)), PARAMS,
                         host="agx-01")
    assert result["status"] == "drifted" and result["drifted"] is True
    assert result["checks"]["acceptance"] == {"kept": 0.6, "observed": 0.3, "floor": 0.45, "drifted": True}
    assert result["reasons"][0].startswith("Acceptance drifted: 30.0% of drafted tokens accepted over the window "
                                           "(900 of 3000) against 60.0% when kept"), result["reasons"]
    assert "jetson.specdec.revert -l agx-01" in result["next_step"]
    assert "rollout_watch_action=reevaluate" in result["next_step"]


def test_acceptance_just_above_the_floor_is_steady():
    result = watch.judge(watch.evidence(kept_state()), watch.observe(*window(acc=0.46)), PARAMS)
    assert result["status"] == "steady", result


def test_risen_tpot_is_drift_and_says_when_speculation_no_longer_pays():
    result = watch.judge(watch.evidence(kept_state()), watch.observe(*window(acc=0.58, tpot_s=0.032)), PARAMS)
    assert result["status"] == "drifted" and result["checks"]["tpot"]["drifted"]
    assert "TPOT drifted: 32.0 ms" in result["reasons"][0]
    assert "slower than the baseline's 30.0 ms: speculation no longer pays" in result["reasons"][0]


def test_tpot_is_compared_at_the_level_nearest_the_windows_concurrency():
    # 30 ms is a drift at c=1 (kept on 20 ms) but steady at c=8 (kept on 30 ms)
    evid = watch.evidence(kept_state())
    busy = watch.judge(evid, watch.observe(*window(tpot_s=0.030, busy_per_s=6.0)), PARAMS)
    assert busy["level"] == 8 and busy["status"] == "steady", busy
    quiet = watch.judge(evid, watch.observe(*window(tpot_s=0.030, busy_per_s=0.3)), PARAMS)
    assert quiet["level"] == 1 and quiet["status"] == "drifted", quiet


@pytest.mark.parametrize("requests,drafted", [(5, 3000), (50, 100), (0, 0)])
def test_a_quiet_window_is_not_enough_traffic_not_a_verdict(requests, drafted):
    result = watch.judge(watch.evidence(kept_state()),
                         watch.observe(*window(acc=0.1, tpot_s=0.05, requests=requests, drafted=drafted)), PARAMS)
    assert result["status"] == "not_enough_traffic" and result["drifted"] is False
    assert result["reasons"][0].startswith("Not enough traffic: %d finished requests and %d drafted tokens"
                                           % (requests, drafted))


def test_a_kept_host_that_does_not_speculate_is_drifted():
    result = watch.judge(watch.evidence(kept_state()), watch.observe(*window(spec=False)), PARAMS)
    assert result["status"] == "drifted" and "not speculating" in result["reasons"][0]


def test_a_restart_inside_the_window_is_not_a_verdict():
    before, after, seconds = window()
    result = watch.judge(watch.evidence(kept_state()), watch.observe(after, before, seconds), PARAMS)
    assert result["status"] == "restarted" and result["drifted"] is False


def test_model_name_keeps_only_that_models_series():
    before, after, seconds = window(acc=0.3)
    assert watch.observe(before, after, seconds, model_name="other")["acceptance"] == 0.3  # no such label: all
    other = [(n, dict(lab, model_name="other"), v) for n, lab, v in after]
    assert watch.observe(before, after + other, seconds, model_name="llama8b")["acceptance"] == 0.3


@pytest.mark.parametrize("params,needle", [
    ({"acceptance_drop": 1.5}, "acceptance_drop (rollout_watch_acceptance_drop) must be a fraction in (0, 1)"),
    ({"tpot_rise": 0}, "tpot_rise (rollout_watch_tpot_rise) must be a fraction"),
    ({"window_s": 0}, "window_s (rollout_watch_window) must be > 0"),
    ({"min_requests": -1}, "min_requests must be >= 0"),
    ({"window_s": "soon"}, "window_s must be a number"),
    ({"window_s": True}, "window_s must be a number"),
    ({"windw_s": 5}, "unknown parameter(s) windw_s"),
])
def test_bad_settings_are_refused_naming_the_setting(params, needle):
    with pytest.raises(ValueError) as err:
        watch.validate_params(params)
    assert needle in str(err.value)


def test_textfile_families_of_a_drifted_host():
    result = watch.judge(watch.evidence(kept_state()), watch.observe(*window(acc=0.3)), PARAMS)
    text = render_families(watch.families(result, timestamp=1700000000))
    assert 'jetson_specdec_watch_status{status="drifted"} 1\n' in text
    assert 'jetson_specdec_watch_status{status="steady"} 0\n' in text
    assert "jetson_specdec_watch_drifted 1\n" in text
    assert 'jetson_specdec_watch_acceptance_rate{source="observed"} 0.3\n' in text
    assert 'jetson_specdec_watch_acceptance_rate{source="kept"} 0.6\n' in text
    assert 'jetson_specdec_watch_tpot_seconds{source="kept"} 0.02\n' in text
    assert 'jetson_specdec_watch_tpot_seconds{source="baseline"} 0.03\n' in text
    assert "jetson_specdec_watch_requests 50\n" in text
    assert "jetson_specdec_watch_last_run_timestamp_seconds 1700000000\n" in text
    assert 'jetson_specdec_watch_acceptance_per_position{position="0"}' in text
    # every family once, HELP and TYPE before its samples
    assert text.count("# TYPE jetson_specdec_watch_status gauge") == 1


def test_textfile_of_a_host_not_kept_says_so_and_not_drifted():
    text = render_families(watch.families({"status": "not_kept", "drifted": False}))
    assert 'jetson_specdec_watch_status{status="not_kept"} 1\n' in text and "jetson_specdec_watch_drifted 0\n" in text
    assert "acceptance_rate" not in text
