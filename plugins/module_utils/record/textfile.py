# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""node_exporter textfile-collector output for the rollout state (stdlib only).

The collector reads ``*.prom`` files in its directory with the Prometheus text
exposition format: one ``# HELP`` and one ``# TYPE`` line per metric family,
all samples of a family together, label values escaped, file ending in a
newline.  The values come from the state file only (including the timestamp),
so the same state renders the same text and rewriting it is idempotent.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime
import math
import os

from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_text
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import parse_iso
from ansible_collections.jetson.specdec.plugins.module_utils.record.why import time_scale_of
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.rule import pool_level, pooled_acceptance

FILENAME = "jetson_specdec.prom"
PHASES = ("baseline", "candidate", "final")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def escape_label_value(value):
    """Escape per the exposition format: backslash, double quote, newline."""
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def escape_help(text):
    """HELP text escapes only backslash and newline."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _labels(labels):
    if not labels:
        return ""
    return "{" + ",".join('%s="%s"' % (k, escape_label_value(v)) for k, v in labels) + "}"


def render_families(families):
    """``families``: list of (name, help, type, [(labels list, value)]). Returns the text."""
    lines = []
    for name, help_text, mtype, samples in families:
        if not samples:
            continue
        lines.append("# HELP %s %s" % (name, escape_help(help_text)))
        lines.append("# TYPE %s %s" % (name, mtype))
        for labels, value in samples:
            lines.append("%s%s %s" % (name, _labels(labels), format_value(value)))
    return "\n".join(lines) + "\n"


def _board_time_scale(bench):
    """The stand-in's time_scale of a phase's benchmarks (1.0 for a real board)."""
    repeats = bench if isinstance(bench, list) else [bench]
    for result in repeats:
        scale = time_scale_of(result) if isinstance(result, dict) else None
        if scale:
            return scale
    return 1.0


def speculation_enabled(state):
    info = state.get("info") or {}
    if info.get("speculation_enabled") is not None:
        return bool(info["speculation_enabled"])
    return state.get("status") == "kept"


def build_families(state, concurrencies=(1, 8)):
    """Metric families for one host's state (see module docs for the names)."""
    info = state.get("info") or {}
    verdict = state.get("verdict") or {}
    decision = verdict.get("decision") or state.get("status") or "none"
    benches = state.get("benchmarks") or {}
    tpot, thr = [], []
    for phase in PHASES:
        # A simulated board's stand-in runs time_scale times faster than the board it models: the
        # metrics say what the board would show (base units: seconds, tokens per second).
        scale = _board_time_scale(benches.get(phase))
        for c in concurrencies:
            level = pool_level(benches.get(phase), c)
            if level is None:
                continue
            labels = [("phase", phase), ("concurrency", str(c))]
            if level["tpot_ms_p50"] is not None:
                tpot.append((labels, round(level["tpot_ms_p50"] / 1000.0 / scale, 9)))
            if level["throughput_tok_s"] is not None:
                thr.append((labels, round(level["throughput_tok_s"] * scale, 4)))
    acceptance = pooled_acceptance(benches.get("final") or benches.get("candidate"))
    updated = parse_iso(state.get("updated_at"))
    families = [
        ("jetson_specdec_info", "Rollout verdict and candidate identity of this host.", "gauge",
         [([("verdict", decision), ("status", state.get("status") or "none"),
            ("method", info.get("method") or ""), ("model", info.get("model") or ""),
            ("family", info.get("family") or "")], 1)]),
        ("jetson_specdec_speculation_enabled", "1 when the running vLLM unit uses speculative decoding.",
         "gauge", [([], speculation_enabled(state))]),
        ("jetson_specdec_tpot_p50_seconds", "Median time per output token in seconds, per benchmark phase "
         "(board time on a simulated board).", "gauge", tpot),
        ("jetson_specdec_throughput_tokens_per_second", "Output throughput in tokens per second, per benchmark "
         "phase (board time on a simulated board).", "gauge", thr),
        ("jetson_specdec_acceptance_rate", "Draft token acceptance rate of the speculative candidate.",
         "gauge", [([], acceptance)] if acceptance is not None else []),
        ("jetson_specdec_last_run_timestamp_seconds", "Unix time of the last rollout state change.",
         "gauge", [([], (updated - _EPOCH).total_seconds())] if updated is not None else []),
        ("jetson_specdec_simulated", "1 when the host is a simulated board (test fleet), not real hardware.",
         "gauge", [([], bool(info.get("simulated")))]),
    ]
    return families


def render(state, concurrencies=(1, 8)):
    return render_families(build_families(state, concurrencies))


def write_textfile(directory, text, filename=FILENAME, check_mode=False):
    """Atomically (re)write ``<directory>/<filename>``; returns (changed, path)."""
    if not filename.endswith(".prom"):
        raise ValueError("textfile name must end in .prom or node_exporter ignores it, got %r" % (filename,))
    path = os.path.join(directory, filename)
    try:
        with open(path, "r", encoding="utf-8") as handle:
            if handle.read() == text:
                return False, path
    except (IOError, OSError):
        pass
    if not check_mode:
        atomic_write_text(path, text)
    return True, path
