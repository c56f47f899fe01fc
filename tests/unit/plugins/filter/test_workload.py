# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""rollout_workload: the operator's prompt file, checked on the controller before any host changes."""
import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.workload import FilterModule

WORKLOAD = FilterModule().filters()["rollout_workload"]
CUSTOM = "".join(json.dumps({"prompt": p}) + "\n" for p in ("say hello", "count to ten slowly", "the the the"))
SPEC_BENCH = "".join(json.dumps({"turns": [t], "category": c}) + "\n"
                     for t, c in (("write a poem", "writing"), ("add 2 and 2", "math"), ("sum 1..9", "math")))


def test_a_custom_file_is_described_with_its_hash_and_the_host_copy_keeps_the_jsonl_suffix():
    out = WORKLOAD(CUSTOM, "/ops/prompts.jsonl", "custom", "", 8192)
    assert (out["name"], out["format"], out["count"]) == ("prompts.jsonl", "custom", 3)
    assert out["prompt_words"] == {"min": 2, "p50": 3, "max": 4}
    assert len(out["sha256"]) == 64 and out["host_file"] == "workloads/%s/prompts.jsonl" % out["sha256"][:16]
    assert out["host_dir"] == "workloads/%s" % out["sha256"][:16]
    assert WORKLOAD(CUSTOM, "/ops/../$(x) ;.jsonl")["host_file"].endswith("/__x__;.jsonl".replace(";", "_"))
    assert WORKLOAD(CUSTOM + CUSTOM, "/ops/prompts.jsonl")["sha256"] != out["sha256"]  # a new file is a new config


def test_a_spec_bench_file_keeps_one_category_and_counts_them():
    out = WORKLOAD(SPEC_BENCH, "q.jsonl", "spec_bench", "math")
    assert out["count"] == 2 and out["categories"] == {"math": 2} and out["category"] == "math"
    assert WORKLOAD(SPEC_BENCH, "q.jsonl", "spec_bench")["categories"] == {"writing": 1, "math": 2}


def test_a_sharegpt_host_copy_is_json():
    data = json.dumps([{"conversations": [{"from": "human", "value": "hi there"}, {"from": "gpt", "value": "hello"}]}])
    assert WORKLOAD(data, "sg.json", "sharegpt")["host_file"].endswith("/sg.json")


@pytest.mark.parametrize("contents, fmt, category, max_len, needle", [
    (CUSTOM + "{not json\n", "custom", "", None, "line 4 is not JSON"),
    (CUSTOM + json.dumps({"text": "x"}) + "\n", "custom", "", None, "line 4 has no 'prompt'"),
    ("", "custom", "", None, "is empty"),
    (CUSTOM, "custom", "math", None, "spec_bench files only"),
    (SPEC_BENCH, "spec_bench", "coding", None, "no usable prompt in category 'coding'"),
    (CUSTOM, "custom", "", 3, "line 2: the prompt has 4 words"),
    (CUSTOM, "yaml", "", None, "dataset_format must be one of"),
])
def test_a_bad_file_is_refused_naming_the_line_the_variable_and_that_nothing_changed(contents, fmt, category, max_len,
                                                                                     needle):
    with pytest.raises(AnsibleFilterError) as info:
        WORKLOAD(contents, "/ops/prompts.jsonl", fmt, category, max_len)
    text = str(info.value)
    assert needle in text and "rollout_bench_dataset /ops/prompts.jsonl" in text and "no host was changed" in text
