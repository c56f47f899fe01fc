# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import os

import pytest
import yaml

from ansible_collections.jetson.specdec.plugins.module_utils.launch.catalog import (
    catalog_model_facts, select_speculation,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import (
    SpecConfigError, validate_model_ref,
)

_CATALOG_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..",
                             "roles", "vllm_server", "defaults", "main", "catalog.yml")

# Heads the research reference lists as published (vllm-speculative.md section 6).
PUBLISHED_HEADS = {
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
    "RedHatAI/Qwen3-8B-speculator.eagle3", "AngelSlim/Qwen3-8B_eagle3", "Tengyunw/qwen3_8b_eagle3",
    "AngelSlim/Qwen3-4B_eagle3", "AngelSlim/Qwen3-1.7B_eagle3",
}
GIB = 1024 ** 3


@pytest.fixture(scope="module")
def catalog():
    with open(_CATALOG_FILE) as handle:
        return yaml.safe_load(handle)["vllm_server_model_catalog"]


def _entry(**kw):
    base = {"family": "llama3", "weight_bytes": 10, "kv_bytes_per_token": 4, "vocab_size": 100,
            "eagle3_heads": [], "draft_models": []}
    base.update(kw)
    return base


# --- the shipped catalog ------------------------------------------------------------------------
def test_catalog_entries_are_well_formed(catalog):
    for target, entry in catalog.items():
        validate_model_ref(target)
        assert entry["family"] in ("llama3", "qwen3")
        assert entry["weight_bytes"] > 0 and entry["kv_bytes_per_token"] > 0
        for head in entry["eagle3_heads"]:
            assert head["model"] in PUBLISHED_HEADS, "unpublished head %s" % head["model"]
            assert head["weight_bytes"] > 0 and head["source"]
        for draft in entry["draft_models"]:
            assert draft["vocab_size"] == entry["vocab_size"], (target, draft["model"])
            assert draft["weight_bytes"] < entry["weight_bytes"]


def test_catalog_numbers_match_reference(catalog):
    # Workshop: FP4 6.07 GiB, FP4 + EAGLE-3 6.86 GiB.
    fp4 = catalog["nvidia/Llama-3.1-8B-Instruct-FP4"]
    assert fp4["weight_bytes"] / GIB == pytest.approx(6.07, abs=0.005)
    head = fp4["eagle3_heads"][0]
    assert head["model"] == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    assert (fp4["weight_bytes"] + head["weight_bytes"]) / GIB == pytest.approx(6.86, abs=0.02)
    # 2 x 32 layers x 8 KV heads x 128 head_dim x 2 bytes.
    assert catalog["meta-llama/Llama-3.1-8B-Instruct"]["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert catalog["Qwen/Qwen3-8B"]["kv_bytes_per_token"] == 2 * 36 * 8 * 128 * 2
    assert "AngelSlim/Qwen3-1.7B_eagle3" not in catalog


def test_llama_32_has_no_invented_head(catalog):
    choice = select_speculation(catalog, "meta-llama/Llama-3.2-3B-Instruct", "eagle3", "thor")
    assert choice["method"] == "draft_model"
    assert choice["model"] == "meta-llama/Llama-3.2-1B-Instruct"
    assert "no published EAGLE-3 head" in choice["reason"]


# --- select_speculation ---------------------------------------------------------------------------
def test_eagle3_on_thor_with_k5(catalog):
    choice = select_speculation(catalog, "nvidia/Llama-3.1-8B-Instruct-FP4", "eagle3", "thor")
    assert (choice["method"], choice["model"], choice["num_speculative_tokens"]) == (
        "eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", 5)
    assert choice["weight_bytes"] == 850000000


def test_eagle3_on_agx_orin_with_k3(catalog):
    choice = select_speculation(catalog, "RedHatAI/Qwen3-8B-quantized.w4a16", "eagle3", "agx_orin")
    assert (choice["method"], choice["model"], choice["num_speculative_tokens"]) == (
        "eagle3", "RedHatAI/Qwen3-8B-speculator.eagle3", 3)


def test_draft_model_preference_starts_at_the_family_k(catalog):
    # One k per family for both methods (docs/catalog.md): 5 on Thor, 3 on AGX Orin.
    choice = select_speculation(catalog, "Qwen/Qwen3-4B", "draft_model", "thor-agx")
    assert (choice["method"], choice["model"], choice["num_speculative_tokens"]) == ("draft_model", "Qwen/Qwen3-0.6B", 5)
    choice = select_speculation(catalog, "Qwen/Qwen3-4B", "draft_model", "agx_orin")
    assert choice["num_speculative_tokens"] == 3


@pytest.mark.parametrize("family, named", [("orin_nano", "orin_nano"), ("orin_nx", "orin_nx"),
                                           ("orin-nano", "orin_nano")])
def test_small_orins_get_no_speculation(catalog, family, named):
    choice = select_speculation(catalog, "nvidia/Llama-3.1-8B-Instruct-FP4", "eagle3", family)
    assert choice["method"] is None and choice["model"] is None
    assert named in choice["reason"] and "Thor and AGX Orin" in choice["reason"]


@pytest.mark.parametrize("family", [None, "unknown", "agx_xavier", "xavier_nx"])
def test_unknown_family_is_off(catalog, family):
    choice = select_speculation(catalog, "Qwen/Qwen3-8B", "eagle3", family)
    assert choice["method"] is None and "family" in choice["reason"]


def test_unknown_target_names_catalog_variable(catalog):
    choice = select_speculation(catalog, "mistralai/Mistral-7B-Instruct-v0.3", "eagle3", "thor")
    assert choice["method"] is None
    assert "vllm_server_model_catalog" in choice["reason"] and "Mistral-7B" in choice["reason"]


def test_preferred_off_and_bad_preference(catalog):
    assert select_speculation(catalog, "Qwen/Qwen3-8B", "off", "thor")["method"] is None
    with pytest.raises(SpecConfigError, match="preferred_method"):
        select_speculation(catalog, "Qwen/Qwen3-8B", "medusa", "thor")
    with pytest.raises(SpecConfigError, match="mapping"):
        select_speculation(["not", "a", "mapping"], "Qwen/Qwen3-8B", "eagle3", "thor")


def test_malformed_candidates_are_skipped_with_reason():
    catalog = {"a/target": _entry(
        eagle3_heads=[{"model": "bad head", "weight_bytes": 5}, {"model": "x/head"}],
        draft_models=[{"model": "x/draft", "weight_bytes": 3, "vocab_size": 999}])}
    choice = select_speculation(catalog, "a/target", "eagle3", "thor")
    assert choice["method"] is None
    assert "space" in choice["reason"] and "weight_bytes" in choice["reason"] and "vocab_size 999" in choice["reason"]


def test_first_valid_head_wins():
    catalog = {"a/target": _entry(eagle3_heads=[{"model": "bad;head", "weight_bytes": 5},
                                                {"model": "x/head", "weight_bytes": 7}])}
    assert select_speculation(catalog, "a/target", "eagle3", "thor")["model"] == "x/head"


def test_catalog_model_facts(catalog):
    assert catalog_model_facts(catalog, "Qwen/Qwen3-0.6B")["kv_bytes_per_token"] == 114688
    assert catalog_model_facts(catalog, "Qwen/Qwen3-8B")["weight_bytes"] == 16380000000
    assert catalog_model_facts(catalog, "nobody/nothing") is None
    assert catalog_model_facts("nope", "Qwen/Qwen3-8B") is None
