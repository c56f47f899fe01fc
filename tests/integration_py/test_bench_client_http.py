# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""bench client / runner against the fault-injecting loopback server (tests/integration_py/fake_vllm.py)."""
import time

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench import client as bc
from ansible_collections.jetson.specdec.plugins.module_utils.bench import runner as br
from ansible_collections.jetson.specdec.tests.integration_py.fake_vllm import FakeVLLM


def _stream(srv, n_out=8, timeout=5.0, endpoint="completions", prompt=None):
    target = bc.Target(srv.url)
    client = bc.StreamClient(target, endpoint)
    body = bc.build_payload(endpoint, "tiny", prompt or [11, 12, 13], n_out)
    try:
        return client.stream(body, timeout, time.perf_counter() + 30)
    finally:
        client.close()


def _cfg(srv, **kw):
    cfg = {"url": srv.url, "concurrency": [1, 4], "num_prompts": 8, "warmup_prompts": 2,
           "input_len": 32, "output_len": 8, "request_timeout": 5, "max_duration": 60}
    cfg.update(kw)
    return cfg


def test_timing_and_usage_ground_truth():
    with FakeVLLM(step_s=0.02, prefill_s=0.05, tokens_per_chunk=2, keepalive_comments=True) as srv:
        rec = _stream(srv, n_out=10)
    assert rec["ok"], rec
    assert rec["output_tokens"] == 10 and rec["usage"] and rec["chunks"] == 5
    assert len(rec["itl"]) == 4
    assert 0.045 <= rec["ttft"] < 0.2
    tpot = (rec["latency"] - rec["ttft"]) / 9
    assert tpot == pytest.approx(4 * 0.02 / 9, rel=0.25)


def test_payload_contract():
    with FakeVLLM() as srv:
        _stream(srv, n_out=3)
        _stream(srv, n_out=3, endpoint="chat", prompt="hello there")
        comp, chat = srv.bodies
    assert comp["prompt"] == [11, 12, 13] and comp["max_tokens"] == 3
    for body in (comp, chat):
        assert body["temperature"] == 0 and body["ignore_eos"] is True and body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
    assert chat["messages"] == [{"role": "user", "content": "hello there"}]
    assert chat["max_completion_tokens"] == 3


def test_keepalive_connection_is_reused():
    with FakeVLLM() as srv:
        client = bc.StreamClient(bc.Target(srv.url))
        body = bc.build_payload("completions", "tiny", [1, 2], 3)
        first = client.stream(body, 5, time.perf_counter() + 10)
        conn = client.conn
        second = client.stream(body, 5, time.perf_counter() + 10)
        assert first["ok"] and second["ok"] and client.conn is conn and conn is not None
        client.close()
        fresh = bc.StreamClient(bc.Target(srv.url), keep_alive=False)
        assert fresh.stream(body, 5, time.perf_counter() + 10)["ok"] and fresh.conn is None


@pytest.mark.parametrize("fault,reason", [
    ("http_500", "http_500"),
    ("close_mid", "stream_closed"),
    ("malformed", "malformed_sse"),
    ("error_event", "server_error"),
    ("no_done", "stream_closed"),
])
def test_faults_are_failures_with_reason(fault, reason):
    with FakeVLLM(fault=fault) as srv:
        rec = _stream(srv, n_out=6)
    assert not rec["ok"] and rec["reason"] == reason, rec


def test_stall_times_out_within_request_timeout():
    with FakeVLLM(fault="stall") as srv:
        t0 = time.perf_counter()
        rec = _stream(srv, n_out=6, timeout=0.5)
        elapsed = time.perf_counter() - t0
    assert rec["reason"] == "timeout" and elapsed < 1.5


def test_no_usage_counts_chunks():
    with FakeVLLM(fault="no_usage", tokens_per_chunk=3) as srv:
        rec = _stream(srv, n_out=9)
    assert rec["ok"] and not rec["usage"] and rec["output_tokens"] == 3


def test_runner_levels_spec_decode_and_contract_keys():
    with FakeVLLM(step_s=0.005, tokens_per_chunk=2, k_spec=3, simulated="fake; time_scale=1") as srv:
        result, failure = br.run_benchmark(_cfg(srv, power_mode="15W"))
        sent = srv.requests
    assert failure is None
    assert sent == 1 + 2 * (2 + 8)  # probe + per level (warmup + measured)
    assert [r["concurrency"] for r in result["runs"]] == [1, 4]
    run = result["runs"][1]
    for key in ("concurrency", "completed", "failed", "output_tokens", "duration_s", "throughput_tok_s",
                "request_throughput", "ttft_ms_p50", "ttft_ms_p90", "ttft_ms_p99", "tpot_ms_p50",
                "tpot_ms_p90", "tpot_ms_p99", "itl_ms_p50", "itl_ms_p99", "e2e_latency_ms_p50",
                "e2e_latency_ms_p99", "errors", "spec_decode"):
        assert key in run
    assert run["completed"] == 8 and run["output_tokens"] == 64 and run["errors"] == {}
    sd = result["spec_decode"]
    # 2 tokens per chunk with k=3 drafted: 1 of 3 accepted per step.
    assert sd["acceptance_rate"] == pytest.approx(1 / 3.0, abs=1e-6)
    assert sd["mean_acceptance_length"] == pytest.approx(2.0)
    assert sd["drafts"] == 2 * 8 * 4 == run["spec_decode"]["drafts"] * 2
    assert result["server"] == {"version": "0.0-fake", "model": "tiny", "max_model_len": 4096}
    assert any("simulated" in w for w in result["warnings"])
    assert any("15W" in w for w in result["warnings"])
    assert result["config"]["prompt_kind"] == "token_ids"


def test_runner_no_spec_counters_gives_null():
    with FakeVLLM() as srv:
        result, failure = br.run_benchmark(_cfg(srv, concurrency=[2], warmup_prompts=0))
    assert failure is None and result["spec_decode"] is None
    assert result["runs"][0]["spec_decode"] is None and result["warnings"] == []


def test_runner_falls_back_to_calibrated_text_prompts():
    with FakeVLLM(fault="reject_token_ids", tokens_per_word=2) as srv:
        result, failure = br.run_benchmark(_cfg(srv, concurrency=[1], input_len=100))
        last = srv.bodies[-1]
    assert failure is None and result["config"]["prompt_kind"] == "text"
    assert any("rejected token-id" in w for w in result["warnings"])
    assert len(last["prompt"].split()) == 50  # 2 tokens per word -> 50 words = 100 tokens


def test_runner_clamps_to_max_model_len():
    with FakeVLLM(max_model_len=64) as srv:
        result, _f = br.run_benchmark(_cfg(srv, concurrency=[1], input_len=2048, output_len=16))
        assert len(srv.bodies[-1]["prompt"]) == 48
    assert result["config"]["input_len"] == 48
    assert any("max_model_len" in w for w in result["warnings"])


def test_runner_fails_above_max_failed_ratio_naming_reasons():
    with FakeVLLM(fault="http_500") as srv:
        result, failure = br.run_benchmark(_cfg(srv, concurrency=[2], max_failed_ratio=0.5))
    assert "8 of 8 requests failed" in failure and "http_500: 8" in failure
    assert result["runs"][0]["errors"] == {"http_500": 8}


def test_runner_respects_max_duration_with_stalling_server():
    with FakeVLLM(fault="stall") as srv:
        t0 = time.perf_counter()
        result, failure = br.run_benchmark(_cfg(srv, concurrency=[2], request_timeout=60,
                                                max_duration=3, warmup_prompts=0))
        elapsed = time.perf_counter() - t0
    # The deadline ends the run, not the 60 s request timeout.  The 0.15 s the
    # runner keeps back covers a quiet machine; a loaded CI runner has been
    # measured 0.6 s later, so the bound leaves a second for scheduling.
    assert elapsed < 3.0 + 1.0
    assert result["runs"][0]["errors"].get("deadline") == 8
    assert failure and "deadline: 8" in failure


def test_two_runs_with_one_seed_do_not_send_the_same_prompts():
    # vLLM's prefix cache would serve a repeated prompt's prefill: the
    # rollout's repeat measurement (same seed, same server) must not be a
    # cache benchmark.  Every prompt of a run starts with that run's salt.
    with FakeVLLM() as srv:
        br.run_benchmark(_cfg(srv, concurrency=[2], warmup_prompts=0, num_prompts=3))
        first = [b["prompt"] for b in srv.bodies]
        br.run_benchmark(_cfg(srv, concurrency=[2], warmup_prompts=0, num_prompts=3))
        second = [b["prompt"] for b in srv.bodies[len(first):]]
    assert len(first) == len(second) == 4  # probe + 3
    assert not set(tuple(p[:4]) for p in first) & set(tuple(p[:4]) for p in second)
    assert sorted(p[4:] for p in first) == sorted(p[4:] for p in second)  # the seed still decides the rest


def test_a_prompt_set_draws_other_prompts_of_the_seed_and_set_zero_is_the_seed_alone():
    # the rollout's i-th baseline and i-th candidate round draw set i: the pair meets the same prompts,
    # the next pair other ones
    def bodies(**extra):
        with FakeVLLM() as srv:
            result, failure = br.run_benchmark(_cfg(srv, concurrency=[2], warmup_prompts=0, num_prompts=4,
                                                    output_len=8, output_range_ratio=0.5, **extra))
            assert failure is None
            return [(tuple(b["prompt"][4:]), b["max_tokens"]) for b in srv.bodies[1:]], result["config"]
    plain, config = bodies()
    zero, unused = bodies(prompt_set=0)
    one, config_one = bodies(prompt_set=1)
    one_again, unused = bodies(prompt_set=1)
    assert sorted(plain) == sorted(zero) and config["prompt_set"] == 0
    assert sorted(one) == sorted(one_again) and config_one["prompt_set"] == 1
    assert not set(p for p, _n in one) & set(p for p, _n in plain)


def test_runner_spreads_output_lengths_like_vllm_bench_serve():
    with FakeVLLM() as srv:
        result, failure = br.run_benchmark(_cfg(srv, concurrency=[2], warmup_prompts=0, num_prompts=40,
                                                output_len=8, output_range_ratio=0.5))
        asked = [b["max_tokens"] for b in srv.bodies[1:]]  # after the probe
    assert failure is None and result["warnings"] == []
    assert len(asked) == 40 and min(asked) >= 4 and max(asked) <= 12 and len(set(asked)) > 3
    assert result["runs"][0]["output_tokens"] == sum(asked)
    assert result["config"]["output_range_ratio"] == 0.5


def test_runner_clamps_with_the_longest_output():
    with FakeVLLM(max_model_len=64) as srv:
        result, _f = br.run_benchmark(_cfg(srv, concurrency=[1], warmup_prompts=0, input_len=60,
                                           output_len=10, output_range_ratio=0.5))
        longest_fits = all(len(b["prompt"]) + b["max_tokens"] <= 64 for b in srv.bodies)
    assert longest_fits and result["config"]["input_len"] == 49  # 64 - ceil(10 * 1.5)
    assert any("max_model_len" in w for w in result["warnings"])


def test_runner_warns_when_requests_stop_short():
    with FakeVLLM(fault="short_output") as srv:
        result, failure = br.run_benchmark(_cfg(srv, concurrency=[1], warmup_prompts=0, num_prompts=3))
    assert failure is None
    assert any("3 requests returned fewer tokens" in w for w in result["warnings"])
