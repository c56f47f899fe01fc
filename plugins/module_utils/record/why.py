# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Why a host ended where it did: the sentences the fleet report shows per host (stdlib only).

The record already holds the reasons, the ladder attempts and their causes, the warnings and
what the host runs now; this module only orders them for an operator and adds one next step.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

# The first reason that decided the outcome comes first; the report shows at most this many.
MAX_REASONS = 4
MAX_TEXT = 300

NEXT_STEPS = {
    "kept": "Nothing to do; the next run leaves this host alone unless its config changes (rollout_force re-measures).",
    "unchanged": "Nothing to do: the host already runs the result of an earlier rollout of this config.",
    "planned": "Dry run only: run without --check to benchmark and decide.",
    "unreachable": "Check SSH/connection to the host, then re-run the rollout for it.",
    "queued": "The run stopped before this host (max_fail_percentage or an interruption): re-run the rollout.",
}


def _short(text):
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def ladder_path(attempts):
    """'eagle3 at 0.75 (out_of_memory) → ngram (started)' from the record's attempts, or None."""
    steps = []
    for attempt in attempts or []:
        if not isinstance(attempt, dict):
            continue
        label = attempt.get("label") or attempt.get("rung") or "rung"
        cause = attempt.get("cause")
        steps.append("%s (%s)" % (label, cause if cause else "started"))
    return " → ".join(steps) if steps else None


def _next_step(record, status, decision):
    if status == "refused":
        return "Speculation is not applied on this host; fix the rule named above in group_vars, or leave it off."
    if status == "failed":
        return "Read the error, fix its cause on the host, then re-run (rollout_break_lock=true only if no other run holds the lock)."
    if status == "reverted":
        attempts = record.get("attempts") or []
        causes = [a.get("cause") for a in attempts if isinstance(a, dict) and a.get("cause")]
        if attempts and len(causes) == len(attempts):
            if "out_of_memory" in causes:
                return ("Every speculative start ran out of memory: lower vllm_server_max_model_len or the utilization "
                        "the memory check recommends, or keep speculation off on this board.")
            return "No speculative start succeeded; see the causes above (a rejected config goes straight back to the baseline)."
        if decision == "inconclusive":
            return "The evidence stayed inside the noise within the budget: hold the clocks (MAXN, jetson_clocks) and re-run."
        return "Speculation does not pay on this host for this model and traffic; leave it reverted or try another draft."
    return NEXT_STEPS.get(status, "")


def explain(record):
    """{why, ladder, runs_now, warnings, next_step} for one (normalized) record."""
    record = record if isinstance(record, dict) else {}
    status = record.get("status") or "unknown"
    verdict = record.get("verdict") if isinstance(record.get("verdict"), dict) else {}
    decision = verdict.get("decision") or status
    reasons = verdict.get("reasons") or record.get("reasons") or []
    if isinstance(reasons, str):
        reasons = [reasons]
    why = [_short(r) for r in reasons if r][:MAX_REASONS]
    if record.get("error"):
        why.insert(0, _short(record["error"]))
    warnings = []
    facts = record.get("facts") if isinstance(record.get("facts"), dict) else {}
    for source in (record.get("warnings"), facts.get("warnings"), verdict.get("warnings"), verdict.get("advisories")):
        for text in source or []:
            if text and _short(text) not in warnings:
                warnings.append(_short(text))
    return {
        "decision": decision,
        "why": why,
        "ladder": ladder_path(record.get("attempts")),
        "runs_now": record.get("config_after") or ("unchanged" if status in ("refused", "unchanged", "planned") else "unknown"),
        "warnings": warnings,
        "next_step": _next_step(record, status, decision),
    }
