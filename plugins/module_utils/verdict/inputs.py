# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The one check of benchmark numbers before any verdict arithmetic (stdlib only).

spec_decide, the TTFT guard and spec_choose_k read the same vllm_bench results. A NaN
compares false with everything (a NaN TPOT once picked k = 7), ``inf`` turns into
``Infinity`` in the metrics, and ``bool("false")`` is True (``ok: "false"`` once counted
as a success). So every number they read is checked here first: a missing value is None,
anything else must be a finite, non-negative int or float (not a bool, not a string), and a
request's ``ok`` must be a real boolean. A bad value raises InputError naming the field
(``round 3 (candidate) concurrency 1 request 7 ttft_ms``) and the rule id
``input.bench_number`` / ``input.bench_flag``.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

NUMBER_RULE = "input.bench_number"
FLAG_RULE = "input.bench_flag"

# Numbers a level (one runs[] entry) and one of its requests may carry; the verdicts read these.
RUN_NUMBERS = ("completed", "failed", "output_tokens", "duration_s", "throughput_tok_s", "tpot_ms_p50",
               "ttft_ms_p50", "tpot_ms_p90", "tpot_ms_p99", "ttft_ms_p90", "ttft_ms_p99")
REQUEST_NUMBERS = ("ttft_ms", "tpot_ms", "e2e_ms", "output_tokens", "start_s", "end_s")
SPEC_NUMBERS = ("drafts", "draft_tokens", "accepted_tokens", "acceptance_rate", "mean_acceptance_length")


class InputError(ValueError):
    """A benchmark number that cannot be evidence; the message names the field and the rule."""


def number(value, field):
    """``value`` as a float, None when missing; InputError for NaN, inf, negatives and non-numbers."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError("%s: %s must be a number, got %r (%s). Fix: pass the vllm_bench result unchanged "
                         "(numbers, not strings)" % (NUMBER_RULE, field, value, type(value).__name__))
    out = float(value)
    if math.isnan(out) or math.isinf(out):
        raise InputError("%s: %s must be a finite number, got %r. Fix: re-run the benchmark; a NaN or infinite "
                         "value means the measurement broke" % (NUMBER_RULE, field, value))
    if out < 0:
        raise InputError("%s: %s must not be negative, got %r: a benchmark cannot measure a negative rate, "
                         "count or time; check where the result came from" % (NUMBER_RULE, field, value))
    return out


def flag(value, field):
    """A request's ``ok``: a real boolean. ``"false"`` would be True in Python, so strings are refused."""
    if not isinstance(value, bool):
        raise InputError("%s: %s must be true or false (a boolean), got %r (%s). Fix: pass the vllm_bench "
                         "result unchanged" % (FLAG_RULE, field, value, type(value).__name__))
    return value


def check_run(run, where):
    """Check one level (``runs[]`` entry) of a vllm_bench result and its per-request list; return it."""
    if not isinstance(run, dict):
        raise InputError("%s: %s must be a mapping (one level of a vllm_bench result), got %r"
                         % (NUMBER_RULE, where, type(run).__name__))
    for key in RUN_NUMBERS:
        number(run.get(key), "%s %s" % (where, key))
    requests = run.get("requests")
    if requests is not None and not isinstance(requests, list):
        raise InputError("%s: %s requests must be a list, got %s" % (NUMBER_RULE, where, type(requests).__name__))
    for i, req in enumerate(requests or []):
        what = "%s request %d" % (where, i)
        if not isinstance(req, dict):
            raise InputError("%s: %s must be a mapping, got %r" % (NUMBER_RULE, what, type(req).__name__))
        flag(req.get("ok"), what + " ok")
        for key in REQUEST_NUMBERS:
            number(req.get(key), "%s %s" % (what, key))
    spec = run.get("spec_decode")
    if spec is not None:
        check_spec(spec, where + " spec_decode")
    return run


def check_spec(spec, where):
    """Check a ``spec_decode`` block: counters finite and non-negative, per-position rates in [0, 1]."""
    if not isinstance(spec, dict):
        raise InputError("%s: %s must be a mapping, got %r" % (NUMBER_RULE, where, type(spec).__name__))
    for key in SPEC_NUMBERS:
        number(spec.get(key), "%s %s" % (where, key))
    rates = spec.get("per_position")
    if rates is None:
        return spec
    if not isinstance(rates, list):
        raise InputError("%s: %s per_position must be a list of rates, got %r" % (NUMBER_RULE, where, rates))
    for i, rate in enumerate(rates):
        value = number(rate, "%s per_position[%d]" % (where, i))
        if value is not None and value > 1.0:
            raise InputError("%s: %s per_position[%d] must be a rate from 0 to 1, got %r"
                             % (NUMBER_RULE, where, i, rate))
    return spec


def check_result(result, where):
    """Check every level of one vllm_bench result and its ``spec_decode``; return the result."""
    if not isinstance(result, dict):
        raise InputError("%s: %s must be a vllm_bench result (a mapping), got %r"
                         % (NUMBER_RULE, where, type(result).__name__))
    runs = result.get("runs")
    if runs is not None and not isinstance(runs, list):
        raise InputError("%s: %s runs must be a list, got %s" % (NUMBER_RULE, where, type(runs).__name__))
    for run in runs or []:
        label = run.get("concurrency") if isinstance(run, dict) else "?"
        check_run(run, "%s concurrency %s" % (where, label))
    if result.get("spec_decode") is not None:
        check_spec(result["spec_decode"], where + " spec_decode")
    return result
