# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The fleet report from recorded records (tests/fixtures/records): its numbers are the verdict's, its
summary counts what the fleet runs now, nothing is cut off, and it holds at 300 hosts (issue 33)."""
import copy
import html
import importlib.util
import math
import os
import re

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec
from ansible_collections.jetson.specdec.plugins.module_utils.record import report as fr
from ansible_collections.jetson.specdec.plugins.plugin_utils.report_page import render_html
from ansible_collections.jetson.specdec.plugins.module_utils.record.why import explain

_SPEC = importlib.util.spec_from_file_location("scale", os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "fixtures", "records", "scale.py"))
scale = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(scale)
RECORDS = scale.recorded()  # fleet-run's eight, then a refused and a failed host from demo-run
BY_HOST = dict((r["host"], r) for r in RECORDS)


def build(records=None, **kw):
    return fr.build_report(RECORDS if records is None else records, "r", "2026-12-05T17:00:00Z", **kw)


def rows():
    return dict((e["row"]["host"], e["row"]) for e in build()["hosts"])


def test_the_change_columns_are_the_verdicts_estimates_with_intervals_in_one_sign_convention():
    row = rows()["agx-02"]
    est = BY_HOST["agx-02"]["verdict"]["estimates"]
    assert (row["c1_gain"], row["c1_gain_low"], row["c1_gain_high"]) == (
        est["c1_throughput_gain"]["point"], est["c1_throughput_gain"]["low"], est["c1_throughput_gain"]["high"])
    # the verdict's TPOT drop of +40.4 % is a TPOT change of -40.4 %: + always means the number rose
    assert row["tpot_change"] == -est["c1_tpot_drop"]["point"] < 0
    assert (row["tpot_change_low"], row["tpot_change_high"]) == (-est["c1_tpot_drop"]["high"], -est["c1_tpot_drop"]["low"])
    # the c=8 regression that reverted it shows as one (the last round's numbers could say otherwise)
    assert row["c8_change_high"] == est["c8_throughput_change"]["high"] < 0 and row["interval"] is True
    assert fr.fmt_change(row["c1_gain"], row["c1_gain_low"], row["c1_gain_high"]) == "+49.7% [+36.9, +63.7]"
    md = fr.render_markdown(build())
    # in board time: the stand-in ran 10x faster (time_scale 0.1), 248.0 tok/s and 3.54 ms as it measured
    assert "| agx-02 (SIMULATED) | revert | baseline | llama-3.1-8b · vLLM 0.20.1 | 24.8 | +49.7% [+36.9, +63.7] | 35.4 " \
           "| -40.4% [-47.4, -32.6] | -27.0% [-35.4, -17.5] | 0.51 | this run |" in md
    assert "drop +" not in md.split("## Why each host", maxsplit=1)[0]  # no double negative in the tables


def test_the_arms_numbers_are_the_geometric_means_of_the_rounds_the_verdict_used():
    record = BY_HOST["thor-noisy-01"]
    base = [lvl["throughput_tok_s"] for r in record["rounds"] if r["arm"] == "baseline"
            for lvl in r["levels"] if lvl["concurrency"] == 1]
    assert len(base) == 5
    row = fr.host_row(record)
    # board time: the stand-in's numbers times its time_scale (0.1)
    assert row["time_scale"] == 0.1
    assert row["c1_tok_s_before"] == pytest.approx(0.1 * math.exp(sum(math.log(v) for v in base) / len(base)))
    # a round set aside is not evidence: it leaves the mean too
    aside = copy.deepcopy(record)
    aside["verdict"]["set_aside"] = [{"round": 1, "arm": "baseline", "reasons": ["throttled"]}]
    assert fr.host_row(aside)["c1_tok_s_before"] == pytest.approx(0.1 * math.exp(sum(math.log(v) for v in base[1:]) / 4))


def test_outcomes_and_the_fleet_as_it_runs_now_count_kept_hosts_only():
    report = build(expected_hosts=["orin-09"])
    assert report["summary"]["outcomes"] == {"kept": 3, "reverted": 2, "human": 1, "off": 2, "refused": 1, "failed": 2}
    fleet = report["summary"]["fleet"]
    kept = [BY_HOST[h]["verdict"]["estimates"]["c1_throughput_gain"]["point"] for h in ("agx-01", "thor-01", "thor-noisy-01")]
    assert fleet["kept"] == 3 and fleet["c1_gain"] == {"median": sorted(kept)[1], "low": min(kept), "high": max(kept)}
    judged = [BY_HOST[h]["verdict"]["estimates"]["c1_throughput_gain"]["point"]
              for h in ("agx-01", "agx-02", "agx32-01", "thor-01", "thor-hot-01", "thor-noisy-01")]
    assert fleet["judged"] == 6 and fleet["c1_gain_judged_mean"] == pytest.approx(sum(kept) / len(judged))
    assert fr.headline(report).startswith("3 of 11 hosts speculate now. On the 3 with a measured verdict, throughput "
                                          "at c=1 changed by a median +50.5% (hosts from +39.6% to +57.0%)")
    # the thor family's median row is its two kept hosts', not pooled with the inconclusive one
    thor = report["families"]["thor"]
    assert thor["kept_measured"] == 2
    assert thor["medians"]["c1_gain"] == pytest.approx((kept[1] + kept[2]) / 2)


def test_outcome_of_each_status():
    row = dict(fr.host_row({}), failed=False)
    cases = [({"status": "kept", "decision": "keep"}, "kept"), ({"status": "reverted", "decision": "lossy"}, "human"),
             ({"status": "reverted", "decision": "inconclusive"}, "human"), ({"status": "queued", "decision": "queued"}, "human"),
             ({"status": "unchanged", "decision": "keep", "action": "keep"}, "kept"),
             ({"status": "unchanged", "decision": "revert", "action": "revert"}, "reverted"),
             ({"status": "unchanged", "decision": "refused"}, "refused"),
             ({"status": "unchanged", "decision": "off"}, "off"),
             ({"status": "refused", "decision": "refused"}, "refused"), ({"status": "off", "decision": "off"}, "off"),
             ({"status": "failed", "decision": "failed", "failed": True}, "failed")]
    for change, outcome in cases:
        assert fr.outcome_of(dict(row, **change)) == outcome, change


def test_the_summary_comes_first_with_the_runs_thresholds_benchmark_and_jargon():
    report = build()
    settings = report["summary"]["settings"]
    assert settings["thresholds"]["keep_throughput_gain"] == 0.3 and settings["thresholds"]["max_rounds"] == 40
    assert settings["thresholds_differ"] == 1  # thor-hot-01 ran with max_rounds 4
    assert settings["benchmark"]["num_prompts"] == 16 and settings["benchmark"]["concurrency"] == [1, 8]
    md = fr.render_markdown(report)
    assert md.index("## Summary") < md.index("## agx_orin") < md.index("## Why each host")
    summary = md.split("## Summary")[1].split("\n## ")[0]
    assert "| kept: speculating now | 3 |" in summary and "| needs a human (inconclusive, lossy or interrupted) | 1 |" in summary
    assert "Keep when throughput at c=1 rises at least 30% and TPOT p50 falls at least 20%; revert below +10%" in summary
    assert "16 prompts per round and level (512 input, 64 output tokens" in summary
    assert fr.SIGN_CONVENTION in summary.replace("\\", "") and "B the baseline (speculation off)" in summary
    # every host that needs a human, with the reason that names the threshold it could not settle
    assert "**thor-hot-01 (SIMULATED)** (inconclusive → revert): Inconclusive: the round budget is spent" in summary
    assert "straddles the 30% throughput keep threshold" in summary
    assert "**fl-stale (SIMULATED)** (failed)" in summary


def test_each_host_says_k_method_model_vllm_tails_and_when_it_was_decided():
    row = rows()["thor-01"]
    assert (row["method"], row["k"], row["model_served"], row["vllm"]) == ("eagle3", 5, "llama-3.1-8b", "0.20.1")
    assert fr.runs_now_label(row) == "eagle3 k=5" and fr.runs_now_label(rows()["agx-02"]) == "baseline"
    assert fr.setup_text(row) == ("candidate eagle3 (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B), k=5; serves llama-3.1-8b on "
                                  "vLLM 0.20.1; runs eagle3 k=5 now; decided this run")
    assert rows()["agx32-01"]["head"] is None  # the ladder ended on n-gram: no head, whatever was prefetched
    # a record written now names the head or draft its candidate measured
    judged = rec.judged(rec.new_record("h", "r", {"family": "thor"}), {"action": "keep", "decision": "keep"}, [],
                        {"label": "eagle3 at utilization 0.75", "vllm_server_speculative_model": "org/head"}, {})
    assert judged["speculative_model"] == "org/head" and fr.host_row(judged)["head"] == "org/head"
    tails = fr.latency_tails(BY_HOST["thor-01"])
    # board time (the stand-in's 2.3 ms at time_scale 0.1 is the board's 23 ms)
    assert tails.startswith("TPOT p50/p90/p99 ms 22.9/23.0/23.0 → 15.1/18.1/20.4; TTFT p50/p90/p99 ms"), tails
    # a converged host: its verdict's date, read from the state file by record.from_stored
    state = {"status": "kept", "updated_at": "2026-11-02T03:04:05Z", "verdict": BY_HOST["thor-01"]["verdict"],
             "benchmarks": {"baseline": BY_HOST["thor-01"]["baseline"], "candidate": BY_HOST["thor-01"]["candidate"],
                            "rounds": BY_HOST["thor-01"]["rounds"]},
             "info": {"config_after": "eagle3 at utilization 0.75"}}
    stored = rec.from_stored(rec.new_record("thor-01", "r2", {"family": "thor"}),
                             {"needs_rollout": False, "needs_rollout_reason": "converged", "rollout_state": state})
    assert stored["decided_at"] == "2026-11-02T03:04:05Z"
    converged = fr.host_row(stored)
    assert converged["outcome"] == "kept" and fr.decided_label(converged) == "earlier: 2026-11-02"


def test_the_verdict_records_its_thresholds():
    assert rec.verdict_thresholds({"max_rounds": 4})["max_rounds"] == 4
    assert rec.verdict_thresholds({})["keep_throughput_gain"] == 0.3
    with pytest.raises(ValueError):
        rec.verdict_thresholds({"keep_tpot_drop": 7})


def test_no_reason_is_cut_and_a_fix_is_shown_whole():
    refused = BY_HOST["nano-refused-01"]
    fixes = [reason for reason in refused["reasons"] if "Fix:" in reason]
    assert len(fixes) == 3
    long_reason = refused["reasons"][0] + " " + "x" * 400 + " Fix: the end of a long fix."
    longer = dict(refused, reasons=refused["reasons"] + [long_reason])
    why = explain(rec.normalize(longer))["why"]
    assert why == refused["reasons"] + [long_reason]  # every reason, each in full
    report = build([longer])
    page = html.unescape(render_html(report))
    md = fr.render_markdown(report)
    for reason in fixes + [long_reason]:
        assert reason in page and reason in html.unescape(md.replace("\\|", "|"))
    assert "…" not in page


def test_outliers_are_listed_per_family_and_outcome():
    records = scale.fleet(40)
    odd = next(r for r in records if r["host"].startswith("thor-01-"))
    odd["verdict"]["estimates"]["c1_throughput_gain"].update(point=1.9, low=1.7, high=2.1)
    found = fr.outliers(build(records))
    assert [(o["host"], o["what"]) for o in found if o["what"] == "throughput c=1"] == [(odd["host"], "throughput c=1")]
    assert found[0]["family"] == "thor" and found[0]["outcome"] == "kept"
    md = fr.render_markdown(build(records))
    assert "## Outliers" in md and re.search(r"\| %s \| thor \| kept \| throughput c=1 \| \+190\.0%%" % odd["host"], md)


def test_300_hosts_every_host_in_the_tables_and_the_html_rows_coloured_by_outcome():
    report = build(scale.fleet(300))
    assert report["summary"]["hosts"] == 300 and sum(report["summary"]["outcomes"].values()) == 300
    page = render_html(report)
    table_hosts = re.findall(r'<tr class="o-([a-z]+)"><td>([^<]+)</td>', page)
    assert len(set(h for _o, h in table_hosts if " | " not in h)) >= 300
    assert set(o for o, _h in table_hosts) >= {"kept", "reverted", "human", "off", "refused", "failed"}
    assert all("tr.o-%s" % key in page for key, _w in fr.OUTCOMES)


def test_hosts_needing_a_look_for_one_reason_read_as_one_line_naming_every_host():
    report = build(scale.fleet(40))
    groups = fr.attention_groups(report)
    failed = [g for g in groups if g[0] == "failed"]
    assert len(failed) == 1 and len(failed[0][2]) == 4  # fl-stale-n009, -n019, -n029, -n039: one cause
    assert sum(len(hosts) for _w, _t, hosts in groups) == len(fr.attention_hosts(report)) == 8
    md = fr.render_markdown(report)
    assert "- **fl-stale-n009 (SIMULATED), fl-stale-n019 (SIMULATED), fl-stale-n029 (SIMULATED), " \
           "fl-stale-n039 (SIMULATED)** (failed): Rollout lock" in md


def test_the_console_prints_the_summary_not_the_300_hosts_tables():
    """The play prints console_lines (issue 33: no dump of the whole report at fleet scale)."""
    report = build(scale.fleet(300))
    md = fr.render_markdown(report)
    console = fr.console_lines(md)
    assert len(md.splitlines()) > 3000  # the whole text: every host's row and explanation
    assert len(console) < 80, "\n".join(console)
    assert console[0].startswith("# ") and "## Summary" in console
    assert not any(line.startswith("## ") and line != "## Summary" for line in console)
    text = "\n".join(console)
    assert "Needs a look" in text and "fl-stale-n009 (SIMULATED)" in text  # every host that needs a human, named
    assert "### " not in text and "| Host |" not in text
    assert fr.console_lines("no summary here\n") == ["no summary here"]


def test_what_changed_since_the_last_run_per_host_and_the_hosts_new_and_gone():
    """The report says what changed since the last run (issue 33): per host the outcome, what runs, method, k..."""
    first = build()
    later = copy.deepcopy(RECORDS)
    by_host = dict((r["host"], r) for r in later)
    kept = [h for h, r in by_host.items() if fr.host_row(r)["outcome"] == "kept"][0]
    by_host[kept]["status"] = "reverted"
    by_host[kept]["verdict"] = dict(by_host[kept]["verdict"], decision="revert", action="revert")
    gone = later.pop()["host"]
    new = copy.deepcopy(later[0])
    new["host"] = "agx-new-01"
    later.append(new)
    report = fr.build_report(later, "r2", "2026-12-06T17:00:00Z", previous=first)
    since = report["since"]
    assert since["run_id"] == "r" and since["new"] == ["agx-new-01"] and since["gone"] == [gone]
    changed = dict((c["host"], c["changes"]) for c in since["changed"])
    assert list(changed) == [kept], changed  # every other host compares equal
    assert "outcome kept → reverted" in changed[kept]
    md = fr.render_markdown(report)
    assert "## Since run r" in md and "| %s" % kept in md.split("## Since run r", 1)[1].split("## ", 1)[0]
    assert "Since run r (2026-12-05T17:00:00Z): 1 host(s) changed; 1 new (agx-new-01); 1 not in this run (%s)." % gone \
        in "\n".join(fr.console_lines(md))
    page = render_html(report)
    assert "<h2>Since run r</h2>" in page and "outcome kept → reverted" in page
    # no earlier report, or an unreadable one: nothing to say, and nothing breaks
    assert build()["since"] is None and fr.build_report(RECORDS, "r", "t", previous={"hosts": "x"})["since"] is None
    assert "Since run" not in fr.render_markdown(build())


def test_no_simulator_artefact_reaches_the_page_a_manager_reads():
    """Issue 33 ("no simulator artefacts in the showcase"): the stand-in's nvpmodel error and a prefetch
    'in 0.0 s' were in the recorded fleet; the pages rendered from it at 8 and 300 hosts carry neither."""
    for records in (RECORDS, scale.fleet(300)):
        report = build(records)
        page = render_html(report) + fr.render_markdown(report)
        for artefact in ("NVPM ERROR", "nvpmodel.conf", "in 0.0 s"):
            assert artefact not in page, artefact


def test_energy_per_token_and_the_rooflines_power_context_reach_the_page():
    """Issue 36: energy per output token before and after (board time), and the roofline line's tokens per
    joule, from the recorded agx-01's rails (0.1 time scale: the stand-in's 0.173 J per token is the board's
    1.73 J; its 5.78 tokens/J the board's 0.58)."""
    why = explain(BY_HOST["agx-01"])
    assert why["energy"].startswith("at c=1 1.729 -> 1.247 J per output token (-27.9 %; 0.6 -> 0.8 tokens/J at "
                                    "42.8 -> 48.5 W); at c=8 "), why["energy"]
    assert why["roofline"].endswith("; 0.6 -> 0.8 tokens/J at 42.8 -> 48.5 W"), why["roofline"]
    report = build()
    md = fr.render_markdown(report)
    page = render_html(report)
    for text in ("1.729 -> 1.247 J per output token", "0.6 -> 0.8 tokens/J at 42.8 -> 48.5 W"):
        assert html.escape(text) in md and html.escape(text) in page, text  # both escape what they quote
    # a host recorded without rails (agx32-01 was recorded before its fixture had them) says nothing, not a zero
    assert explain(BY_HOST["agx32-01"])["energy"] is None
