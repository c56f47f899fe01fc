# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Per-round evidence for the sequential verdict: one number per metric and its noise.

A benchmark round (one vllm_bench result) gives, for each concurrency level,
the log of its throughput and the log of its TPOT median, each with the
variance that the round's own requests imply.  Working in logs turns "the
candidate is 30 % faster" into a difference of means, and the variance of a
round lets a round of 20 requests weigh less than a round of 80.

Pure standard library, Python 3.8+.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

# Standard error of a sample median relative to that of the mean for a
# normal (here: log-normal) sample: sqrt(pi / 2).
MEDIAN_SE_FACTOR = 1.2533


class EvidenceError(ValueError):
    """A benchmark result that cannot be evidence (negative or non-numeric numbers)."""


def number(value, what):
    """Float or None (missing); negative or non-numeric values are refused naming ``what``."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise EvidenceError("%s must be a number, got %r" % (what, value))
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise EvidenceError("%s must be a number, got %r" % (what, value))
    if math.isnan(out) or math.isinf(out):
        raise EvidenceError("%s must be a finite number, got %r" % (what, value))
    if out < 0:
        raise EvidenceError("%s must not be negative, got %r: a benchmark cannot measure a "
                            "negative rate or time; check where the result came from" % (what, value))
    return out


def find_run(result, concurrency):
    """The ``runs[]`` entry of ``concurrency`` in one vllm_bench result, or None."""
    for run in (result or {}).get("runs") or []:
        if not isinstance(run, dict):
            continue
        try:
            if int(run.get("concurrency")) == int(concurrency):
                return run
        except (TypeError, ValueError):
            continue
    return None


def _var(values):
    n = len(values)
    if n < 2:
        return None
    m = math.fsum(values) / n
    return math.fsum((v - m) ** 2 for v in values) / (n - 1)


def _median(values):
    data = sorted(values)
    n = len(data)
    mid = n // 2
    return data[mid] if n % 2 else (data[mid - 1] + data[mid]) / 2.0


def _ok_requests(run, where):
    out = []
    for i, req in enumerate(run.get("requests") or []):
        if not isinstance(req, dict) or not req.get("ok"):
            continue
        what = "%s request %d" % (where, i)
        tok = number(req.get("output_tokens"), what + " output_tokens")
        e2e = number(req.get("e2e_ms"), what + " e2e_ms")
        tpot = number(req.get("tpot_ms"), what + " tpot_ms")
        out.append((tok, e2e, tpot))
    return out


_CACHE = {}
_CACHE_SIZE = 1024


def level_evidence(run, where, request_cv_prior):
    """``_level_evidence`` remembered per run object.

    The sequential loop asks again after every round with all earlier rounds;
    the entry keeps a reference to the run, so its id cannot be reused while
    it is cached (Ansible hands a filter fresh objects on every call anyway).
    """
    key = (id(run), request_cv_prior)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is run:
        return dict(hit[1])
    out = _level_evidence(run, where, request_cv_prior)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    _CACHE[key] = (run, out)
    return dict(out)


def _level_evidence(run, where, request_cv_prior):
    """Evidence of one level of one round.

    Returns ``{completed, failed, duration_s, thr, thr_var, tpot, tpot_var,
    per_request}`` where ``thr``/``tpot`` are natural logs of the throughput
    (tok/s) and the TPOT median (ms), or None when the level measured nothing
    usable.  Without per-request data (an older vllm_bench) the variances come
    from ``request_cv_prior`` and the request count.
    """
    concurrency = int(run.get("concurrency") or 1)
    completed = int(number(run.get("completed"), where + " completed") or 0)
    failed = int(number(run.get("failed"), where + " failed") or 0)
    duration = number(run.get("duration_s"), where + " duration_s") or 0.0
    thr = number(run.get("throughput_tok_s"), where + " throughput_tok_s")
    tpot_p50 = number(run.get("tpot_ms_p50"), where + " tpot_ms_p50")
    ev = {"completed": completed, "failed": failed, "duration_s": duration,
          "thr": None, "thr_var": None, "tpot": None, "tpot_var": None, "per_request": False}
    reqs = _ok_requests(run, where)
    prior_var = request_cv_prior ** 2 / max(1, completed)
    if thr:
        # Without per-request data: the level's own tokens / duration.
        ev["thr"] = math.log(thr)
        ev["thr_var"] = prior_var
        pairs = [(t, e) for t, e, _p in reqs if t is not None and e]
        tok_sum = math.fsum(t for t, _e in pairs)
        if len(pairs) >= 2 and tok_sum > 0:
            # With them: concurrency x sum(tokens) / sum(request time), the
            # rate while all streams are busy.  tokens / duration also carries
            # the ragged end of the last wave (a few long requests finishing
            # alone), which at c=8 and 30 prompts doubled the round-to-round
            # noise without saying anything about speculation.  Failed
            # requests delivered nothing: the fraction that succeeded scales
            # the rate, so failures count against the arm that failed them.
            ratio = tok_sum / math.fsum(e for _t, e in pairs)
            share_ok = float(len(pairs)) / max(len(pairs), completed + failed)
            ev["thr"] = math.log(concurrency * ratio * 1000.0 * share_ok)
            # Relative variance of the ratio estimator (delta method), from
            # the spread of the requests themselves.
            mean_tok = tok_sum / len(pairs)
            ev["thr_var"] = _var([(t - ratio * e) / mean_tok for t, e in pairs]) / len(pairs)
            ev["per_request"] = True
    tpots = [p for _t, _e, p in reqs if p]
    if len(tpots) >= 2:
        logs = [math.log(p) for p in tpots]
        ev["tpot"] = math.log(_median(tpots))
        ev["tpot_var"] = MEDIAN_SE_FACTOR ** 2 * _var(logs) / len(logs)
    elif tpot_p50:
        ev["tpot"] = math.log(tpot_p50)
        ev["tpot_var"] = MEDIAN_SE_FACTOR ** 2 * prior_var
    return ev


def acceptance_rate(result):
    """The result's spec-decode acceptance rate, or None."""
    sd = (result or {}).get("spec_decode")
    if not isinstance(sd, dict):
        return None
    try:
        return number(sd.get("acceptance_rate"), "spec_decode.acceptance_rate")
    except EvidenceError:
        return None
