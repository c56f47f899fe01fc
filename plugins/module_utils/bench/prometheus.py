# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Prometheus text exposition parser and vLLM spec-decode counter deltas.

Standard library only.  Handles label values with escaped quotes, backslashes
and newlines, label order, NaN/+Inf/-Inf, optional timestamps, comments, and
counters exposed with or without the ``_total`` suffix.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

SPEC_PREFIX = "vllm:spec_decode_"
_COUNTERS = {
    "num_drafts": "drafts",
    "num_draft_tokens": "draft_tokens",
    "num_accepted_tokens": "accepted_tokens",
    "num_accepted_tokens_per_pos": "per_position",
}
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


def _parse_value(text):
    low = text.lower()
    if low in ("nan",):
        return float("nan")
    if low in ("+inf", "inf"):
        return float("inf")
    if low == "-inf":
        return float("-inf")
    return float(text)


def _parse_labels(line, pos):
    """Parse ``{a="x",b="y"}`` starting at ``line[pos] == '{'``.

    Returns (labels, index just after the closing brace)."""
    labels = {}
    i = pos + 1
    n = len(line)
    while True:
        while i < n and line[i] in " \t,":
            i += 1
        if i >= n:
            raise ValueError("unterminated label set")
        if line[i] == "}":
            return labels, i + 1
        eq = line.find("=", i)
        if eq < 0:
            raise ValueError("label without '='")
        name = line[i:eq].strip()
        i = eq + 1
        while i < n and line[i] in " \t":
            i += 1
        if i >= n or line[i] != '"':
            raise ValueError("label value must be quoted")
        i += 1
        chars = []
        while True:
            if i >= n:
                raise ValueError("unterminated label value")
            c = line[i]
            if c == "\\" and i + 1 < n:
                nxt = line[i + 1]
                chars.append(_ESCAPES.get(nxt, "\\" + nxt))
                i += 2
                continue
            if c == '"':
                i += 1
                break
            chars.append(c)
            i += 1
        labels[name] = "".join(chars)


def parse_text(text):
    """Return a list of ``(name, labels, value)`` samples.

    Malformed lines are skipped rather than fatal: a benchmark must not fail
    because of one odd metric another component exports.
    """
    samples = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        try:
            brace = line.find("{")
            space = line.find(" ")
            if brace >= 0 and (space < 0 or brace < space):
                name = line[:brace]
                labels, end = _parse_labels(line, brace)
                rest = line[end:].split()
            else:
                parts = line.split()
                name, labels, rest = parts[0], {}, parts[1:]
            if not rest:
                continue
            samples.append((name.strip(), labels, _parse_value(rest[0])))
        except ValueError:
            continue
    return samples


def spec_decode_snapshot(samples, model_name=None):
    """Sum vLLM's spec-decode counters over engines.

    Returns None when the server exposes none (speculation off).  When a
    counter appears both with and without ``_total`` the ``_total`` form wins
    (``_created`` and other series are ignored).  ``model_name`` restricts to
    series labelled with that model when such series exist.
    """
    if model_name is not None and not any(
            s[1].get("model_name") == model_name for s in samples
            if s[0].startswith(SPEC_PREFIX)):
        model_name = None
    found = {True: {}, False: {}}  # has _total suffix -> key -> value
    for name, labels, value in samples:
        if not name.startswith(SPEC_PREFIX) or math.isnan(value):  # skip NaN
            continue
        if model_name is not None and labels.get("model_name", model_name) != model_name:
            continue
        base = name[len(SPEC_PREFIX):]
        total = base.endswith("_total")
        if total:
            base = base[:-len("_total")]
        key = _COUNTERS.get(base)
        if key is None:
            continue
        bucket = found[total]
        if key == "per_position":
            try:
                pos = int(labels.get("position", ""))
            except ValueError:
                continue
            per = bucket.setdefault("per_position", {})
            per[pos] = per.get(pos, 0.0) + value
        else:
            bucket[key] = bucket.get(key, 0.0) + value
    chosen = found[True] or found[False]
    if not chosen:
        return None
    snap = {"drafts": 0.0, "draft_tokens": 0.0, "accepted_tokens": 0.0, "per_position": {}}
    snap.update(chosen)
    return snap


def _ratio(num, den):
    return round(num / den, 6) if den > 0 else None


def finish_spec_decode(raw):
    """Turn raw counter differences into the returned ``spec_decode`` dict."""
    if raw is None:
        return None
    drafts = raw["drafts"]
    per_pos = raw.get("per_position") or {}
    return {
        "drafts": int(round(drafts)),
        "draft_tokens": int(round(raw["draft_tokens"])),
        "accepted_tokens": int(round(raw["accepted_tokens"])),
        "acceptance_rate": _ratio(raw["accepted_tokens"], raw["draft_tokens"]),
        "mean_acceptance_length": (round(1.0 + raw["accepted_tokens"] / drafts, 6)
                                   if drafts > 0 else None),
        "per_position": [_ratio(per_pos[p], drafts) for p in sorted(per_pos)],
    }


def spec_decode_delta(before, after):
    """Raw counter differences between two snapshots, or None.

    A counter that went down means the server restarted in between; the
    difference is then meaningless, so it is reported as None too.
    """
    if before is None or after is None:
        return None
    raw = {}
    for key in ("drafts", "draft_tokens", "accepted_tokens"):
        diff = after.get(key, 0.0) - before.get(key, 0.0)
        if diff < 0:
            return None
        raw[key] = diff
    per = {}
    bpp = before.get("per_position") or {}
    for pos, val in (after.get("per_position") or {}).items():
        per[pos] = max(0.0, val - bpp.get(pos, 0.0))
    raw["per_position"] = per
    return raw


def add_raw(total, raw):
    """Accumulate raw deltas (for the top-level aggregate over all runs)."""
    if raw is None:
        return total
    if total is None:
        total = {"drafts": 0.0, "draft_tokens": 0.0, "accepted_tokens": 0.0, "per_position": {}}
    for key in ("drafts", "draft_tokens", "accepted_tokens"):
        total[key] += raw[key]
    for pos, val in raw["per_position"].items():
        total["per_position"][pos] = total["per_position"].get(pos, 0.0) + val
    return total


QUEUE_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def queue_snapshot(samples, model_name=None):
    """(running, waiting) requests on the server now, summed over engines, or None without the gauges.

    ``model_name`` keeps the samples of that served model (a sample without the label counts too)."""
    found = {}
    for name, labels, value in samples:
        if name not in QUEUE_GAUGES:
            continue
        if model_name is not None and labels.get("model_name") not in (None, model_name):
            continue
        found[name] = found.get(name, 0.0) + value
    if not found:
        return None
    return int(found.get(QUEUE_GAUGES[0], 0)), int(found.get(QUEUE_GAUGES[1], 0))
