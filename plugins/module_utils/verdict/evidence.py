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
    per_request}`` where ``thr``/``tpot`` are natural logs of the throughput
    (tok/s) and the TPOT median (ms), or None when the level measured nothing
    usable.  Without per-request data (an older vllm_bench) the variances come
    from ``request_cv_prior`` and the request count.
    """
    inputs.check_run(run, where)
    concurrency = int(run.get("concurrency") or 1)
    completed = int(number(run.get("completed"), where + " completed") or 0)
    failed = int(number(run.get("failed"), where + " failed") or 0)
    duration = number(run.get("duration_s"), where + " duration_s") or 0.0
    thr = number(run.get("throughput_tok_s"), where + " throughput_tok_s")
    tpot_p50 = number(run.get("tpot_ms_p50"), where + " tpot_ms_p50")
    ev = {"completed": completed, "failed": failed, "duration_s": duration,
          "thr": None, "thr_var": None, "tpot": None, "tpot_var": None, "per_request": False}
    reqs, failed_ms = _requests(run, where)
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
            # noise without saying anything about speculation.
            # A failed request delivered nothing but occupied its stream: it
            # costs the time it took, and at least what a successful request
            # takes (the client has to send it again).  A request that hung to
            # the 120 s deadline then costs 120 s, not nothing (a candidate
            # that timed out 3 % of its requests was kept although slower).
            floor = _median([e for _t, e in pairs])
            charged = [(0.0, max(ms, floor) if ms is not None else floor) for ms in failed_ms]
            # Failures the per-request list does not hold (an older result) cost a typical request each.
            missing = max(0, failed - len(failed_ms))
            charged += [(0.0, floor)] * missing
            every = pairs + charged
            ratio = tok_sum / math.fsum(e for _t, e in every)
            ev["thr"] = math.log(concurrency * ratio * 1000.0)
            # Relative variance of the ratio estimator (delta method), from
            # the spread of the requests themselves (failures included).
            mean_tok = tok_sum / len(every)
            ev["thr_var"] = _var([(t - ratio * e) / mean_tok for t, e in every]) / len(every)
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
