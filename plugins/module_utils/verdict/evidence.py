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

from ansible_collections.jetson.specdec.plugins.module_utils.verdict import inputs

# Standard error of a sample median relative to that of the mean for a
# normal (here: log-normal) sample: sqrt(pi / 2).
MEDIAN_SE_FACTOR = 1.2533


class EvidenceError(inputs.InputError):
    """A benchmark result that cannot be evidence (negative or non-numeric numbers)."""


def number(value, what):
    """Float or None (missing); NaN, inf, negative or non-numeric values are refused naming ``what``
    (the one check, verdict/inputs.py)."""
    try:
        return inputs.number(value, what)
    except inputs.InputError as exc:
        raise EvidenceError(str(exc))


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


def _requests(run, where):
    """(ok requests as (tokens, e2e_ms, tpot_ms), failed requests' occupied ms or None each).

    ``run`` was checked (inputs.check_run): ``ok`` is a real boolean and every number finite."""
    ok, failed = [], []
    for req in run.get("requests") or []:
        if req["ok"]:
            ok.append((req.get("output_tokens"), req.get("e2e_ms"), req.get("tpot_ms")))
        else:
            start, end = req.get("start_s"), req.get("end_s")
            failed.append(1000.0 * (end - start) if start is not None and end is not None and end >= start
                          else None)
    return ok, failed


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
    per_request, ok_n, ok_ms, floor_ms, failed_ms}`` where ``thr``/``tpot`` are
    natural logs of the throughput (tok/s) and the TPOT median (ms), or None
    when the level measured nothing usable.  Without per-request data (an older
    vllm_bench) the variances come from ``request_cv_prior`` and the request
    count.

    With per-request data ``thr`` is the rate of the successful requests only;
    the time failed requests held their streams (``failed_ms``: each one's
    occupied ms, None when unknown) is charged per arm, pooled over all its
    levels and rounds (``failure_charge``), not per round.
    """
    inputs.check_run(run, where)
    concurrency = int(run.get("concurrency") or 1)
    completed = int(number(run.get("completed"), where + " completed") or 0)
    failed = int(number(run.get("failed"), where + " failed") or 0)
    duration = number(run.get("duration_s"), where + " duration_s") or 0.0
    thr = number(run.get("throughput_tok_s"), where + " throughput_tok_s")
    tpot_p50 = number(run.get("tpot_ms_p50"), where + " tpot_ms_p50")
    ev = {"completed": completed, "failed": failed, "duration_s": duration,
          "thr": None, "thr_var": None, "tpot": None, "tpot_var": None, "per_request": False,
          "ok_n": 0, "ok_ms": 0.0, "floor_ms": None, "failed_ms": ()}
    reqs, failed_ms = _requests(run, where)
    prior_var = request_cv_prior ** 2 / max(1, completed)
    if thr:
        # Without per-request data: the level's own tokens / duration (the
        # time failed requests held is in the duration already).
        ev["thr"] = math.log(thr)
        ev["thr_var"] = prior_var
        pairs = [(t, e) for t, e, _p in reqs if t is not None and e]
        tok_sum = math.fsum(t for t, _e in pairs)
        if len(pairs) >= 2 and tok_sum > 0:
            # With them: concurrency x sum(tokens) / sum(request time) of the
            # successful requests, the rate while all streams are busy.
            # tokens / duration also carries the ragged end of the last wave (a
            # few long requests finishing alone), which at c=8 and 30 prompts
            # doubled the round-to-round noise without saying anything about
            # speculation.  Failed requests are not in this rate: what they
            # cost is charged by failure_charge, at the arm's pooled failure
            # rate (a round's own count of hangs, 0 or 1 of 30, is mostly
            # chance and made one round weigh like a 40 % slowdown).
            ok_ms = math.fsum(e for _t, e in pairs)
            ratio = tok_sum / ok_ms
            ev["thr"] = math.log(concurrency * ratio * 1000.0)
            # Relative variance of the ratio estimator (delta method), from
            # the spread of the requests themselves.
            mean_tok = tok_sum / len(pairs)
            ev["thr_var"] = _var([(t - ratio * e) / mean_tok for t, e in pairs]) / len(pairs)
            ev["per_request"] = True
            ev["ok_n"] = len(pairs)
            ev["ok_ms"] = ok_ms
            ev["floor_ms"] = _median([e for _t, e in pairs])
            # Failures the per-request list does not hold (an older result): time unknown.
            ev["failed_ms"] = tuple(failed_ms) + (None,) * max(0, failed - len(failed_ms))
    tpots = [p for _t, _e, p in reqs if p]
    if len(tpots) >= 2:
        logs = [math.log(p) for p in tpots]
        ev["tpot"] = math.log(_median(tpots))
        ev["tpot_var"] = MEDIAN_SE_FACTOR ** 2 * _var(logs) / len(logs)
    elif tpot_p50:
        ev["tpot"] = math.log(tpot_p50)
        ev["tpot_var"] = MEDIAN_SE_FACTOR ** 2 * prior_var
    return ev


def failure_charge(arm_levels, at_levels):
    """What failed requests cost an arm at one level, pooled over all its levels and rounds.

    ``arm_levels``: the evidence of every level of every round of the arm
    (failures pooled from all of them); ``at_levels``: the arm's evidence at
    the level being charged.  Returns ``(penalty, variance, info)``: the log
    throughput the arm loses there, its variance, and ``{failed, requests,
    held_ms}`` for the reasons.

    A failed request delivered nothing but held its stream: it costs the time
    it took, and at least what a successful request at this level takes (the
    client has to send it again), so one that hung to the 120 s deadline costs
    120 s.  The arm's expected failure time per request, ``m`` (the pooled
    failure rate times the mean charge), is charged against the time its
    successful requests take per request, ``(1 - f) * mean e2e``::

        penalty = log(1 + m / ((1 - f) * mean e2e))

    the same for every round of the arm.  Charged per round instead, a 3 % hang
    rate was invisible in the 40 % of 30-request rounds that happened to have
    no hang (two of them read like a good candidate although the hangs showed
    at c=8), and one 120 s hang in a round weighed like a 40 % slowdown for a
    candidate that hangs 0.5 % of the time.  Pooling over levels assumes one
    failure rate for the arm at every concurrency.

    The variance is that of ``m`` as the mean of one charge per request (0 for
    a successful one), carried through the log: few failures leave the rate
    uncertain, and the interval says so.  No failure at all charges nothing:
    a hang rate that never showed cannot be measured.  Levels without
    per-request data are not charged (their tokens / duration holds the time).
    """
    levels = [lvl for lvl in arm_levels if lvl and lvl["per_request"]]
    at = [lvl for lvl in at_levels if lvl and lvl["per_request"]]
    failed_ms = [ms for lvl in levels for ms in lvl["failed_ms"]]
    requests = sum(lvl["ok_n"] + len(lvl["failed_ms"]) for lvl in levels)
    ok_n = sum(lvl["ok_n"] for lvl in at)
    info = {"failed": len(failed_ms), "requests": requests, "held_ms": None}
    if not failed_ms or not ok_n or requests < 2:
        return 0.0, 0.0, info
    floor = _median([lvl["floor_ms"] for lvl in at])
    charges = [max(ms, floor) if ms is not None else floor for ms in failed_ms]
    mean_e2e = math.fsum(lvl["ok_ms"] for lvl in at) / ok_n
    m = math.fsum(charges) / requests
    share_ok = 1.0 - float(len(failed_ms)) / requests
    var_m = (math.fsum(c * c for c in charges) - requests * m * m) / (requests - 1) / requests
    # A rate from a few failures is less certain than the delta method says: the count itself may be one
    # short.  (x + 1) / x widens the variance for 1-3 failures and hardly at 20 (tests/bench/decision_quality.py:
    # the c=1 interval with 3 % hangs held the truth at 0.81-0.87 of looks at rounds 4-9, 0.93-0.96 with it).
    var_m *= (len(failed_ms) + 1.0) / len(failed_ms)
    denom = share_ok * mean_e2e + m
    info["held_ms"] = math.fsum(charges) / len(charges)
    return math.log(denom / (share_ok * mean_e2e)), max(0.0, var_m) / denom ** 2, info


def tokens_per_step(result):
    """Tokens one speculative step emits on average (vLLM's mean acceptance length: 1 + accepted / drafts), or None."""
    sd = (result or {}).get("spec_decode")
    if not isinstance(sd, dict):
        return None
    try:
        value = number(sd.get("mean_acceptance_length"), "spec_decode.mean_acceptance_length")
    except EvidenceError:
        return None
    return value if value is not None and value >= 1.0 else None


def acceptance_rate(result):
    """The result's spec-decode acceptance rate, or None."""
    sd = (result or {}).get("spec_decode")
    if not isinstance(sd, dict):
        return None
    try:
        return number(sd.get("acceptance_rate"), "spec_decode.acceptance_rate")
    except EvidenceError:
        return None
