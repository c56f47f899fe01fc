# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""vllm_bench with a prompt file: the prompts sent are the file's, the result names the workload."""
import hashlib
import json
import os

from ansible_collections.jetson.specdec.plugins.modules import vllm_bench
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module
from ansible_collections.jetson.specdec.tests.integration_py.fake_vllm import FakeVLLM

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "datasets")


def _args(srv, **kw):
    args = {"url": srv.url, "concurrency": [1], "num_prompts": 5, "warmup_prompts": 1,
            "output_len": 6, "request_timeout": 5, "max_duration": 60}
    args.update(kw)
    return args


def test_spec_bench_file_prompts_are_sent_and_described():
    path = os.path.join(FIXTURES, "spec_bench.jsonl")
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, dataset_path=path, dataset_format="spec_bench",
                                                        dataset_category="writing", endpoint="chat"))
        bodies = list(srv.bodies)
    assert not failed, res
    sent = set(b["messages"][0]["content"] for b in bodies)
    assert sent == {"Compose a travel blog post about Hawaii.", "Draft an email to a colleague."}
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    work = res["workload"]
    assert work["name"] == "spec_bench.jsonl" and work["sha256"] == digest
    assert work["count"] == 2 and work["categories"] == {"writing": 2} and work["category"] == "writing"
    assert work["requests_sent"] == len(bodies) and res["config"]["prompt_kind"] == "dataset"


def test_custom_output_tokens_bound_by_output_len():
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, dataset_path=os.path.join(FIXTURES, "mixed.jsonl")))
        lengths = sorted(set((b["prompt"], b["max_tokens"]) for b in srv.bodies))
    assert not failed, res
    assert all(n == 6 for dummy, n in lengths)  # the file asks 64 for line 1: output_len 6 bounds it
    assert all(isinstance(p, str) for p, dummy in lengths)


def test_bad_file_fails_before_any_request(tmp_path):
    bad = tmp_path / "prompts.jsonl"
    bad.write_text('{"prompt": "fine"}\n{"text": "no prompt"}\n')
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, dataset_path=str(bad)))
        assert srv.requests == 0
    assert failed and "prompts.jsonl line 2 has no 'prompt' string" in res["msg"]


def test_prompt_longer_than_the_servers_max_model_len_is_refused(tmp_path):
    long_file = tmp_path / "long.jsonl"
    long_file.write_text(json.dumps({"prompt": "word " * 50}) + "\n")
    with FakeVLLM(max_model_len=32) as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, dataset_path=str(long_file)))
        assert srv.requests == 0
    assert failed and "does not fit max_model_len 32" in res["msg"]


def test_synthetic_default_is_named():
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, input_len=8))
    assert not failed and res["workload"]["name"] == "synthetic"
    assert res["workload"]["format"] == "token_ids"


def test_acceptance_is_split_by_category_when_speculation_is_on():
    path = os.path.join(FIXTURES, "spec_bench.jsonl")
    with FakeVLLM(tokens_per_chunk=2, k_spec=2) as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, dataset_path=path, dataset_format="spec_bench",
                                                        endpoint="chat"))
        sent = [b["messages"][0]["content"] for b in srv.bodies]
    assert not failed, res
    split = res["workload"]["acceptance_by_category"]
    assert sorted(split) == ["math", "writing"]
    assert split["math"]["requests"] == 1 and split["writing"]["requests"] == 2
    assert split["math"]["drafts"] > 0 and split["math"]["acceptance_rate"] == 0.5
    # the pass is outside the measured level: the level still counts num_prompts requests
    assert res["runs"][0]["completed"] == 5 and sent.count("What is 12 * 13?") >= 1


def test_no_split_without_speculation_or_categories():
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, dataset_path=os.path.join(FIXTURES, "spec_bench.jsonl"),
                                                        dataset_format="spec_bench"))
    assert not failed and "acceptance_by_category" not in res["workload"]
    with FakeVLLM(k_spec=2) as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, dataset_path=os.path.join(FIXTURES, "mixed.jsonl")))
    assert not failed and "acceptance_by_category" not in res["workload"]
