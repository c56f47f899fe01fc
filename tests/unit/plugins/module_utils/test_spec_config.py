# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Speculative config validation and rendering; model references."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import (
    SpecConfigError, render_spec_config_json, validate_model_ref,
    validate_served_name, validate_spec_config,
)

EAGLE = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 5}


# --- model references ---------------------------------------------------------------------------
@pytest.mark.parametrize("ref", [
    "meta-llama/Llama-3.1-8B-Instruct", "RedHatAI/Qwen3-8B-speculator.eagle3", "AngelSlim/Qwen3-4B_eagle3",
    "/models/llama-3.1-8b", "/var/lib/hf/hub/models--a--b/snapshots/abc123",
])
def test_validate_model_ref_accepts(ref):
    assert validate_model_ref(ref) == ref


@pytest.mark.parametrize("ref, words", [
    ("owner/name;rm -rf /", "';'"), ("owner/$(id)", "'\\$'"), ("owner/`id`", "backtick"),
    ('owner/"x"', "double quote"), ("owner/'x'", "single quote"), ("owner/a b", "space"),
    ("owner/a\nb", "newline"), ("owner/100%", "'%'"), ("owner\\name", "backslash"),
    ("/models/../etc", "'\\.\\.' segment"), ("name-only", "neither"), ("-owner/name", "neither"),
    ("owner/name/extra", "neither"), ("relative/path/", "neither"), ("", "empty"),
])
def test_validate_model_ref_refuses_with_rule(ref, words):
    with pytest.raises(SpecConfigError, match=words) as err:
        validate_model_ref(ref)
    assert "owner/name" in str(err.value)


def test_validate_model_ref_refuses_non_string():
    with pytest.raises(SpecConfigError, match="must be a string"):
        validate_model_ref(42)


@pytest.mark.parametrize("name, ok", [("llama", True), ("meta-llama/Llama-3.1-8B", True),
                                      ("a b", False), ("x;y", False), ("/abs", False), ("", False)])
def test_validate_served_name(name, ok):
    if ok:
        assert validate_served_name(name) == name
    else:
        with pytest.raises(SpecConfigError, match="served model name"):
            validate_served_name(name)


# --- validate_spec_config -----------------------------------------------------------------------
def test_string_config_is_refused_with_hint():
    with pytest.raises(SpecConfigError, match="structured variable"):
        validate_spec_config('{"method": "eagle3"}')


def test_tensor_parallel_size_gives_vllm_message():
    cfg = dict(EAGLE, tensor_parallel_size=1)
    with pytest.raises(SpecConfigError, match="Please pass 'draft_tensor_parallel_size' instead"):
        validate_spec_config(cfg)


@pytest.mark.parametrize("patch, match", [
    ({"method": "eagle-3"}, "method must be one of"),
    ({"method": "custom_class"}, "method must be one of"),
    ({"num_speculative_tokens": 0}, "between 1 and 10"),
    ({"num_speculative_tokens": 11}, "between 1 and 10"),
    ({"num_speculative_tokens": True}, "must be an integer"),
    ({"num_speculative_tokens": "5"}, "must be an integer"),
    ({"draft_tensor_parallel_size": 9}, "between 1 and 8"),
    ({"draft_tensor_parallel_size": False}, "must be an integer"),
    ({"max_model_len": 0}, ">= 1"),
    ({"enforce_eager": "yes"}, "boolean"),
    ({"quantization": "FP8; x"}, "quantization"),
    ({"revision": "../main"}, "revision"),
    ({"prompt_lookup_max": 4}, "only applies to method ngram"),
    ({"speculative_model": "x/y"}, "no vLLM SpeculativeConfig"),
    ({"target_model_config": "x"}, "no vLLM SpeculativeConfig"),
    ({"disable_padded_drafter_batch": [True]}, "scalar JSON"),
    ({"model": "bad model"}, "space"),
])
def test_bad_configs_are_refused(patch, match):
    cfg = dict(EAGLE, **patch)
    with pytest.raises(SpecConfigError, match=match):
        validate_spec_config(cfg)


def test_model_required_except_ngram_suffix_and_optional_for_mtp():
    with pytest.raises(SpecConfigError, match="model is required"):
        validate_spec_config({"method": "draft_model", "num_speculative_tokens": 4})
    assert validate_spec_config({"method": "mtp", "num_speculative_tokens": 1})["method"] == "mtp"
    with pytest.raises(SpecConfigError, match="must not be set for method ngram"):
        validate_spec_config({"method": "ngram", "model": "a/b", "num_speculative_tokens": 3})
    with pytest.raises(SpecConfigError, match="num_speculative_tokens is required"):
        validate_spec_config({"method": "suffix"})


def test_ngram_lookup_bounds():
    ok = validate_spec_config({"method": "ngram", "num_speculative_tokens": 3,
                               "prompt_lookup_max": 5, "prompt_lookup_min": 2})
    assert ok["prompt_lookup_min"] == 2
    with pytest.raises(SpecConfigError, match="prompt_lookup_min=6 must be <= prompt_lookup_max=5"):
        validate_spec_config({"method": "ngram", "num_speculative_tokens": 3,
                              "prompt_lookup_max": 5, "prompt_lookup_min": 6})
    with pytest.raises(SpecConfigError, match=">= 1"):
        validate_spec_config({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 0})


def test_extra_keys_are_explicit_and_scalar():
    out = validate_spec_config(EAGLE, extra={"disable_padded_drafter_batch": True, "draft_sample_method": "greedy"})
    assert out["disable_padded_drafter_batch"] is True
    for extra, match in (({"x": [1]}, "scalar JSON"), ({"x": {"a": 1}}, "scalar JSON"),
                         ({"Bad-Key": 1}, "lower_snake_case"), ({"model": "a/b"}, "regular"),
                         ({"tensor_parallel_size": 1}, "regular"), ({"x": "a b"}, "string values"),
                         ({"x": float("nan")}, "finite")):
        with pytest.raises(SpecConfigError, match=match):
            validate_spec_config(EAGLE, extra=extra)
    with pytest.raises(SpecConfigError, match="mapping"):
        validate_spec_config(EAGLE, extra=["x"])


# --- render ---------------------------------------------------------------------------------------
def test_render_uses_documented_key_order_and_compact_separators():
    cfg = {"enforce_eager": False, "num_speculative_tokens": 3, "max_model_len": 2048,
           "draft_tensor_parallel_size": 1, "model": "RedHatAI/Qwen3-8B-speculator.eagle3", "method": "eagle3"}
    text = render_spec_config_json(cfg)
    assert text == ('{"method":"eagle3","model":"RedHatAI/Qwen3-8B-speculator.eagle3",'
                    '"num_speculative_tokens":3,"draft_tensor_parallel_size":1,'
                    '"enforce_eager":false,"max_model_len":2048}')


def test_render_is_stable_and_ascii():
    a = render_spec_config_json(dict(EAGLE))
    b = render_spec_config_json(dict(reversed(list(EAGLE.items()))))
    assert a == b
    assert a.isascii() if hasattr(a, "isascii") else all(ord(c) < 128 for c in a)
