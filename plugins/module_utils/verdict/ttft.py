# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Time to first token next to the verdict (the rollout's TTFT guard).

The skill says speculation does not help TTFT-dominated latency: the draft's own prefill
runs before the first token. The keep/revert rule is about decode (throughput, TPOT), so
TTFT is a guard on top of it: the TTFT p50 change at the low concurrency, from every
measured request of every round of each arm, is reported with the verdict; a kept
candidate whose TTFT got worse by more than ``tolerance`` is flagged (``action: flag``)
or reverted (``action: revert``). Pure standard library, Python 3.8+.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

from ansible_collections.jetson.specdec.plugins.module_utils.verdict import inputs
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.evidence import find_run

ACTIONS = ("flag", "revert")
DEFAULTS = {"tolerance": 0.25, "action": "flag"}


def validate(params):
    """``{tolerance, action}`` checked; raise ValueError naming the rollout variable."""
    p = dict(DEFAULTS)
    p.update((k, v) for k, v in (params or {}).items() if v is not None)
    unknown = sorted(set(p) - set(DEFAULTS))
    if unknown:
        raise ValueError("ttft: unknown parameter(s) %s; valid ones are tolerance, action" % ", ".join(unknown))
    try:
        tolerance = float(p["tolerance"]) if not isinstance(p["tolerance"], bool) else float("nan")
    except (TypeError, ValueError):
        tolerance = float("nan")
    if math.isnan(tolerance) or not 0.0 <= tolerance <= 10.0:
        raise ValueError("rollout_ttft_tolerance must be a number from 0 to 10 (a fraction: 0.25 allows TTFT "
                         "25%% worse), got %r; the default is %r" % (p["tolerance"], DEFAULTS["tolerance"]))
    if p["action"] not in ACTIONS:
        raise ValueError("rollout_ttft_action must be flag or revert, got %r" % (p["action"],))
    return {"tolerance": tolerance, "action": p["action"]}


def _median(values):
    data = sorted(values)
    mid = len(data) // 2
    return data[mid] if len(data) % 2 else (data[mid - 1] + data[mid]) / 2.0


def arm_ttft(rounds, arm, concurrency):
    """Median TTFT (ms) of every successful request of ``arm`` at ``concurrency``, or None.

    ``rounds``: ``[{arm, result}]``. A result without per-request data gives its run's
    ``ttft_ms_p50`` once per round."""
    values = []
    for i, rnd in enumerate(rounds or []):
        if rnd.get("arm") != arm:
            continue
        run = find_run(rnd.get("result"), concurrency)
        if run is None:
            continue
        # the one check (verdict/inputs.py): ok "false" is no success, ttft_ms inf no number
        inputs.check_run(run, "round %d (%s) concurrency %s" % (i + 1, arm, concurrency))
        requests = run.get("requests")
        if isinstance(requests, list) and requests:
            values += [float(r["ttft_ms"]) for r in requests if r["ok"] and r.get("ttft_ms") is not None]
        elif run.get("ttft_ms_p50") is not None:
            values.append(float(run["ttft_ms_p50"]))
    return _median(values) if values else None


def apply_ttft(verdict, rounds, concurrency, params):
    """The verdict with the TTFT change in ``metrics.ttft_change`` and, for a kept candidate
    whose TTFT got worse than the tolerance, flagged or reverted. A verdict that is not final
    (``continue``) or has no measured TTFT is returned with only the metric."""
    p = validate(params)
    out = dict(verdict)
    out["metrics"] = dict(verdict.get("metrics") or {})
    base, cand = arm_ttft(rounds, "baseline", concurrency), arm_ttft(rounds, "candidate", concurrency)
    change = (cand / base - 1.0) if base and cand is not None else None
    out["metrics"]["ttft_change"] = round(change, 6) if change is not None else None
    if change is None or out.get("action") not in ("keep", "revert"):
        return out
    sentence = ("TTFT p50 at concurrency %s changed %+.1f%% (%.1f ms -> %.1f ms); up to %+.0f%% is tolerated "
                "(rollout_ttft_tolerance)." % (concurrency, 100 * change, float(base or 0.0), float(cand or 0.0),
                                               100 * p["tolerance"]))
    reasons = list(out.get("reasons") or [])
    if out["action"] != "keep" or change <= p["tolerance"]:
        out["reasons"] = reasons[:-1] + [sentence] + reasons[-1:] if reasons else [sentence]
        return out
    # The TTFT sentence goes last: it is what concluded (reports lead with the last reason).
    if p["action"] == "revert":
        out.update(decision="revert", action="revert", flagged=True, advisories=[],
                   reasons=reasons + [sentence.replace("is tolerated", "is tolerated, so the candidate is reverted "
                                                       "(rollout_ttft_action: revert)")])
    else:
        out.update(flagged=True, reasons=reasons + [sentence.replace(
            "is tolerated", "is tolerated: kept (decode is faster) but flagged, since requests dominated by "
            "their first token get slower (rollout_ttft_action: flag)")])
    return out
