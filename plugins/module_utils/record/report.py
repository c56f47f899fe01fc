# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Fleet report: per-host rows, per-family medians, markdown and HTML (pure, stdlib only).

Input is the list of per-host records the rollout playbook collects (host,
simulated, facts, baseline/candidate bench results, verdict, status, error...).
Bench results keep the field names of the vllm_bench module
(jetson-llm-benchmark names), so report.json can be compared run to run.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import html

from ansible_collections.jetson.specdec.plugins.module_utils.record.record import normalize
from ansible_collections.jetson.specdec.plugins.module_utils.record.why import explain, time_scale_of
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.evidence import find_run
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.rule import (
    as_repeats, median, pool_level, pooled_acceptance,
)

SCHEMA_VERSION = 1
FAILED_STATUSES = ("unreachable", "failed", "error")
# A marginal result kept by the operator's marginal_action: keep (the keep bar was not met).
KEPT_BELOW_BAR = "kept below the keep bar"
DECISION_ORDER = ("keep", KEPT_BELOW_BAR, "marginal", "revert", "lossy", "inconclusive", "off", "refused", "held",
                  "failed", "unreachable", "unknown")
MEDIAN_FIELDS = ("c1_tok_s_before", "c1_tok_s_after", "c1_gain", "tpot_p50_before", "tpot_p50_after",
                 "tpot_drop", "c8_tok_s_before", "c8_tok_s_after", "acceptance_rate")


def _ratio_change(before, after, invert=False):
    if not before or after is None:
        return None
    if invert:
        return 1.0 - after / before
    return after / before - 1.0


def _level_median(bench, concurrency, key):
    """Median of one per-level number (``ttft_ms_p50``, ...) over the repeats of a benchmark, or None."""
    values = []
    for repeat in as_repeats(bench):
        run = find_run(repeat, concurrency)
        if run is not None and isinstance(run.get(key), (int, float)):
            values.append(float(run[key]))
    return median(values) if values else None


def host_row(record, low=1, high=8):
    """Flatten one record into the numbers the tables show (None where unknown)."""
    record = normalize(record)  # the record's own reader (record/record.py)
    facts = record.get("facts") or {}
    verdict = record.get("verdict") or {}
    status = record["status"]
    b_lo, c_lo = pool_level(record.get("baseline"), low), pool_level(record.get("candidate"), low)
    b_hi, c_hi = pool_level(record.get("baseline"), high), pool_level(record.get("candidate"), high)
    spec = record.get("spec_decode") or {}
    acceptance = spec.get("acceptance_rate") if isinstance(spec, dict) else None
    if acceptance is None:
        acceptance = pooled_acceptance(record.get("candidate"))
    row = {
        "host": str(record.get("host") or "?"),
        "family": str(facts.get("family") or "unknown"),
        "variant": facts.get("variant"),
        "model": facts.get("model"),
        "simulated": bool(record.get("simulated")),
        "status": status,
        "decision": decision_name(verdict, status),
        "action": verdict.get("action"),
        "flagged": bool(verdict.get("flagged")),
        "c1_tok_s_before": b_lo and b_lo["throughput_tok_s"],
        "c1_tok_s_after": c_lo and c_lo["throughput_tok_s"],
        "tpot_p50_before": b_lo and b_lo["tpot_ms_p50"],
        "tpot_p50_after": c_lo and c_lo["tpot_ms_p50"],
        "c8_tok_s_before": b_hi and b_hi["throughput_tok_s"],
        "c8_tok_s_after": c_hi and c_hi["throughput_tok_s"],
        "ttft_p50_before": _level_median(record.get("baseline"), low, "ttft_ms_p50"),
        "ttft_p50_after": _level_median(record.get("candidate"), low, "ttft_ms_p50"),
        "acceptance_rate": acceptance,
        "error": record.get("error"),
    }
    row["c1_gain"] = _ratio_change(row["c1_tok_s_before"], row["c1_tok_s_after"])
    row["tpot_drop"] = _ratio_change(row["tpot_p50_before"], row["tpot_p50_after"], invert=True)
    # A sequential verdict judged every round: its estimates, not the last round of each arm, are
    # the gain and the drop (so the table never contradicts the verdict).
    metrics = verdict.get("metrics") if isinstance(verdict.get("metrics"), dict) and verdict.get("estimates") else {}
    for column, key in (("c1_gain", "c1_throughput_gain"), ("tpot_drop", "c1_tpot_drop")):
        if isinstance(metrics.get(key), (int, float)):
            row[column] = metrics[key]
    row["failed"] = status in FAILED_STATUSES
    return row


def group_by_family(rows):
    """{family: [rows sorted by host]} with families sorted by name."""
    groups = {}
    for row in rows:
        groups.setdefault(row["family"], []).append(row)
    return dict((fam, sorted(groups[fam], key=lambda r: r["host"])) for fam in sorted(groups))


def family_summary(rows):
    """Host count, decision counts and medians of the numeric columns."""
    decisions = {}
    for row in rows:
        decisions[row["decision"]] = decisions.get(row["decision"], 0) + 1
    # One population: only hosts with both arms measured at c=1 (a refused or broken host has a
    # baseline and no candidate; mixing them compares different hosts' numbers).
    measured = [r for r in rows if not r["failed"] and r["c1_tok_s_before"] is not None
                and r["c1_tok_s_after"] is not None]
    return {
        "hosts": len(rows),
        "measured": len(measured),
        "decisions": decisions,
        "medians": dict((f, median(r[f] for r in measured)) for f in MEDIAN_FIELDS),
    }


def build_report(records, run_id, generated_at, expected_hosts=None, low=1, high=8):
    """The report dict written as report.json."""
    records = [r for r in (records or []) if isinstance(r, dict)]
    rows = [host_row(r, low, high) for r in records]
    seen = set(r["host"] for r in rows)
    missing = sorted(h for h in (expected_hosts or []) if h not in seen)
    groups = group_by_family(rows)
    decisions = {}
    for row in rows:
        decisions[row["decision"]] = decisions.get(row["decision"], 0) + 1
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "generated_at": generated_at,
        "concurrency": {"low": low, "high": high},
        "summary": {"hosts": len(rows) + len(missing), "decisions": decisions,
                    "simulated": sum(1 for r in rows if r["simulated"]), "missing": len(missing),
                    "time_scales": time_scales(records)},
        "families": dict((fam, family_summary(fam_rows)) for fam, fam_rows in groups.items()),
        "hosts": [dict(row=row, record=rec, why=explain(normalize(rec))) for row, rec in zip(rows, records)],
        "missing_hosts": missing,
    }


# --------------------------------------------------------------------------- formatting

def fmt_num(value, digits=1):
    return "–" if value is None else ("%.*f" % (digits, value))


def fmt_pair(before, after, digits=1):
    return "%s → %s" % (fmt_num(before, digits), fmt_num(after, digits))


def fmt_pct(value):
    return "–" if value is None else "%+.1f%%" % (value * 100.0)


def host_label(row):
    return row["host"] + (" (SIMULATED)" if row["simulated"] else "")


def decision_name(verdict, status):
    """The verdict's decision, except a marginal result that was kept: that is "kept below the keep bar"
    (marginal_action: keep), never just "marginal", which reads as if the skill's bar had been met."""
    decision = verdict.get("decision") or status
    if decision == "marginal" and verdict.get("action") == "keep":
        return KEPT_BELOW_BAR
    return decision


# A decision shown in words where its name alone would read as something else (``off`` is the
# operator's choice, vllm_server_speculation: false in the inventory, not a refusal or a failure).
DECISION_WORDS = {"off": "off by policy"}


def decision_words(decision):
    return DECISION_WORDS.get(decision, decision)


def decision_label(row):
    label = decision_words(row["decision"])
    if row.get("action") and row["action"] != row["decision"] and row["decision"] != KEPT_BELOW_BAR:
        label += " → " + row["action"]
    if row.get("flagged"):
        label += " ⚑"
    return label


TABLE_HEADER = ("Host", "Decision", "c1 tok/s baseline → speculative", "c1 gain", "TPOT p50 ms baseline → speculative",
                "TPOT drop", "c8 tok/s baseline → speculative", "Acceptance")


def table_cells(row):
    return (host_label(row), decision_label(row),
            fmt_pair(row["c1_tok_s_before"], row["c1_tok_s_after"]), fmt_pct(row["c1_gain"]),
            fmt_pair(row["tpot_p50_before"], row["tpot_p50_after"]), fmt_pct(row["tpot_drop"]),
            fmt_pair(row["c8_tok_s_before"], row["c8_tok_s_after"]), fmt_num(row["acceptance_rate"], 2))


def median_cells(summary):
    m = summary["medians"]
    return ("median of %d with both arms" % summary["measured"], "",
            fmt_pair(m["c1_tok_s_before"], m["c1_tok_s_after"]), fmt_pct(m["c1_gain"]),
            fmt_pair(m["tpot_p50_before"], m["tpot_p50_after"]), fmt_pct(m["tpot_drop"]),
            fmt_pair(m["c8_tok_s_before"], m["c8_tok_s_after"]), fmt_num(m["acceptance_rate"], 2))


def _rows_by_family(report):
    grouped = {}
    for entry in report["hosts"]:
        grouped.setdefault(entry["row"]["family"], []).append(entry["row"])
    return group_by_family([r for rows in grouped.values() for r in rows])


def decision_summary(report):
    counts = report["summary"]["decisions"]
    order = [d for d in DECISION_ORDER if d in counts] + sorted(d for d in counts if d not in DECISION_ORDER)
    parts = ["%d %s" % (counts[d], decision_words(d)) for d in order]
    if report["missing_hosts"]:
        parts.append("%d without a record" % len(report["missing_hosts"]))
    return ", ".join(parts) or "no hosts"


def problem_rows(report):
    """(host, status, error) for failed/unreachable hosts and hosts with no record."""
    out = [(host_label(e["row"]), e["row"]["status"], e["row"]["error"] or "")
           for e in report["hosts"] if e["row"]["failed"]]
    out += [(h, "no record", "unreachable or failed before its result was recorded")
            for h in report["missing_hosts"]]
    return out


def why_items(entry):
    """(label, text) pairs of one host's "why" block, in reading order; empty parts left out."""
    why = entry.get("why") or explain(normalize(entry.get("record") or {}))
    items = [("Why", " ".join(why["why"]) or "no reason recorded")]
    if why.get("evidence"):
        items.append(("Evidence", why["evidence"]))
    if why.get("workload"):
        items.append(("Workload", why["workload"]))
    if why.get("equivalence"):
        items.append(("Equivalence", why["equivalence"]))
    if why.get("k_tuning"):
        items.append(("k tuning", why["k_tuning"]))
    if why.get("third_arm"):
        items.append(("Third arm", why["third_arm"]))
    if why.get("roofline"):
        items.append(("Roofline", why["roofline"]))
    if why.get("energy"):
        items.append(("Energy", why["energy"]))
    if why["ladder"]:
        items.append(("Ladder", why["ladder"]))
    if why.get("prefetch"):
        items.append(("Prefetch", why["prefetch"]))
    if why.get("serving_gap"):
        items.append(("Serving gap", why["serving_gap"]))
    items.append(("Runs now", why["runs_now"]))
    if why["warnings"]:
        items.append(("Warnings", " ".join(why["warnings"])))
    if why["next_step"]:
        items.append(("Next step", why["next_step"]))
    return items


def _entries_in_table_order(report):
    order = [row["host"] for rows in _rows_by_family(report).values() for row in rows]
    by_host = dict((e["row"]["host"], e) for e in report["hosts"])
    return [by_host[h] for h in order if h in by_host]


def _md_text(text):
    """Text as Markdown shows it literally: HTML (a host name, an error message or a vLLM log line with
    ``<script>``) is escaped, since Markdown passes raw HTML through to the page that renders it."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def _md_cell(text):
    return _md_text(text).replace("|", "\\|")


def _md_table(header, rows):
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


def time_scales(records):
    """The stand-in's time_scale values seen in the records' benchmarks (X-Jetson-Simulated: '<profile>; time_scale=x')."""
    out = set()
    for record in records:
        for arm in ("baseline", "candidate"):
            scale = time_scale_of(record.get(arm)) if isinstance(record.get(arm), dict) else None
            if scale is not None:
                out.add(scale)
    return sorted(out)


def simulated_note(report):
    if not report["summary"]["simulated"]:
        return None
    note = ("Hosts marked SIMULATED ran against the vLLM stand-in, not real Jetson hardware: "
            "their numbers exercise the rollout logic and say nothing about real boards.")
    scales = [s for s in report["summary"].get("time_scales") or [] if s > 0]
    if scales and scales != [1.0]:
        scale = scales[0] if len(scales) == 1 else None
        note += (" The stand-in runs its board profile %s faster than board time (time_scale %s): tok/s read %s "
                 "and milliseconds %s what the profile's board would show; ratios (gain, drop, acceptance) are "
                 "unaffected." % ("%gx" % (1 / scale) if scale else "several times",
                                  ", ".join("%g" % s for s in scales),
                                  "%gx higher" % (1 / scale) if scale else "higher",
                                  "%g of" % scale if scale else "a fraction of"))
    return note


def dry_run_note(report):
    """A --check run changed nothing: say so above the tables (its rows say what a real run would do)."""
    if not any(e["row"]["status"] == "planned" for e in report["hosts"]):
        return None
    return ("DRY RUN (--check): no host was changed. Rows marked planned say what a real run would do "
            "(the speculation it would start, its ladder and round budget, or the refusal).")


def render_markdown(report, title="jetson.specdec fleet report"):
    intro = "Run `%s`, generated %s. %d host(s): %s." % (
        _md_text(report["run_id"]).replace("`", "'"), _md_text(report["generated_at"]), report["summary"]["hosts"],
        _md_text(decision_summary(report)))
    lines = ["# %s" % _md_text(title), "", intro, ""]
    for note in (dry_run_note(report), simulated_note(report)):
        if note:
            lines += ["> **%s**" % note, ""]
    for family, rows in _rows_by_family(report).items():
        summary = report["families"][family]
        lines += ["## %s (%d host%s)" % (_md_text(family), len(rows), "" if len(rows) == 1 else "s"), ""]
        lines += _md_table(TABLE_HEADER, [table_cells(r) for r in rows]
                           + ([median_cells(summary)] if summary["measured"] else []))
        lines.append("")
    problems = problem_rows(report)
    if problems:
        lines += ["## Unreachable or failed hosts", ""]
        lines += _md_table(("Host", "Status", "Error"), problems)
        lines.append("")
    lines += ["## Why each host ended where it did", ""]
    for entry in _entries_in_table_order(report):
        lines += ["### %s: %s" % (_md_text(host_label(entry["row"])), _md_text(decision_label(entry["row"]))), ""]
        lines += ["- **%s**: %s" % (label, _md_cell(text)) for label, text in why_items(entry)]
        lines.append("")
    lines.append("Numbers are the baseline (speculation off) and the speculative candidate as measured; the Decision column "
                 "says which of the two the host serves now. Medians leave out failed and unreachable hosts. "
                 "⚑ marks a result that needs a human look.")
    return "\n".join(lines) + "\n"


def _html_table(header, rows, median_row=None):
    out = ["<table>", "<thead><tr>" + "".join("<th>%s</th>" % html.escape(h) for h in header) + "</tr></thead>",
           "<tbody>"]
    for row in rows:
        out.append("<tr>" + "".join("<td>%s</td>" % html.escape(str(c)) for c in row) + "</tr>")
    if median_row:
        out.append('<tr class="median">' + "".join("<td>%s</td>" % html.escape(str(c)) for c in median_row)
                   + "</tr>")
    out += ["</tbody>", "</table>"]
    return out


def render_html(report, chart_png_b64=None, chart_note=None, title="jetson.specdec fleet report"):
    """Self-contained HTML; the chart is an embedded base64 PNG when given."""
    esc = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>%s</title>" % esc(title),
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
             "td,th{border:1px solid #bbb;padding:.3em .6em;text-align:right}td:first-child,th:first-child"
             "{text-align:left}tr.median{font-weight:bold;background:#f3f3f3}.note{background:#fff4d6;"
             "padding:.5em 1em}ul.why li{margin:.2em 0;max-width:70em}</style></head><body>",
             "<h1>%s</h1>" % esc(title),
             "<p>Run <code>%s</code>, generated %s. %d host(s): %s.</p>"
             % (esc(str(report["run_id"])), esc(str(report["generated_at"])), report["summary"]["hosts"],
                esc(decision_summary(report)))]
    for note in (dry_run_note(report), simulated_note(report)):
        if note:
            parts.append('<p class="note"><strong>%s</strong></p>' % esc(note))
    for family, rows in _rows_by_family(report).items():
        parts.append("<h2>%s (%d)</h2>" % (esc(family), len(rows)))
        summary = report["families"][family]
        parts += _html_table(TABLE_HEADER, [table_cells(r) for r in rows],
                             median_cells(summary) if summary["measured"] else None)
    problems = problem_rows(report)
    if problems:
        parts.append("<h2>Unreachable or failed hosts</h2>")
        parts += _html_table(("Host", "Status", "Error"), problems)
    parts.append("<h2>Why each host ended where it did</h2>")
    for entry in _entries_in_table_order(report):
        parts.append('<h3 id="why-%s">%s: %s</h3><ul class="why">' % (
            esc(entry["row"]["host"], quote=True), esc(host_label(entry["row"])), esc(decision_label(entry["row"]))))
        parts += ["<li><strong>%s</strong>: %s</li>" % (esc(label), esc(str(text))) for label, text in why_items(entry)]
        parts.append("</ul>")
    if chart_png_b64:
        parts.append('<h2>Before / after per host</h2><img alt="Throughput at concurrency 1 and 8, TPOT p50 and '
                     'TTFT p50, before and after, per host with its decision" src="data:image/png;base64,%s">' % chart_png_b64)
    if chart_note:
        parts.append('<p class="note">%s</p>' % esc(chart_note))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def chart_series(report):
    """Hosts with before/after numbers for the chart: list of dicts, host order as in the tables."""
    out = []
    for rows in _rows_by_family(report).values():
        for row in rows:
            if row["failed"]:
                continue
            if row["c1_tok_s_before"] is None and row["tpot_p50_before"] is None:
                continue
            out.append({"label": host_label(row), "decision": decision_label(row),
                        "tpot_before": row["tpot_p50_before"], "tpot_after": row["tpot_p50_after"],
                        "tok_s_before": row["c1_tok_s_before"], "tok_s_after": row["c1_tok_s_after"],
                        "c8_tok_s_before": row["c8_tok_s_before"], "c8_tok_s_after": row["c8_tok_s_after"],
                        "ttft_before": row["ttft_p50_before"], "ttft_after": row["ttft_p50_after"]})
    return out
