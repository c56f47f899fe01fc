# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Percentiles and per-level summaries for vllm_bench (standard library only).

Percentiles use the same rule as numpy's default ``method="linear"`` so our
numbers line up with ``vllm bench serve`` (which calls ``np.percentile``).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math


def percentile(values, p):
    """Return the ``p``-th percentile (0..100) of ``values``, numpy-linear.

    Returns None for an empty sequence: "no data" must not look like 0 ms.
    """
    if not 0 <= p <= 100:
        raise ValueError("percentile must be within [0, 100], got %r" % (p,))
    data = sorted(values)
    n = len(data)
    if n == 0:
        return None
    rank = (n - 1) * (p / 100.0)
    lo = int(math.floor(rank))
    hi = min(lo + 1, n - 1)
    frac = rank - lo
    return data[lo] + (data[hi] - data[lo]) * frac


def mean(values):
    values = list(values)
    if not values:
        return None
    return math.fsum(values) / len(values)


def pstdev(values):
    """Population standard deviation (numpy's default ddof=0)."""
    values = list(values)
    if not values:
        return None
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / len(values))


def coefficient_of_variation(values):
    """Sample CV (stdev with ddof=1 / mean); None when it is undefined."""
    values = list(values)
    if len(values) < 2:
        return None
    m = mean(values)
    if not m:
        return None
    var = math.fsum((v - m) ** 2 for v in values) / (len(values) - 1)
    return math.sqrt(var) / abs(m)


def _ms(value):
    return None if value is None else round(value * 1000.0, 4)


def summarize_level(concurrency, records, duration_s):
    """Build one ``runs[]`` entry from per-request records of one level.

    ``records`` are dicts from bench_client.stream_request: successful ones
    carry ``ttft``, ``latency``, ``itl`` (seconds) and ``output_tokens``.
    Definitions mirror vllm bench serve's calculate_metrics: TPOT only for
    requests with more than one output token; ITL pooled over all requests.
    """
    ttfts, tpots, e2els, itls = [], [], [], []
    output_tokens = 0
    completed = 0
    errors = {}
    for rec in records:
        if not rec.get("ok"):
            reason = rec.get("reason") or "unknown"
            errors[reason] = errors.get(reason, 0) + 1
            continue
        completed += 1
        out = rec.get("output_tokens") or 0
        output_tokens += out
        ttfts.append(rec["ttft"])
        e2els.append(rec["latency"])
        itls.extend(rec.get("itl") or ())
        if out > 1:
            tpots.append((rec["latency"] - rec["ttft"]) / (out - 1))
    failed = len(records) - completed
    duration_s = float(duration_s or 0.0)
    rate = (lambda x: round(x / duration_s, 4)) if duration_s > 0 else (lambda x: 0.0)
    return {
        "concurrency": concurrency,
        "completed": completed,
        "failed": failed,
        "output_tokens": output_tokens,
        "duration_s": round(duration_s, 4),
        "throughput_tok_s": rate(output_tokens),
        "request_throughput": rate(completed),
        "ttft_ms_p50": _ms(percentile(ttfts, 50)),
        "ttft_ms_p90": _ms(percentile(ttfts, 90)),
        "ttft_ms_p99": _ms(percentile(ttfts, 99)),
        "tpot_ms_p50": _ms(percentile(tpots, 50)),
        "tpot_ms_p90": _ms(percentile(tpots, 90)),
        "tpot_ms_p99": _ms(percentile(tpots, 99)),
        "itl_ms_p50": _ms(percentile(itls, 50)),
        "itl_ms_p99": _ms(percentile(itls, 99)),
        "e2e_latency_ms_p50": _ms(percentile(e2els, 50)),
        "e2e_latency_ms_p99": _ms(percentile(e2els, 99)),
        "errors": errors,
    }


def _r(value, digits):
    return None if value is None else round(value, digits)


def request_evidence(records, t0):
    """One entry per measured request, for a verdict that weighs requests, not medians.

    ``ok``, ``ttft_ms``, ``tpot_ms`` (None with fewer than two output tokens, as in
    summarize_level), ``e2e_ms``, ``output_tokens``, and ``start_s``/``end_s`` in
    seconds from ``t0`` (the start of the level's measurement; None for a request
    that never started).  Failed requests keep their place with ``ok`` false.
    """
    out = []
    for rec in records:
        ok = bool(rec.get("ok"))
        tokens = int(rec.get("output_tokens") or 0) if ok else 0
        ttft = rec.get("ttft") if ok else None
        latency = rec.get("latency") if ok else None
        tpot = None
        if ok and tokens > 1 and latency is not None and ttft is not None:
            tpot = (latency - ttft) / (tokens - 1)
        start = rec.get("start")
        end = rec.get("finish")
        out.append({
            "ok": ok,
            "ttft_ms": _ms(ttft),
            "tpot_ms": _ms(tpot),
            "e2e_ms": _ms(latency),
            "output_tokens": tokens,
            "start_s": None if start is None else _r(start - t0, 6),
            "end_s": None if end is None else _r(end - t0, 6),
        })
    return out
