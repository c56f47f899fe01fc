# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import os

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench.datasets import (
    DatasetError, describe, load_dataset, parse_dataset, sample_prompts,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "datasets")


def fixture(name):
    return os.path.join(FIXTURES, name)


def test_custom_jsonl_reads_prompt_and_output_tokens():
    data = load_dataset(fixture("mixed.jsonl"), "custom")
    assert [p["line"] for p in data["prompts"]] == [1, 2]
    assert data["prompts"][0]["output_tokens"] == 64 and "output_tokens" not in data["prompts"][1]
    with open(fixture("mixed.jsonl"), "rb") as handle:
        assert data["sha256"] == hashlib.sha256(handle.read()).hexdigest()
    assert data["name"] == "mixed.jsonl"


def test_spec_bench_takes_the_first_turn_and_filters_by_category():
    data = load_dataset(fixture("spec_bench.jsonl"), "spec_bench")
    assert data["prompts"][0]["prompt"] == "Compose a travel blog post about Hawaii."
    assert describe(data)["categories"] == {"writing": 2, "math": 1}
    writing = load_dataset(fixture("spec_bench.jsonl"), "spec_bench", category="writing")
    assert [p["line"] for p in writing["prompts"]] == [1, 3]
    with pytest.raises(DatasetError, match="no usable prompt in category 'poetry'"):
        load_dataset(fixture("spec_bench.jsonl"), "spec_bench", category="poetry")


def test_sharegpt_skips_single_turn_entries_like_vllm():
    data = load_dataset(fixture("sharegpt.json"), "sharegpt")
    assert [p["prompt"] for p in data["prompts"]] == ["How do Jetson boards share memory?",
                                                      "Name three Orin modules."]
    assert data["prompts"][1]["reference_words"] == 7


@pytest.mark.parametrize("raw,name,fmt,match", [
    (b"", "p.jsonl", "custom", "p.jsonl is empty"),
    (b'{"prompt": "a"}\nnot json\n', "p.jsonl", "custom", "p.jsonl line 2 is not JSON"),
    (b'{"prompt": "a"}\n{"text": "b"}\n', "p.jsonl", "custom", "line 2 has no 'prompt' string"),
    (b'["a"]\n', "p.jsonl", "custom", "line 1 is a JSON list, not an object"),
    (b'{"prompt": "a"}\n', "p.json", "custom", "reads a .jsonl file"),
    (b'{"prompt": "a", "output_tokens": 0}\n', "p.jsonl", "custom", "output_tokens must be a positive"),
    (b'{"turns": [], "category": "x"}\n', "q.jsonl", "spec_bench", "line 1 has no 'turns' list"),
    (b'{"turns": ["a"]}\n', "q.jsonl", "spec_bench", "line 1 has no 'category'"),
    (b'{"conversations": []}', "s.json", "sharegpt", "is a JSON dict"),
    (b'[{"conversations": [{"from": "human"}, {"from": "gpt", "value": "x"}]}]', "s.json", "sharegpt",
     "entry 0: the first two conversation turns"),
    (b'[{"conversations": [{"from": "human", "value": "x"}]}]', "s.json", "sharegpt", "no usable prompt"),
    (b'\xff\xfe', "p.jsonl", "custom", "not UTF-8"),
    (b'{"prompt": "a"}\n', "p.jsonl", "alpaca", "dataset_format must be one of"),
])
def test_bad_files_are_refused_naming_the_line(raw, name, fmt, match):
    with pytest.raises(DatasetError, match=match):
        parse_dataset(raw, name, fmt)


def test_prompt_longer_than_max_model_len_is_refused():
    raw = b'{"prompt": "short"}\n{"prompt": "' + b"word " * 40 + b'"}\n'
    assert len(parse_dataset(raw, "p.jsonl", "custom", max_model_len=64)["prompts"]) == 2
    with pytest.raises(DatasetError, match="p.jsonl line 2: the prompt has 40 words.*max_model_len 32"):
        parse_dataset(raw, "p.jsonl", "custom", max_model_len=32)


def test_category_only_for_spec_bench():
    with pytest.raises(DatasetError, match="spec_bench files only"):
        parse_dataset(b'{"prompt": "a"}\n', "p.jsonl", "custom", category="math")


def test_sampling_is_seeded_and_cycles_through_every_prompt():
    data = load_dataset(fixture("spec_bench.jsonl"), "spec_bench")
    first = sample_prompts(data, 7, seed=3)
    assert first == sample_prompts(data, 7, seed=3)
    assert len(first) == 7 and set(p["line"] for p in first[:3]) == {1, 2, 3}
    info = describe(data, used=first)
    assert info["count"] == 3 and info["used"] == 7
    assert info["prompt_words"]["min"] == 5 and info["prompt_words"]["max"] == 7


def test_output_length_comes_from_the_data_bounded_by_the_setting():
    from ansible_collections.jetson.specdec.plugins.module_utils.bench.datasets import request_output_len
    assert request_output_len({"output_tokens": 64}, 128) == 64
    assert request_output_len({"output_tokens": 500}, 128) == 128
    assert request_output_len({"reference_words": 7}, 128) == 7
    assert request_output_len({}, 128) == 128
