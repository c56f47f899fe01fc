# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Fleet report: per-host rows, per-family medians, markdown and the HTML page's data (pure, stdlib only).

Input is the list of per-host records the rollout playbook collects (host,
simulated, facts, baseline/candidate bench results, verdict, status, error...).
Bench results keep the field names of the vllm_bench module
(jetson-llm-benchmark names), so report.json can be compared run to run.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

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
                 "tpot_change", "c8_tok_s_before", "c8_tok_s_after", "c8_change", "acceptance_rate")
# Where each host stands, for the summary and the colours: (outcome, words), in the summary's order.
OUTCOMES = (("kept", "kept: speculating now"), ("reverted", "reverted: baseline, speculation did not pay"),
            ("human", "needs a human (inconclusive, lossy or interrupted)"), ("refused", "refused by a rule"),
            ("off", "off by policy"), ("failed", "failed or unreachable"), ("held", "held: outside this wave"),
            ("planned", "planned (dry run)"))
# The one sign convention of every change in the report, stated once at its top.
SIGN_CONVENTION = ("Every change is the speculative candidate against the baseline, in % of the baseline: + means the "
                   "number rose, - that it fell (throughput should rise, TPOT should fall). Brackets hold the verdict's "
                   "interval for it: a threshold counts as met or missed only when the whole interval lies on one side.")
ROUNDS_JARGON = ("A round benchmarks one arm: B the baseline (speculation off), C the candidate (speculation on). "
                 "Rounds alternate B C C B B C ... so a slow drift of the board cancels out; the verdict measures "
                 "rounds until its intervals settle keep or revert, or the budget ends (inconclusive). "
                 "* marks a round set aside (the board's conditions changed), ⚑ a result that needs a human look.")


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


def _estimate(verdict, key, invert=False):
    """{point, low, high} of one of the verdict's estimates in the report's sign convention (+ = the number
    rose), or None. ``invert``: the verdict's TPOT *drop* becomes a TPOT change (a drop of 0.4 is -0.4)."""
    estimates = verdict.get("estimates") if isinstance(verdict.get("estimates"), dict) else {}
    est = estimates.get(key)
    if not isinstance(est, dict):
        return None
    try:
        point, low, high = float(est["point"]), float(est["low"]), float(est["high"])
    except (KeyError, TypeError, ValueError):
        return None
    if invert:
        point, low, high = -point, -high, -low
    return {"point": point, "low": low, "high": high}


def _round_means(record, level):
    """(baseline, candidate) geometric means of the rounds the verdict used (set-aside rounds left out) at
    ``level``: {"throughput_tok_s", "tpot_ms_p50"} each, or None when the record keeps no rounds."""
    verdict = record.get("verdict") if isinstance(record.get("verdict"), dict) else {}
    aside = set(a.get("round") for a in verdict.get("set_aside") or [] if isinstance(a, dict))
    values = {}
    for index, rnd in enumerate(r for r in record.get("rounds") or [] if isinstance(r, dict)):
        if index + 1 in aside:
            continue
        for run in rnd.get("levels") or []:
            if not isinstance(run, dict) or run.get("concurrency") != level:
                continue
            for key in ("throughput_tok_s", "tpot_ms_p50"):
                value = run.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                    values.setdefault((rnd.get("arm"), key), []).append(float(value))
    if not values:
        return None

    def geomean(arm, key):
        found = values.get((arm, key))
        return math.exp(math.fsum(math.log(v) for v in found) / len(found)) if found else None
    return tuple(dict((key, geomean(arm, key)) for key in ("throughput_tok_s", "tpot_ms_p50"))
                 for arm in ("baseline", "candidate"))


def speculation_setup(record):
    """{method, k, head, runs_now, model_served, vllm}: what the host runs and on what (the record's config, k tuning,
    the plan's k and the benchmarked server), None where the record does not say."""
    server = {}
    for arm in ("candidate", "baseline"):
        result = record.get(arm)
        if isinstance(result, dict) and isinstance(result.get("server"), dict):
            server = result["server"]
            break
    tuned = record.get("k_tuning") if isinstance(record.get("k_tuning"), dict) else {}
    plan = record.get("roofline_inputs") if isinstance(record.get("roofline_inputs"), dict) else {}
    started = [a for a in record.get("attempts") or [] if isinstance(a, dict) and a.get("result") == "started"]
    label = started[-1].get("label") if started else None
    arm = record.get("third_arm") if isinstance(record.get("third_arm"), dict) else {}
    k = tuned.get("k") or plan.get("k") or arm.get("k") or None
    runs_now = record.get("config_after")
    method = str(label).split(" at utilization ", maxsplit=1)[0] if label else None
    head = record.get("speculative_model")
    if not head and method:
        # older records: the head or draft vllm_prefetch fetched for the candidate
        head = next((p.get("model") for p in record.get("prefetch") or [] if isinstance(p, dict) and p.get("model")), None)
    # the third arm kept: the host speculates only up to this batch size (verdict/third_arm.py)
    upto = arm.get("threshold") if arm.get("kept") and method else None
    return {"method": method, "k": k if method else None, "head": head if method and method != "ngram" else None,
            "runs_now": runs_now, "model_served": server.get("model"), "vllm": server.get("version"),
            "schedule_upto": upto}


def host_row(record, low=1, high=8):
    """Flatten one record into the numbers the tables show (None where unknown).

    The changes (``c1_gain``, ``tpot_change``, ``c8_change`` with ``_low``/``_high``) are the verdict's own
    estimates with their intervals, in one sign convention (+ = the number rose); the arms' numbers are
    the geometric means of the rounds the verdict used. Only a record without a sequential verdict
    (an older one) falls back to its last round of each arm, without an interval."""
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
    if isinstance((verdict.get("metrics") or {}).get("acceptance_rate"), (int, float)):
        acceptance = verdict["metrics"]["acceptance_rate"]  # the median over the verdict's candidate rounds
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
        "decided_at": record.get("decided_at") if status == "unchanged" else None,
    }
    row.update(speculation_setup(record))
    for level, prefix in ((low, "c1"), (high, "c8")):
        means = _round_means(record, level)
        if means is None:
            continue
        row["%s_tok_s_before" % prefix] = means[0]["throughput_tok_s"]
        row["%s_tok_s_after" % prefix] = means[1]["throughput_tok_s"]
        if prefix == "c1":
            row["tpot_p50_before"], row["tpot_p50_after"] = means[0]["tpot_ms_p50"], means[1]["tpot_ms_p50"]
    sequential = bool(verdict.get("estimates"))
    row["interval"] = sequential
    for column, key, invert, fallback in (
            ("c1_gain", "c1_throughput_gain", False, (row["c1_tok_s_before"], row["c1_tok_s_after"])),
            ("tpot_change", "c1_tpot_drop", True, (row["tpot_p50_before"], row["tpot_p50_after"])),
            ("c8_change", "c8_throughput_change", False, (row["c8_tok_s_before"], row["c8_tok_s_after"]))):
        est = _estimate(verdict, key, invert) if sequential else None
        if est is None and not sequential:
            point = _ratio_change(*fallback)
            est = None if point is None else {"point": point, "low": None, "high": None}
        row[column] = est and est["point"]
        row[column + "_low"] = est and est["low"]
        row[column + "_high"] = est and est["high"]
    # A simulated board's stand-in runs time_scale times faster than the board it models: the tables show
    # board time (tok/s x scale, ms / scale), as the metrics and the roofline do; ratios are unaffected.
    scale = record_time_scale(record)
    row["time_scale"] = scale
    if scale != 1.0:
        for key in ("c1_tok_s_before", "c1_tok_s_after", "c8_tok_s_before", "c8_tok_s_after"):
            if isinstance(row.get(key), (int, float)):
                row[key] = row[key] * scale
        for key in ("tpot_p50_before", "tpot_p50_after", "ttft_p50_before", "ttft_p50_after"):
            if isinstance(row.get(key), (int, float)):
                row[key] = row[key] / scale
    row["failed"] = status in FAILED_STATUSES
    row["outcome"] = outcome_of(row)
    return row


def group_by_family(rows):
    """{family: [rows sorted by host]} with families sorted by name."""
    groups = {}
    for row in rows:
        groups.setdefault(row["family"], []).append(row)
    return dict((fam, sorted(groups[fam], key=lambda r: r["host"])) for fam in sorted(groups))


def outcome_of(row):
    """Where a host stands (one of OUTCOMES): a converged host (``unchanged``) by what its verdict did,
    inconclusive and lossy results and interrupted hosts need a human."""
    status, decision, action = row["status"], row["decision"], row.get("action")
    if row.get("failed") or status in FAILED_STATUSES:
        return "failed"
    if decision in ("inconclusive", "lossy"):
        return "human"
    if status in ("kept", "reverted", "refused", "off", "held", "planned"):
        return status
    if status == "unchanged":
        if decision in ("refused", "off"):
            return decision  # a converged host the rules refuse, or the inventory turns off
        if action in ("keep", "revert"):
            return "kept" if action == "keep" else "reverted"
        return "reverted" if row.get("runs_now") in (None, "baseline") else "kept"
    return "human"  # queued, started, pending, unknown: the run stopped in the middle of this host


def _median_of(rows, field):
    values = [r[field] for r in rows if isinstance(r.get(field), (int, float))]
    return median(values) if values else None


def family_summary(rows):
    """Host count, decision and outcome counts, and the medians of the hosts that speculate now (kept):
    what the family gains as it runs, never pooled with reverted hosts."""
    decisions, outcomes = {}, {}
    for row in rows:
        decisions[row["decision"]] = decisions.get(row["decision"], 0) + 1
        outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1
    kept = [r for r in rows if r["outcome"] == "kept" and r["c1_gain"] is not None]
    return {
        "hosts": len(rows),
        "kept_measured": len(kept),
        "decisions": decisions,
        "outcomes": outcomes,
        "medians": dict((f, _median_of(kept, f)) for f in MEDIAN_FIELDS),
    }


def fleet_gain(rows):
    """What the fleet gains as it runs now: the kept hosts' estimates (median, lowest, highest), and the mean
    c=1 throughput change over every host the verdict judged, where a host that runs the baseline counts 0."""
    kept = [r for r in rows if r["outcome"] == "kept" and r["c1_gain"] is not None]
    judged = [r for r in rows if r["outcome"] in ("kept", "reverted", "human") and r["c1_gain"] is not None]
    out = {"kept": len(kept), "judged": len(judged)}
    for field in ("c1_gain", "tpot_change", "c8_change"):
        values = sorted(r[field] for r in kept if isinstance(r.get(field), (int, float)))
        out[field] = {"median": median(values), "low": values[0], "high": values[-1]} if values else None
    out["c1_gain_judged_mean"] = (math.fsum(r["c1_gain"] if r["outcome"] == "kept" else 0.0 for r in judged)
                                  / len(judged)) if judged else None
    return out


def _most_common(values):
    """(most common value, how many differ from it) of JSON-like values; (None, 0) for none."""
    counted = []
    for value in values:
        for entry in counted:
            if entry[0] == value:
                entry[1] += 1
                break
        else:
            counted.append([value, 1])
    if not counted:
        return None, 0
    best = max(counted, key=lambda e: e[1])
    return best[0], len(values) - best[1]


BENCH_SIZE_KEYS = ("num_prompts", "input_len", "output_len", "warmup_prompts", "concurrency", "prompt_kind")


def run_settings(records):
    """The run's verdict thresholds and benchmark size, as most hosts had them ({thresholds, benchmark},
    each with how many hosts differ)."""
    thresholds = [r["verdict"]["thresholds"] for r in records if isinstance(r.get("verdict"), dict)
                  and isinstance(r["verdict"].get("thresholds"), dict)]
    benches = []
    for record in records:
        config = (record.get("baseline") or {}).get("config") if isinstance(record.get("baseline"), dict) else None
        if isinstance(config, dict):
            benches.append(dict((k, config.get(k)) for k in BENCH_SIZE_KEYS if k in config))
    t, t_differ = _most_common(thresholds)
    b, b_differ = _most_common(benches)
    return {"thresholds": t, "thresholds_differ": t_differ, "benchmark": b, "benchmark_differ": b_differ}


def build_report(records, run_id, generated_at, expected_hosts=None, low=1, high=8, previous=None):
    """The report dict written as report.json; ``previous`` is the last run's report.json (for ``since``)."""
    records = [r for r in (records or []) if isinstance(r, dict)]
    rows = [host_row(r, low, high) for r in records]
    seen = set(r["host"] for r in rows)
    missing = sorted(h for h in (expected_hosts or []) if h not in seen)
    groups = group_by_family(rows)
    decisions, outcomes = {}, {}
    for row in rows:
        decisions[row["decision"]] = decisions.get(row["decision"], 0) + 1
        outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1
    if missing:
        outcomes["failed"] = outcomes.get("failed", 0) + len(missing)
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "generated_at": generated_at,
        "concurrency": {"low": low, "high": high},
        "summary": {"hosts": len(rows) + len(missing), "decisions": decisions, "outcomes": outcomes,
                    "simulated": sum(1 for r in rows if r["simulated"]), "missing": len(missing),
                    "time_scales": time_scales(records), "fleet": fleet_gain(rows),
                    "settings": run_settings(records)},
        "families": dict((fam, family_summary(fam_rows)) for fam, fam_rows in groups.items()),
        "hosts": [dict(row=row, record=rec, why=explain(normalize(rec))) for row, rec in zip(rows, records)],
        "missing_hosts": missing,
        "since": since_previous(rows, missing, previous),
    }


# What a host's line of the report is, for "what changed since the last run": the words a reader compares.
SINCE_FIELDS = (("outcome", "outcome"), ("runs_now", "runs now"), ("method", "method"), ("k", "k"),
                ("head", "speculator"), ("schedule_upto", "speculates up to batch"), ("vllm", "vLLM"),
                ("model", "model"))


def since_previous(rows, missing, previous):
    """What changed since ``previous`` (the last run's report.json, or None): per host, the fields of SINCE_FIELDS
    that differ, the hosts new in this run and those the last run had and this one does not.

    None when there is no readable previous report. Hosts another run left alone (converged) compare as they
    are recorded, so a host unchanged since its decision shows no change."""
    if not isinstance(previous, dict) or not isinstance(previous.get("hosts"), list):
        return None
    before = {}
    for entry in previous["hosts"]:
        row = entry.get("row") if isinstance(entry, dict) else None
        if isinstance(row, dict) and row.get("host"):
            before[str(row["host"])] = row
    for host in previous.get("missing_hosts") or []:
        before.setdefault(str(host), {"host": str(host), "outcome": "failed"})
    now = dict((r["host"], r) for r in rows)
    for host in missing:
        now.setdefault(host, {"host": host, "outcome": "failed"})
    changed = []
    for host in sorted(set(now) & set(before)):
        what = []
        for key, words in SINCE_FIELDS:
            old, new = before[host].get(key), now[host].get(key)
            if old != new and not (old in (None, "") and new in (None, "")):
                what.append("%s %s → %s" % (words, "–" if old in (None, "") else old, "–" if new in (None, "") else new))
        if what:
            changed.append({"host": host, "changes": what})
    return {"run_id": str(previous.get("run_id") or "?"), "generated_at": str(previous.get("generated_at") or "?"),
            "changed": changed, "new": sorted(set(now) - set(before)), "gone": sorted(set(before) - set(now))}


def since_line(report):
    """One sentence: how many hosts changed since the last run, or None when there was none to compare with."""
    since = report.get("since")
    if not since:
        return None
    parts = ["%d host(s) changed" % len(since["changed"])]
    for key, words in (("new", "new"), ("gone", "not in this run")):
        hosts = since[key]
        if hosts:
            named = ", ".join(hosts[:10]) + (", ..." if len(hosts) > 10 else "")
            parts.append("%d %s (%s)" % (len(hosts), words, named))
    return "Since run %s (%s): %s." % (since["run_id"], since["generated_at"], "; ".join(parts))


def since_rows(report):
    since = report.get("since") or {}
    return [(c["host"], "; ".join(c["changes"])) for c in since.get("changed") or []]


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


def fmt_change(point, low=None, high=None):
    """'+53.3% [+42.1, +61.0]' (the verdict's estimate and its interval), '+53.3%' without one, '–' for none."""
    if point is None:
        return "–"
    text = "%+.1f%%" % (point * 100.0)
    if low is not None and high is not None:
        text += " [%+.1f, %+.1f]" % (low * 100.0, high * 100.0)
    return text


def _change_cell(row, column):
    return fmt_change(row.get(column), row.get(column + "_low"), row.get(column + "_high"))


def runs_now_label(row):
    """'eagle3 k=3', 'eagle3 k=3 up to batch 1' (the third arm's schedule), 'baseline' or '–': what the host serves now."""
    if row["outcome"] in ("reverted", "refused", "off", "human") or row.get("runs_now") == "baseline":
        return "baseline"
    if row.get("method"):
        return (row["method"] + (" k=%s" % row["k"] if row.get("k") else "")
                + (" up to batch %s" % row["schedule_upto"] if row.get("schedule_upto") else ""))
    return row.get("runs_now") or "–"


def decided_label(row):
    """When the decision was made: this run, or the date of a converged host's earlier verdict."""
    if row["status"] == "unchanged":
        return "earlier: %s" % str(row["decided_at"])[:10] if row.get("decided_at") else "an earlier run"
    if row["outcome"] in ("kept", "reverted", "human") and row.get("action"):
        return "this run"
    return ""


TABLE_HEADER = ("Host", "Decision", "Runs now", "Model · vLLM", "c=1 tok/s baseline", "c=1 throughput",
                "TPOT p50 ms baseline", "TPOT p50", "c=8 throughput", "Acceptance", "Decided")


def table_cells(row):
    return (host_label(row), decision_label(row), runs_now_label(row),
            " · ".join(str(x) for x in (row.get("model_served"), row.get("vllm") and "vLLM %s" % row["vllm"]) if x) or "–",
            fmt_num(row["c1_tok_s_before"]), _change_cell(row, "c1_gain"),
            fmt_num(row["tpot_p50_before"]), _change_cell(row, "tpot_change"), _change_cell(row, "c8_change"),
            fmt_num(row["acceptance_rate"], 2), decided_label(row))


def median_cells(summary):
    m = summary["medians"]
    return ("median of the %d kept" % summary["kept_measured"], "", "", "",
            fmt_num(m["c1_tok_s_before"]), fmt_change(m["c1_gain"]), fmt_num(m["tpot_p50_before"]),
            fmt_change(m["tpot_change"]), fmt_change(m["c8_change"]), fmt_num(m["acceptance_rate"], 2), "")


def outcome_counts(report):
    """[(outcome, words, count)] in OUTCOMES order, outcomes with no host left out."""
    counts = report["summary"].get("outcomes") or {}
    return [(key, words, counts[key]) for key, words in OUTCOMES if counts.get(key)]


def headline(report):
    """The fleet as it runs now, in one or two sentences (kept hosts only)."""
    summary = report["summary"]
    fleet = summary.get("fleet") or {}
    total = summary["hosts"]
    kept = (summary.get("outcomes") or {}).get("kept", 0)
    text = "%d of %d host%s speculate now." % (kept, total, "" if total == 1 else "s")
    gain = fleet.get("c1_gain")
    if gain:
        text += " On the %d with a measured verdict, throughput at c=%s changed by a median %s (hosts from %s to %s)" % (
            fleet["kept"], report["concurrency"]["low"], fmt_change(gain["median"]), fmt_change(gain["low"]),
            fmt_change(gain["high"]))
        if fleet.get("tpot_change"):
            text += ", TPOT p50 by %s" % fmt_change(fleet["tpot_change"]["median"])
        if fleet.get("c8_change"):
            text += ", throughput at c=%s by %s" % (report["concurrency"]["high"], fmt_change(fleet["c8_change"]["median"]))
        text += "."
    if fleet.get("c1_gain_judged_mean") is not None and fleet.get("judged"):
        text += (" Over all %d hosts the verdict judged, counting the ones that run the baseline as 0, the mean "
                 "throughput change at c=%s is %s." % (
                     fleet["judged"], report["concurrency"]["low"], fmt_change(fleet["c1_gain_judged_mean"])))
    return text


def _thr(value):
    return "%g%%" % round(100.0 * value, 2)


def settings_lines(report):
    """The run's thresholds and benchmark size, in words (empty when the records do not say)."""
    settings = report["summary"].get("settings") or {}
    lines = []
    t = settings.get("thresholds")
    if t:
        text = ("Keep when throughput at c=%s rises at least %s and TPOT p50 falls at least %s; revert below +%s, or when "
                "throughput at c=%s falls more than %s; marginal results %s. Budget per host: %s to %s rounds, %s "
                "requests, %.0f min; intervals ±%g standard errors (regression check ±%g)."
                % (t.get("low_concurrency"), _thr(t["keep_throughput_gain"]), _thr(t["keep_tpot_drop"]),
                   _thr(t["revert_throughput_gain"]), t.get("high_concurrency"), _thr(t["c8_regression_tolerance"]),
                   "revert" if t.get("marginal_action") == "revert" else "are kept (marginal_action: keep)",
                   t.get("min_rounds"), t.get("max_rounds"), t.get("max_requests"), (t.get("max_wall_s") or 0) / 60.0,
                   t.get("z"), t.get("regression_z") if t.get("regression_z") is not None else t.get("z")))
        if settings.get("thresholds_differ"):
            text += " (%d host(s) ran with other settings.)" % settings["thresholds_differ"]
        lines.append(("Thresholds", text))
    b = settings.get("benchmark")
    if b:
        text = "%s prompts per round and level (%s input, %s output tokens, %s), at concurrency %s, after %s warm-up prompts." % (
            b.get("num_prompts", "?"), b.get("input_len", "?"), b.get("output_len", "?"), b.get("prompt_kind") or "prompts",
            ", ".join(str(c) for c in b.get("concurrency") or []) or "?", b.get("warmup_prompts", 0))
        if settings.get("benchmark_differ"):
            text += " (%d host(s) ran another benchmark.)" % settings["benchmark_differ"]
        lines.append(("Benchmark", text))
    since = since_line(report)
    if since:
        lines.append(("Since the last run", since))
    return lines


def attention_hosts(report):
    """[(host, outcome words, the first reason)] of every host that needs a human or failed: none left out."""
    out = []
    for entry in report["hosts"]:
        row = entry["row"]
        if row["outcome"] not in ("human", "failed"):
            continue
        why = (entry.get("why") or {}).get("why") or []
        out.append((host_label(row), decision_label(row) if row["outcome"] == "human" else row["status"],
                    why[0] if why else ""))
    out += [(h, "no record", "unreachable or failed before its result was recorded") for h in report["missing_hosts"]]
    return out


def attention_groups(report):
    """attention_hosts grouped by (outcome words, reason): [(what, reason, [hosts])], first seen first, so
    300 hosts failing on one cause read as one line naming all of them."""
    groups = []
    for host, what, text in attention_hosts(report):
        for group in groups:
            if group[0] == what.replace(" ⚑", "") and group[1] == text:
                group[2].append(host)
                break
        else:
            groups.append((what.replace(" ⚑", ""), text, [host]))
    return groups


def _iqr_bounds(values):
    values = sorted(values)
    n = len(values)
    q1, q3 = values[n // 4], values[(3 * n) // 4 if n > 1 else 0]
    spread = q3 - q1
    return q1 - 1.5 * spread, q3 + 1.5 * spread


OUTLIER_FIELDS = (("c1_gain", "throughput c=1"), ("tpot_change", "TPOT p50"), ("c8_change", "throughput c=8"))


def outliers(report):
    """Hosts whose estimate lies outside its family's spread (beyond 1.5 interquartile ranges of the family's
    hosts with the same outcome, at least 4 of them): [(host, family, what, value, family median)]."""
    out = []
    for family, rows in _rows_by_family(report).items():
        by_outcome = {}
        for row in rows:
            by_outcome.setdefault(row["outcome"], []).append(row)
        for outcome, group in sorted(by_outcome.items()):
            for field, words in OUTLIER_FIELDS:
                values = [r[field] for r in group if isinstance(r.get(field), (int, float))]
                if len(values) < 4:
                    continue
                low, high = _iqr_bounds(values)
                mid = median(values)
                for row in group:
                    value = row.get(field)
                    if isinstance(value, (int, float)) and (value < low or value > high):
                        out.append({"host": row["host"], "family": family, "outcome": outcome, "what": words,
                                    "value": value, "family_median": mid})
    return sorted(out, key=lambda o: (o["family"], o["host"], o["what"]))


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


def setup_text(row):
    """'eagle3, k=3; serves llama-3.1-8b on vLLM 0.20.1; decided this run' or None."""
    parts = []
    if row.get("method"):
        parts.append("candidate %s%s%s" % (row["method"], " (%s)" % row["head"] if row.get("head") else "",
                                           ", k=%s" % row["k"] if row.get("k") else ""))
    if row.get("model_served") or row.get("vllm"):
        parts.append("serves %s%s" % (row.get("model_served") or "?", " on vLLM %s" % row["vllm"] if row.get("vllm") else ""))
    if row.get("outcome"):
        parts.append("runs %s now" % runs_now_label(row))
    decided = decided_label(row)
    if decided:
        parts.append("decided " + decided)
    return "; ".join(parts) or None


def record_time_scale(record):
    """The stand-in's time_scale of a record's benchmarks (1.0 for a real board or an unlabelled result)."""
    for arm in ("baseline", "candidate"):
        result = record.get(arm)
        scale = time_scale_of(result) if isinstance(result, dict) else None
        if scale and scale > 0:
            return scale
    return 1.0


def latency_tails(record, concurrency=1):
    """'TPOT p50/p90/p99 ms 3.6/3.9/4.1 → 2.1/2.3/2.5, TTFT ... (last round of each arm, c=1)' or None: the
    tails a user feels, which the verdict does not judge (in board time)."""
    scale = record_time_scale(record)
    parts = []
    for metric in ("tpot", "ttft", "e2e_latency"):
        arms = []
        for arm in ("baseline", "candidate"):
            run = find_run(record.get(arm), concurrency) if isinstance(record.get(arm), dict) else None
            values = [(run or {}).get("%s_ms_%s" % (metric, q)) for q in ("p50", "p90", "p99")]
            values = [v / scale if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in values]
            if any(isinstance(v, (int, float)) for v in values):
                arms.append("/".join(fmt_num(v) if isinstance(v, (int, float)) else "–" for v in values))
        if len(arms) == 2:
            parts.append("%s p50/p90/p99 ms %s → %s" % ({"e2e_latency": "end-to-end"}.get(metric, metric.upper()),
                                                        arms[0], arms[1]))
    if not parts:
        return None
    return "%s (last round of each arm, c=%d, baseline → candidate)" % ("; ".join(parts), concurrency)


def why_items(entry):
    """(label, text) pairs of one host's "why" block, in reading order; empty parts left out."""
    why = entry.get("why") or explain(normalize(entry.get("record") or {}))
    items = [("Why", " ".join(why["why"]) or "no reason recorded")]
    setup = setup_text(entry.get("row") or host_row(entry.get("record") or {}))
    if setup:
        items.append(("Setup", setup))
    if why.get("evidence"):
        items.append(("Evidence", why["evidence"]))
    tails = latency_tails(entry.get("record") or {})
    if tails:
        items.append(("Latency tails", tails))
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
        note += (" The stand-in runs its board profile %s faster than board time (time_scale %s); every tok/s "
                 "and millisecond shown here is converted to board time, what the profile's board would show "
                 "(ratios - gain, drop, acceptance - are unaffected)." % (
                     "%gx" % (1 / scale) if scale else "several times", ", ".join("%g" % s for s in scales)))
    return note


def dry_run_note(report):
    """A --check run changed nothing: say so above the tables (its rows say what a real run would do)."""
    if not any(e["row"]["status"] == "planned" for e in report["hosts"]):
        return None
    return ("DRY RUN (--check): no host was changed. Rows marked planned say what a real run would do "
            "(the speculation it would start, its ladder and round budget, or the refusal).")


def _outlier_cells(item):
    return (item["host"], item["family"], dict(OUTCOMES).get(item["outcome"], item["outcome"]).split(":")[0],
            item["what"], fmt_change(item["value"]), fmt_change(item["family_median"]))


OUTLIER_HEADER = ("Host", "Family", "Outcome", "Estimate", "Host", "Family median")


def render_markdown(report, title="jetson.specdec fleet report"):
    intro = "Run `%s`, generated %s. %d host(s): %s." % (
        _md_text(report["run_id"]).replace("`", "'"), _md_text(report["generated_at"]), report["summary"]["hosts"],
        _md_text(decision_summary(report)))
    lines = ["# %s" % _md_text(title), "", intro, ""]
    for note in (dry_run_note(report), simulated_note(report)):
        if note:
            lines += ["> **%s**" % note, ""]
    lines += ["## Summary", "", "**%s**" % _md_text(headline(report)), ""]
    lines += _md_table(("Outcome", "Hosts"), [(words, str(count)) for _key, words, count in outcome_counts(report)])
    lines.append("")
    attention = attention_hosts(report)
    if attention:
        lines += ["Needs a look (every host that needs a human or failed):", ""]
        lines += ["- **%s** (%s): %s" % (_md_text(", ".join(hosts)), _md_text(what), _md_text(text))
                  for what, text, hosts in attention_groups(report)]
        lines.append("")
    lines += ["- **%s**: %s" % (label, _md_text(text)) for label, text in settings_lines(report)]
    lines += ["- **Signs**: %s" % _md_text(SIGN_CONVENTION), "- **Rounds**: %s" % _md_text(ROUNDS_JARGON), ""]
    changes = since_rows(report)
    if changes:
        lines += ["## Since run %s" % _md_text(report["since"]["run_id"]), ""]
        lines += _md_table(("Host", "What changed"), changes)
        lines.append("")
    found = outliers(report)
    if found:
        lines += ["## Outliers", "", "Hosts whose estimate lies far outside their family's hosts with the same outcome "
                  "(beyond 1.5 interquartile ranges).", ""]
        lines += _md_table(OUTLIER_HEADER, [_outlier_cells(o) for o in found])
        lines.append("")
    for family, rows in _rows_by_family(report).items():
        summary = report["families"][family]
        lines += ["## %s (%d host%s)" % (_md_text(family), len(rows), "" if len(rows) == 1 else "s"), ""]
        lines += _md_table(TABLE_HEADER, [table_cells(r) for r in rows]
                           + ([median_cells(summary)] if summary["kept_measured"] else []))
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
    lines.append("The baseline columns are the geometric means of the baseline rounds the verdict used; the change "
                 "columns are the verdict's own estimates. A family's median row takes only its kept hosts (what it "
                 "gains as it runs now). Runs now says which of the two arms the host serves.")
    return "\n".join(lines) + "\n"


def console_lines(markdown):
    """The head of the Markdown report, up to the end of its Summary: what the play prints.

    The per-host tables and explanations stay in the files: at 300 hosts the whole text is thousands of lines, and
    the summary already names every host that needs a look."""
    lines = markdown.rstrip("\n").split("\n")
    try:
        start = lines.index("## Summary")
    except ValueError:
        return lines
    for index in range(start + 1, len(lines)):
        if lines[index].startswith("## "):
            return lines[:index]
    return lines


def _table(header, rows, median_row=None, classes=None):
    """One table of the HTML page as plain data: {header, rows: [{cells, css}], median}; every cell a string."""
    classes = classes or [None] * len(rows)
    return {"header": [str(h) for h in header],
            "rows": [{"cells": [str(c) for c in row], "css": classes[index]} for index, row in enumerate(rows)],
            "median": [str(c) for c in median_row] if median_row else None}


# One colour per outcome (the summary's counts, each host's row and its Why heading).
OUTCOME_COLOURS = {"kept": "#d8f0d8", "reverted": "#ececec", "human": "#ffe0b3", "refused": "#dde8f6",
                   "off": "#e8e4f4", "failed": "#f8d0d0", "held": "#f6f6e0", "planned": "#f6f6e0"}
CHART_ALT = ("Per family, each host's change in throughput at concurrency 1 and 8 and in TPOT p50 with its interval, "
             "coloured by outcome, over the family's spread")
OUTLIERS_INTRO = ("Hosts whose estimate lies far outside their family's hosts with the same outcome "
                  "(beyond 1.5 interquartile ranges).")
HTML_FOOTER = ("The baseline columns are the geometric means of the baseline rounds the verdict used; the change "
               "columns are the verdict's own estimates. A family's median row takes only its kept hosts (what it "
               "gains as it runs now).")


def html_view(report, chart_png_b64=None, chart_note=None, title="jetson.specdec fleet report"):
    """Everything report.html shows, as plain data (strings, numbers, lists, dicts; no markup).

    The controller renders it with the collection's template (plugins/plugin_utils/templates/fleet_report.html.j2,
    autoescaped): this function decides what each row and cell says and which outcome colours it; the
    template only lays it out. ``chart_png_b64`` is the chart as base64 PNG (embedded as a data URI),
    ``chart_note`` says why there is none."""
    counts = outcome_counts(report)
    families = []
    for family, rows in _rows_by_family(report).items():
        summary = report["families"][family]
        families.append({"name": family, "hosts": len(rows),
                         "table": _table(TABLE_HEADER, [table_cells(r) for r in rows],
                                         median_cells(summary) if summary["kept_measured"] else None,
                                         classes=["o-" + r["outcome"] for r in rows])})
    found = outliers(report)
    problems = problem_rows(report)
    return {
        "title": str(title),
        "run_id": str(report["run_id"]),
        "generated_at": str(report["generated_at"]),
        "host_count": report["summary"]["hosts"],
        "decisions": decision_summary(report),
        "notes": [note for note in (dry_run_note(report), simulated_note(report)) if note],
        "headline": headline(report),
        "outcomes": _table(("Outcome", "Hosts"), [(words, count) for _key, words, count in counts],
                           classes=["o-" + key for key, _w, _c in counts]),
        "attention": [{"hosts": [{"name": h, "anchor": "why-" + h.split(" (SIMULATED)")[0]} for h in hosts],
                       "what": what, "text": text} for what, text, hosts in attention_groups(report)]
        if attention_hosts(report) else [],
        "settings": [{"label": label, "text": text} for label, text in settings_lines(report)]
        + [{"label": "Signs", "text": SIGN_CONVENTION}, {"label": "Rounds", "text": ROUNDS_JARGON}],
        "chart": {"src": "data:image/png;base64," + chart_png_b64, "alt": CHART_ALT} if chart_png_b64 else None,
        "chart_note": chart_note,
        "outliers": {"intro": OUTLIERS_INTRO, "table": _table(OUTLIER_HEADER, [_outlier_cells(o) for o in found])}
        if found else None,
        "since": {"run_id": report["since"]["run_id"], "table": _table(("Host", "What changed"), since_rows(report))}
        if since_rows(report) else None,
        "families": families,
        "problems": _table(("Host", "Status", "Error"), problems) if problems else None,
        "why": [{"anchor": "why-" + entry["row"]["host"], "outcome": entry["row"]["outcome"],
                 "host": host_label(entry["row"]), "decision": decision_label(entry["row"]),
                 "lines": [{"label": label, "text": str(text)} for label, text in why_items(entry)]}
                for entry in _entries_in_table_order(report)],
        "footer": HTML_FOOTER,
        "colours": [{"outcome": key, "colour": colour} for key, colour in sorted(OUTCOME_COLOURS.items())],
    }


CHART_FIELDS = ("c1_gain", "tpot_change", "c8_change")


def chart_series(report):
    """One point per host with a verdict's change, for the per-family chart: {host, family, outcome, and
    per field of CHART_FIELDS its (point, low, high)}, families sorted, hosts as in the tables."""
    out = []
    for family, rows in _rows_by_family(report).items():
        for row in rows:
            if row["failed"] or all(row.get(f) is None for f in CHART_FIELDS):
                continue
            point = {"host": row["host"], "family": family, "outcome": row["outcome"], "decision": decision_label(row)}
            for field in CHART_FIELDS:
                point[field] = (row.get(field), row.get(field + "_low"), row.get(field + "_high"))
            out.append(point)
    return out
