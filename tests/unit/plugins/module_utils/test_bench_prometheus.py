import math

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench import prometheus as bp

TEXT = r'''# HELP vllm:spec_decode_num_drafts Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 1000.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e9
vllm:spec_decode_num_draft_tokens_total{model_name="m",engine="0"} 3000.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 1660.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 710.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1",engine="0",model_name="m"} 550
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 400 1712345678000
vllm:kv_cache_usage_perc{model_name="a \"quoted\" name, {x}"} NaN
weird{path="C:\\dir\\",note="line\nbreak"} +Inf
no_labels -Inf
broken{oops 1
'''


def test_parse_labels_escapes_nan_inf_timestamps():
    samples = bp.parse_text(TEXT)
    by = dict((n + repr(sorted(l.items())), v) for n, l, v in samples)
    names = [s[0] for s in samples]
    assert "broken" not in names  # malformed line skipped, not fatal
    kv = [s for s in samples if s[0] == "vllm:kv_cache_usage_perc"][0]
    assert kv[1]["model_name"] == 'a "quoted" name, {x}'
    assert math.isnan(kv[2])
    weird = [s for s in samples if s[0] == "weird"][0]
    assert weird[1] == {"path": "C:\\dir\\", "note": "line\nbreak"} and weird[2] == float("inf")
    assert [s for s in samples if s[0] == "no_labels"][0][2] == float("-inf")
    pos2 = [s for s in samples if s[1].get("position") == "2"][0]
    assert pos2[2] == 400.0  # the trailing timestamp is not the value
    assert len(by) == len(samples)


def test_snapshot_and_delta():
    before = bp.spec_decode_snapshot(bp.parse_text(TEXT))
    assert before["drafts"] == 1000 and before["per_position"] == {0: 710, 1: 550, 2: 400}
    after_text = (TEXT.replace(" 1000.0", " 1100.0").replace(" 3000.0", " 3300.0")
                  .replace(" 1660.0", " 1860.0").replace(" 710.0", " 790.0"))
    raw = bp.spec_decode_delta(before, bp.spec_decode_snapshot(bp.parse_text(after_text)))
    sd = bp.finish_spec_decode(raw)
    assert sd["drafts"] == 100 and sd["draft_tokens"] == 300 and sd["accepted_tokens"] == 200
    assert sd["acceptance_rate"] == pytest.approx(200 / 300.0, abs=1e-6)
    assert sd["mean_acceptance_length"] == pytest.approx(3.0)
    assert sd["per_position"] == [0.8, 0.0, 0.0]


def test_no_spec_counters_is_none():
    text = 'vllm:num_requests_running{model_name="m"} 1\n'
    assert bp.spec_decode_snapshot(bp.parse_text(text)) is None
    assert bp.finish_spec_decode(bp.spec_decode_delta(None, None)) is None


def test_sums_engines_and_accepts_missing_total_suffix():
    text = ('vllm:spec_decode_num_drafts{engine="0"} 5\nvllm:spec_decode_num_drafts{engine="1"} 7\n'
            'vllm:spec_decode_num_draft_tokens{engine="0"} 36\n')
    snap = bp.spec_decode_snapshot(bp.parse_text(text))
    assert snap["drafts"] == 12 and snap["draft_tokens"] == 36 and snap["accepted_tokens"] == 0


def test_total_suffix_wins_over_bare_name():
    text = 'vllm:spec_decode_num_drafts 99\nvllm:spec_decode_num_drafts_total 5\n'
    assert bp.spec_decode_snapshot(bp.parse_text(text))["drafts"] == 5


def test_counter_reset_gives_none_and_zero_drafts_give_null_rates():
    a = {"drafts": 10.0, "draft_tokens": 30.0, "accepted_tokens": 5.0, "per_position": {}}
    b = {"drafts": 2.0, "draft_tokens": 6.0, "accepted_tokens": 1.0, "per_position": {}}
    assert bp.spec_decode_delta(a, b) is None
    sd = bp.finish_spec_decode(bp.spec_decode_delta(a, a))
    assert sd["acceptance_rate"] is None and sd["mean_acceptance_length"] is None


def test_model_filter():
    text = ('vllm:spec_decode_num_drafts_total{model_name="a"} 5\n'
            'vllm:spec_decode_num_drafts_total{model_name="b"} 7\n')
    samples = bp.parse_text(text)
    assert bp.spec_decode_snapshot(samples, "a")["drafts"] == 5
    assert bp.spec_decode_snapshot(samples, "zzz")["drafts"] == 12  # unknown: all
