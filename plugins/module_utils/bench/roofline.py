# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""How far a board's decode speed is from its memory-bandwidth limit (stdlib only).

Single-stream decode on a Jetson is bound by memory: every step streams the
target's weights (and, with speculation, the drafter's weights once per drafted
token) plus the KV cache of the context.  The limit in tokens per second is

    bandwidth / bytes read per step * tokens emitted per step

where tokens per step is 1 without speculation and the measured acceptance length
with it.  The achieved fraction (measured tok/s over that limit) tells an operator
whether a slow board is far from its physics (software, clocks, power mode) or
already at it (only fewer bytes - quantization, a smaller model - can help).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

GB = 1e9  # the board tables give bandwidth in decimal GB/s, as NVIDIA's data sheets do


class RooflineError(ValueError):
    pass


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise RooflineError("%s must be a positive number, got %r" % (name, value))
    return float(value)


def bytes_per_step(target_weight_bytes, draft_weight_bytes=0, k=0, kv_bytes_per_token=0,
                   context_tokens=0):
    """Bytes one decode step reads: target weights, k draft passes, the context's KV."""
    total = _positive("target_weight_bytes", target_weight_bytes)
    if k:
        total += int(k) * float(draft_weight_bytes or 0)
    return total + float(kv_bytes_per_token or 0) * max(0, int(context_tokens or 0))


def roofline(decode_tok_s, bandwidth_gb_s, target_weight_bytes, draft_weight_bytes=0, k=0,
             acceptance_length=None, kv_bytes_per_token=0, context_tokens=0):
    """Return {limit_tok_s, achieved_fraction, bytes_per_step, tokens_per_step}.

    ``decode_tok_s`` is one stream's decode rate (1000 / TPOT p50 in ms)."""
    rate = _positive("decode_tok_s", decode_tok_s)
    bw = _positive("bandwidth_gb_s", bandwidth_gb_s) * GB
    step_bytes = bytes_per_step(target_weight_bytes, draft_weight_bytes, k, kv_bytes_per_token,
                                context_tokens)
    tokens = 1.0
    if k:
        tokens = _positive("acceptance_length (speculation on needs the measured length)",
                           acceptance_length)
    limit = bw / step_bytes * tokens
    return {"limit_tok_s": round(limit, 3), "achieved_fraction": round(rate / limit, 4),
            "bytes_per_step": int(step_bytes), "tokens_per_step": tokens}


def result_roofline(result, bandwidth_gb_s, target_weight_bytes, draft_weight_bytes=0, k=0,
                    kv_bytes_per_token=0, concurrency=1, time_scale=1.0):
    """Roofline of a vllm_bench result at ``concurrency`` for a known bandwidth, or None.

    None when the bandwidth is unknown or the level has no TPOT; context is the prompt plus
    half the output (the mean context a decode step reads). ``time_scale`` converts a
    simulated board's wall time back to board time (the stand-in runs ``1 / time_scale``
    times faster)."""
    run = next((r for r in (result or {}).get("runs") or [] if r.get("concurrency") == concurrency), None)
    if not bandwidth_gb_s or not run or not run.get("tpot_ms_p50"):
        return None
    config = result.get("config") or {}
    context = int(config.get("input_len") or 0) + int(config.get("output_len") or 0) // 2
    spec = run.get("spec_decode") or result.get("spec_decode") or {}
    length = spec.get("mean_acceptance_length") if k else None
    out = roofline(1000.0 / run["tpot_ms_p50"] * float(time_scale), bandwidth_gb_s, target_weight_bytes,
                   draft_weight_bytes, k, length, kv_bytes_per_token, context)
    out["bandwidth_gb_s"] = bandwidth_gb_s
    return out


def limit_roofline(result, limit, speculates, concurrency=1):
    """result_roofline against ``limit`` ({bandwidth_gbps, target_weight_bytes, draft_weight_bytes,
    kv_bytes_per_token, k}: record.roofline_limit), in board time; the drafter's passes count only when the
    arm ``speculates``. None when the limit or the result cannot say (the verdict and the report both ask)."""
    if not limit:
        return None
    try:
        return result_roofline(result, limit["bandwidth_gbps"], limit["target_weight_bytes"],
                               limit["draft_weight_bytes"] if speculates else 0, limit["k"] if speculates else 0,
                               limit["kv_bytes_per_token"], concurrency, time_scale_of(result) or 1.0)
    except (RooflineError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def time_scale_of(result):
    """The stand-in's time_scale from a simulated result's label ("thor_t5000; time_scale=0.1"), or None."""
    match = re.search(r"time_scale=([0-9.eE+-]+)", str((result or {}).get("simulated") or ""))
    try:
        return float(match.group(1)) if match else None
    except ValueError:
        return None
