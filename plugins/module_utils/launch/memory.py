# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Does target + draft/head + KV cache + overhead fit a Jetson at a gpu_memory_utilization?

Standard library only, Python 3.8+.  ``compute_headroom`` is pure arithmetic;
``gather_model_facts`` reads local model files (never downloads) and falls back to
the catalog.  Rules (docs/catalog.md has the sources):

1. vLLM refuses to start unless free memory >= utilization x total
   ("Free memory on device (...) on startup is less than desired GPU memory
   utilization"); free = MemAvailable + memory held by the vLLM service that is
   about to be restarted (``reclaimable_bytes``).
2. vLLM's share (utilization x total) must hold the weights, the KV cache and
   the activation/CUDA-graph overhead.
3. Keep ``reserve_bytes`` (default 2 GiB, skill: "Free at least ~2 GB") outside
   vLLM: (1 - utilization) x total >= reserve.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
from fractions import Fraction

from ansible_collections.jetson.specdec.plugins.module_utils.launch.safetensors import (
    ModelFileError, local_model_dir, read_json_file, weight_bytes_in_dir,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.catalog import (
    CATALOG_VAR, catalog_model_facts,
)
from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import (
    MEMORY_RESERVE_BYTES, UTILIZATION_CEILING, UTILIZATION_MAX, UTILIZATION_MIN,
)

GIB = 1024 ** 3
MIB = 1024 ** 2

# Allowance for what vLLM needs besides weights and KV cache: the profiling run's
# activation peak, CUDA graphs and allocator slack.  An estimate, not a measurement:
# 1 GiB for single-digit-billion models at vLLM's default batch sizes.  Speculation
# adds the draft's activations and CUDA graphs and the rejection sampler's buffers
# (vllm#8073: speculative runs OOM where plain runs did not), more for a full draft
# model than for a one-layer EAGLE head.  Override with ``overhead_bytes``.
BASE_OVERHEAD_BYTES = GIB
SPECULATIVE_OVERHEAD_BYTES = {"draft_model": 768 * MIB}
DEFAULT_SPECULATIVE_OVERHEAD_BYTES = 512 * MIB

KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")


class SpecMemoryError(ValueError):
    """Inputs to the headroom check are unusable (message names the option and the fix)."""


def gib(value):
    """Bytes -> GiB rounded to 2 decimals, for human-readable sentences."""
    return round(value / float(GIB), 2)


def _int_option(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecMemoryError("%s must be an integer number of bytes/tokens, got %r" % (name, value))
    if value < minimum:
        raise SpecMemoryError("%s must be >= %d, got %d" % (name, minimum, value))
    return value


def validate_utilization(name, value):
    """Return ``value`` as float if within [UTILIZATION_MIN, UTILIZATION_MAX], else raise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise SpecMemoryError("%s must be a number, got %r" % (name, value))
    if value < UTILIZATION_MIN or value > UTILIZATION_MAX:
        raise SpecMemoryError(
            "%s=%s is outside [%.2f, %.2f]: below %.2f vLLM has no room for a KV cache, above %.2f the "
            "OS and other services on the shared Jetson memory starve" % (
                name, value, UTILIZATION_MIN, UTILIZATION_MAX, UTILIZATION_MIN, UTILIZATION_MAX))
    return float(value)


def kv_element_bytes(kv_cache_dtype="auto", model_dtype=None):
    """Bytes per cached K/V element: fp8 caches 1; 'auto' follows the model (fp32 4, else 2)."""
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise SpecMemoryError("kv_cache_dtype must be one of %s, got %r"
                              % (", ".join(KV_CACHE_DTYPES), kv_cache_dtype))
    if kv_cache_dtype != "auto":
        return 1
    return 4 if model_dtype in ("float32", "float") else 2


def kv_bytes_per_token_from_config(config, kv_cache_dtype="auto"):
    """KV bytes per token from an HF config.json: 2 (K and V) x layers x kv_heads x head_dim x bytes."""
    if not isinstance(config, dict):
        raise SpecMemoryError("config must be a mapping (the parsed config.json)")
    # Multimodal configs keep the language model under text_config.
    cfg = config["text_config"] if isinstance(config.get("text_config"), dict) else config

    def positive(key):
        value = cfg.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SpecMemoryError("config.json has no positive integer %s (got %r)" % (key, value))
        return value

    layers = positive("num_hidden_layers")
    heads = positive("num_attention_heads")
    kv_heads = positive("num_key_value_heads") if cfg.get("num_key_value_heads") is not None else heads
    if cfg.get("head_dim") is not None:
        head_dim = positive("head_dim")
    else:
        hidden = positive("hidden_size")
        if hidden % heads:
            raise SpecMemoryError("config.json hidden_size %d is not divisible by num_attention_heads %d"
                                  % (hidden, heads))
        head_dim = hidden // heads
    # transformers >= 4.56 writes "dtype"; older configs write "torch_dtype".
    elem = kv_element_bytes(kv_cache_dtype, cfg.get("torch_dtype") or cfg.get("dtype"))
    return 2 * layers * kv_heads * head_dim * elem


def overhead_allowance(method=None):
    """Documented activation/CUDA-graph allowance in bytes, larger with speculation."""
    if not method:
        return BASE_OVERHEAD_BYTES
    return BASE_OVERHEAD_BYTES + SPECULATIVE_OVERHEAD_BYTES.get(method, DEFAULT_SPECULATIVE_OVERHEAD_BYTES)


def _checks(util, total, required, free, reserve):
    # Exact decimal arithmetic (0.57 stays 57/100) so the verdict agrees with recommend_utilization.
    budget = Fraction(repr(util)) * total
    return required <= budget, free >= budget, total - budget >= reserve


def recommend_utilization(required, total, free, reserve, ceiling):
    """Largest utilization (step 0.01, <= ceiling, >= UTILIZATION_MIN) passing all three rules, or None."""
    top = int(math.floor(ceiling * 100 + 1e-9))
    bottom = int(math.ceil(UTILIZATION_MIN * 100 - 1e-9))
    for hundredths in range(top, bottom - 1, -1):
        # Integer arithmetic: 0.57 * total in floats can land a byte short of an exact fit.
        share_x100 = hundredths * total
        if (required * 100 <= share_x100 and free * 100 >= share_x100
                and total * 100 - share_x100 >= reserve * 100):
            return hundredths / 100.0
    return None


def compute_headroom(target_weight_bytes, kv_bytes_per_token, max_model_len, memory_total_bytes,
                     memory_available_bytes, gpu_memory_utilization, max_num_seqs=1, method=None,
                     spec_weight_bytes=0, spec_kv_bytes_per_token=0, reclaimable_bytes=0,
                     reserve_bytes=MEMORY_RESERVE_BYTES,
                     max_gpu_memory_utilization=UTILIZATION_CEILING, overhead_bytes=None):
    """Return {fits, required_bytes, available_bytes, budget_bytes, recommended_gpu_memory_utilization,
    reasons, warnings, breakdown}.  All sizes in bytes."""
    total = _int_option("memory_total_bytes", memory_total_bytes, 1)
    available = _int_option("memory_available_bytes", memory_available_bytes, 0)
    reclaimable = _int_option("reclaimable_bytes", reclaimable_bytes, 0)
    reserve = _int_option("reserve_bytes", reserve_bytes, 0)
    target = _int_option("target weight bytes", target_weight_bytes, 1)
    kv_per_token = _int_option("kv_bytes_per_token", kv_bytes_per_token, 1)
    spec_weights = _int_option("speculative weight bytes", spec_weight_bytes, 0)
    spec_kv_per_token = _int_option("speculative kv_bytes_per_token", spec_kv_bytes_per_token, 0)
    model_len = _int_option("max_model_len", max_model_len, 1)
    seqs = _int_option("max_num_seqs", max_num_seqs, 1)
    util = validate_utilization("gpu_memory_utilization", gpu_memory_utilization)
    ceiling = validate_utilization("max_gpu_memory_utilization", max_gpu_memory_utilization)
    overhead = overhead_allowance(method) if overhead_bytes is None else _int_option(
        "overhead_bytes", overhead_bytes, 0)
    if available > total:
        raise SpecMemoryError("memory_available_bytes (%d) is larger than memory_total_bytes (%d): pass "
                              "MemAvailable and MemTotal from the same host" % (available, total))
    # ngram/suffix draft from text; mtp without a model reuses the target's own MTP layers.
    if method and method not in ("ngram", "suffix", "mtp") and spec_weights == 0:
        raise SpecMemoryError("method %s loads a draft model or head, but its weight size is 0" % method)

    tokens = model_len * seqs
    kv_cache = kv_per_token * tokens
    spec_kv_cache = spec_kv_per_token * tokens
    required = target + spec_weights + kv_cache + spec_kv_cache + overhead
    free = min(total, available + reclaimable)
    budget = int(util * total)
    fits_budget, free_ok, reserve_ok = _checks(util, total, required, free, reserve)

    reasons, warnings = [], []
    spec_part = ""
    if spec_weights or spec_kv_cache:
        spec_part = " + %s weights %.2f GiB + its KV %.2f GiB" % (method, gib(spec_weights), gib(spec_kv_cache))
    need = ("target weights %.2f GiB%s + KV cache %.2f GiB (%d tokens = max_model_len %d x max_num_seqs %d "
            "x %d B/token) + overhead %.2f GiB = %.2f GiB" % (
                gib(target), spec_part, gib(kv_cache), tokens, model_len, seqs, kv_per_token,
                gib(overhead), gib(required)))
    if fits_budget:
        reasons.append("vLLM's share %.2f x %.2f GiB = %.2f GiB holds %s" % (util, gib(total), gib(budget), need))
    else:
        reasons.append("does not fit: vLLM's share %.2f x %.2f GiB = %.2f GiB is smaller than %s"
                       % (util, gib(total), gib(budget), need))
    if not free_ok:
        reasons.append("vLLM needs free memory >= utilization x total at startup: %.2f GiB free "
                       "(MemAvailable %.2f GiB + reclaimable %.2f GiB) < %.2f GiB"
                       % (gib(free), gib(available), gib(reclaimable), gib(budget)))
    if not reserve_ok:
        reasons.append("(1 - %.2f) x %.2f GiB = %.2f GiB would stay outside vLLM, below the %.2f GiB "
                       "reserve for the OS and other services" % (util, gib(total), gib(total - budget), gib(reserve)))
    if util > ceiling:
        warnings.append("gpu_memory_utilization %.2f is above max_gpu_memory_utilization %.2f"
                        % (util, ceiling))

    recommended = recommend_utilization(required, total, free, reserve, ceiling)
    if recommended is None:
        lower = required / float(total)
        upper = min(ceiling, free / float(total), 1 - reserve / float(total))
        reasons.append("no gpu_memory_utilization between %.2f and %.2f works: the requirement needs at "
                       "least %.2f, free memory and the reserve allow at most %.2f"
                       % (UTILIZATION_MIN, ceiling, lower, upper))
    elif recommended != util:
        reasons.append("recommended gpu_memory_utilization %.2f (largest value <= %.2f that fits, leaves "
                       "%.2f GiB outside vLLM and is covered by free memory)"
                       % (recommended, ceiling, gib(total - recommended * total)))

    breakdown = {
        "target_weight_bytes": target,
        "speculative_weight_bytes": spec_weights,
        "kv_bytes_per_token": kv_per_token,
        "speculative_kv_bytes_per_token": spec_kv_per_token,
        "kv_cache_tokens": tokens,
        "kv_cache_bytes": kv_cache,
        "speculative_kv_cache_bytes": spec_kv_cache,
        "overhead_bytes": overhead,
        "reserve_bytes": reserve,
        "memory_total_bytes": total,
        "memory_available_bytes": available,
        "reclaimable_bytes": reclaimable,
        "budget_bytes": budget,
        "outside_vllm_bytes": total - budget,
    }
    return {
        "fits": fits_budget and free_ok and reserve_ok,
        "required_bytes": required,
        "available_bytes": free,
        "budget_bytes": budget,
        "recommended_gpu_memory_utilization": recommended,
        "reasons": reasons,
        "warnings": warnings,
        "breakdown": breakdown,
    }


def gather_model_facts(model_ref, hf_home, catalog, kv_cache_dtype="auto", what="target"):
    """Weight bytes and KV bytes/token for ``model_ref``: local files first, catalog second.

    Returns {weight_bytes, weight_source, kv_bytes_per_token, kv_source, warnings};
    a value is None when neither source has it (the caller decides if that is fatal).
    """
    warnings = []
    facts = {"weight_bytes": None, "weight_source": None, "kv_bytes_per_token": None, "kv_source": None}
    model_dir = local_model_dir(model_ref, hf_home)
    if model_dir:
        try:
            facts["weight_bytes"], source = weight_bytes_in_dir(model_dir)
            facts["weight_source"] = "file:" + source
        except ModelFileError as exc:
            warnings.append("%s %s: cannot size the local weights (%s); using the catalog size"
                            % (what, model_ref, exc))
        try:
            config = read_json_file(model_dir.rstrip("/") + "/config.json", "config.json")
            facts["kv_bytes_per_token"] = kv_bytes_per_token_from_config(config, kv_cache_dtype)
            facts["kv_source"] = "file:" + model_dir.rstrip("/") + "/config.json"
        except (ModelFileError, SpecMemoryError) as exc:
            warnings.append("%s %s: no usable config.json (%s); using the catalog kv_bytes_per_token"
                            % (what, model_ref, exc))
    known = catalog_model_facts(catalog, model_ref) or {}
    if facts["weight_bytes"] is None and known.get("weight_bytes") is not None:
        facts["weight_bytes"] = _int_option("%s[%s].weight_bytes" % (CATALOG_VAR, model_ref),
                                            known["weight_bytes"], 1)
        facts["weight_source"] = "catalog"
    if facts["kv_bytes_per_token"] is None and known.get("kv_bytes_per_token") is not None:
        per_token = _int_option("%s[%s].kv_bytes_per_token" % (CATALOG_VAR, model_ref),
                                known["kv_bytes_per_token"], 1)
        # Catalog numbers are for a 16-bit KV cache; an fp8 cache halves them.
        facts["kv_bytes_per_token"] = per_token // 2 if kv_element_bytes(kv_cache_dtype) == 1 else per_token
        facts["kv_source"] = "catalog"
    facts["warnings"] = warnings
    return facts
