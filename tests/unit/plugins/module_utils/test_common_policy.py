# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The policy is the one place for the skill's numbers: its helpers, the decisions built on it,
and the role defaults (YAML cannot import Python) checked against it."""
import os
import re

import pytest
import yaml

from ansible_collections.jetson.specdec.plugins.module_utils.common import policy
from ansible_collections.jetson.specdec.plugins.module_utils.launch.catalog import select_speculation
from ansible_collections.jetson.specdec.plugins.module_utils.launch.rules import plan_launch
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.rule import DEFAULTS as VERDICT_DEFAULTS

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
TARGET = "Qwen/Qwen3-4B"
DRAFT = "Qwen/Qwen3-0.6B"
CATALOG = {TARGET: {"family": "qwen3", "weight_bytes": 8000000000, "kv_bytes_per_token": 147456,
                    "vocab_size": 151936, "eagle3_heads": [],
                    "draft_models": [{"model": DRAFT, "weight_bytes": 1500000000, "vocab_size": 151936}]}}


def _yaml(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("major, old", [(35, True), (38, True), (39, False), (40, False), (None, False),
                                        (True, False), ("38", False)])
def test_l4t_gate(major, old):
    assert policy.before_modern_l4t(major) is old


@pytest.mark.parametrize("family, supported, no_eagle3, k", [
    ("thor", True, False, 5), ("thor-agx", True, False, 5), ("agx_orin", True, False, 3),
    ("orin-agx", True, False, 3), ("orin_nx", False, True, 3), ("orin-nano", False, True, 3),
    ("agx_xavier", False, False, 3), (None, False, False, 3),
])
def test_family_helpers(family, supported, no_eagle3, k):
    assert policy.speculation_supported(family) is supported
    assert policy.eagle3_forbidden(family) is no_eagle3
    assert policy.start_k(family) == k


def test_speculative_utilization_is_rounded_like_the_flag():
    assert policy.speculative_utilization(0.8) == 0.75
    assert policy.speculative_utilization(0.35, 0.1) == 0.25


@pytest.mark.parametrize("family, k", [("thor", 5), ("agx_orin", 3)])
def test_draft_model_starts_at_the_family_k_in_plan_and_catalog(family, k):
    # The decision recorded in docs/catalog.md: one k per family, whatever the method.
    plan = plan_launch(dict(family=family, l4t_major=39, installed_vllm_version="0.20.1", runtime="native",
                            model=TARGET, speculation=True, method="draft_model", catalog=CATALOG,
                            gpu_memory_utilization=0.8, gpu_memory_utilization_max=0.9))
    assert not plan["refusals"], plan["refusals"]
    assert plan["speculative_config"]["method"] == "draft_model"
    assert plan["speculative_config"]["num_speculative_tokens"] == k
    assert select_speculation(CATALOG, TARGET, "draft_model", family)["num_speculative_tokens"] == k


def test_docs_catalog_states_the_same_k():
    with open(os.path.join(REPO, "docs", "catalog.md")) as handle:
        text = handle.read()
    assert "k = 4" not in text
    rule = r"draft_model.{0,80}k = %d on Thor, %d on AGX Orin" % (policy.START_K["thor"], policy.START_K["agx_orin"])
    assert re.search(rule, text)


def test_vllm_server_defaults_agree_with_the_policy():
    defaults = _yaml("roles", "vllm_server", "defaults", "main", "main.yml")
    specs = _yaml("roles", "vllm_server", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    expected = {
        "vllm_server_speculative_utilization_drop": policy.UTILIZATION_DROP,
        "vllm_server_gpu_memory_utilization_max": policy.UTILIZATION_CEILING,
        "vllm_server_max_speculative_concurrency": policy.MAX_SPECULATIVE_CONCURRENCY,
        "vllm_server_memory_reserve_bytes": policy.MEMORY_RESERVE_BYTES,
    }
    for name, value in expected.items():
        assert defaults[name] == value, name
        assert specs[name]["default"] == value, name


def test_rollout_and_verdict_defaults_agree_with_the_policy():
    defaults = _yaml("roles", "rollout", "defaults", "main.yml")
    specs = _yaml("roles", "rollout", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    expected = {"keep_throughput_gain": policy.KEEP_THROUGHPUT_GAIN, "keep_tpot_drop": policy.KEEP_TPOT_DROP,
                "revert_throughput_gain": policy.REVERT_THROUGHPUT_GAIN}
    for key, value in expected.items():
        assert VERDICT_DEFAULTS[key] == value
        assert defaults["rollout_" + key] == value, key
        assert specs["rollout_" + key]["default"] == value, key
    assert policy.LOW_CONCURRENCY in defaults["rollout_bench_concurrency"]
    assert policy.HIGH_CONCURRENCY in defaults["rollout_bench_concurrency"]


def test_no_module_util_restates_the_families_or_the_l4t_gate():
    # The duplicates issue 14 removed: a second family tuple or a literal r39 comparison.
    offenders = []
    for base in ("plugins/module_utils", "plugins/modules", "plugins/filter"):
        for folder, _dirs, files in os.walk(os.path.join(REPO, base)):
            for name in files:
                path = os.path.join(folder, name)
                if not name.endswith(".py") or path.endswith(os.path.join("common", "policy.py")):
                    continue
                with open(path) as handle:
                    text = handle.read()
                if re.search(r"\(\s*\"thor\",\s*\"agx_orin\"\s*\)|\(\s*\"orin_nx\",\s*\"orin_nano\"\s*\)|"
                             r"<\s*39\b|=\s*0\.30\b", text):
                    offenders.append(os.path.relpath(path, REPO))
    assert offenders == []
