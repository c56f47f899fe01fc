# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import pytest

import importlib.util
import json
import re
import os

from ansible_collections.jetson.specdec.plugins.action import fleet_report as report_action
from ansible_collections.jetson.specdec.plugins.module_utils.record import report as fr
from ansible_collections.jetson.specdec.plugins.plugin_utils.report_page import render_html

_SPEC = importlib.util.spec_from_file_location("scale", os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "fixtures", "records", "scale.py"))
scale = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(scale)
# The records a simulated demo rollout spooled (tests/fixtures/records/fleet-run).
FLEET = scale.recorded()[:8]
RECORDED = dict((r["host"], r) for r in FLEET)


def bench(tok_s, tpot, c8=None, acceptance=None):
    return {"runs": [{"concurrency": 1, "throughput_tok_s": tok_s, "tpot_ms_p50": tpot, "failed": 0},
                     {"concurrency": 8, "throughput_tok_s": c8 or tok_s * 6, "tpot_ms_p50": tpot * 2, "failed": 0}],
            "spec_decode": None if acceptance is None else {"acceptance_rate": acceptance}}


def rec(host, family, before, after, decision, **kw):
    r = {"host": host, "facts": {"family": family}, "baseline": bench(*before), "candidate": bench(*after),
         "verdict": {"decision": decision, "action": kw.pop("action", decision), "flagged": kw.pop("flagged", False)},
         "status": kw.pop("status", {"keep": "kept", "revert": "reverted"}.get(decision, "kept"))}
    r.update(kw)
    return r


RECORDS = [
    rec("thor-02", "thor", (30.0, 33.0), (48.0, 21.0), "keep", simulated=True),
    rec("thor-01", "thor", (28.0, 35.0), (42.0, 23.0), "keep"),
    rec("thor-03", "thor", (29.0, 34.0), (31.0, 33.0), "revert"),
    rec("agx-01", "orin-agx", (20.0, 50.0), (25.0, 41.0), "marginal", action="keep", flagged=True),
    rec("agx-02", "orin-agx", (20.0, 50.0), (21.0, 48.0), "marginal", action="revert", flagged=True,
        status="reverted"),
    {"host": "nano-01", "facts": {"family": "orin-nano"}, "status": "unreachable", "error": "ssh: timed out"},
]


def report():
    return fr.build_report(RECORDS, "run-1", "2026-03-01T12:00:00Z", expected_hosts=["thor-01", "ghost-9"])


def test_host_row_numbers():
    row = fr.host_row(RECORDS[1])
    assert (row["c1_tok_s_before"], row["c1_tok_s_after"]) == (28.0, 42.0)
    # a record without a sequential verdict: its one round of each arm, no interval
    assert row["c1_gain"] == pytest.approx(0.5) and row["tpot_change"] == pytest.approx(23.0 / 35.0 - 1)
    assert row["c1_gain_low"] is None and row["interval"] is False
    assert row["c8_tok_s_after"] == 252.0 and not row["failed"]
    empty = fr.host_row({})
    assert empty["family"] == "unknown" and empty["c1_gain"] is None and empty["status"] == "unknown"


def test_acceptance_from_spec_decode_or_candidate():
    r = rec("h", "thor", (10.0, 10.0), (20.0, 5.0), "keep")
    r["candidate"]["spec_decode"] = {"acceptance_rate": 0.66}
    assert fr.host_row(r)["acceptance_rate"] == 0.66
    r["spec_decode"] = {"acceptance_rate": 0.5}
    assert fr.host_row(r)["acceptance_rate"] == 0.5


def test_grouping_and_family_medians():
    rep = report()
    assert list(rep["families"]) == ["orin-agx", "orin-nano", "thor"]
    thor = rep["families"]["thor"]
    assert thor["hosts"] == 3 and thor["decisions"] == {"keep": 2, "revert": 1}
    # the medians are the kept hosts' (thor-01 and thor-02), never pooled with the reverted thor-03
    assert thor["kept_measured"] == 2
    assert thor["medians"]["c1_tok_s_before"] == 29.0 and thor["medians"]["c1_tok_s_after"] == 45.0
    nano = rep["families"]["orin-nano"]
    assert nano["kept_measured"] == 0 and nano["medians"]["c1_gain"] is None  # unreachable hosts stay out of medians
    # #30 item 7: a marginal result that was kept is named so, never just "marginal"
    summary = rep["summary"]
    assert summary["decisions"] == {"keep": 2, "revert": 1, "kept below the keep bar": 1, "marginal": 1,
                                    "unreachable": 1}
    assert (summary["hosts"], summary["simulated"], summary["missing"]) == (7, 1, 1)
    assert summary["outcomes"] == {"kept": 3, "reverted": 2, "failed": 2}
    assert rep["missing_hosts"] == ["ghost-9"]


def test_markdown_tables_and_problem_hosts():
    md = fr.render_markdown(report())
    assert md.startswith("# jetson.specdec fleet report\n")
    assert "2 keep, 1 kept below the keep bar, 1 marginal, 1 revert, 1 unreachable, 1 without a record" in md
    thor = md.split("## thor (3 hosts)")[1]
    # rows sorted by host inside the family, then the median row
    assert thor.index("thor-01 |") < thor.index("thor-02 (SIMULATED)") < thor.index("thor-03") < thor.index("median of the 2 kept")
    assert "| thor-01 | keep | – | – | 28.0 | +50.0% | 35.0 | -34.3% | +50.0% | – | this run |" in md
    assert "| agx-01 | kept below the keep bar ⚑ |" in md and "marginal → keep" not in md
    assert "| agx-02 | marginal → revert ⚑ |" in md
    problems = md.split("## Unreachable or failed hosts")[1]
    assert "| nano-01 | unreachable | ssh: timed out |" in problems
    assert "| ghost-9 | no record |" in problems
    assert "SIMULATED ran against the vLLM stand-in" in md


def test_markdown_escapes_pipes():
    r = {"host": "h|1", "status": "failed", "error": "a|b"}
    md = fr.render_markdown(fr.build_report([r], "x", "t"))
    assert "h\\|1" in md and "a\\|b" in md


def test_html_escapes_and_embeds_chart():
    r = dict(RECORDS[1], host="<script>")
    page = render_html(fr.build_report([r], "x", "t"), chart_png_b64="QUJD", chart_note=None)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'src="data:image/png;base64,QUJD"' in page
    note = render_html(fr.build_report([r], "x", "t"), None, "no matplotlib")
    assert "data:image" not in note and "no matplotlib" in note


def test_chart_series_skips_failed_hosts():
    hosts = [s["host"] for s in fr.chart_series(report())]
    assert hosts == ["agx-01", "agx-02", "thor-01", "thor-02", "thor-03"]


def test_medians_take_only_kept_hosts_and_a_family_without_any_has_no_median_row():
    broken = rec("agx-02", "agx", (20.0, 50.0), (1.0, 1.0), "revert")
    broken["candidate"] = None  # the candidate broke before a result: a baseline only
    reverted = rec("agx-03", "agx", (30.0, 30.0), (31.0, 29.0), "revert")
    refused = {"host": "nx-01", "facts": {"family": "nx"}, "status": "refused", "verdict": {"decision": "refused"}}
    rep = fr.build_report([rec("agx-01", "agx", (10.0, 40.0), (16.0, 25.0), "keep"), broken, reverted, refused],
                          "r", "t")
    agx = rep["families"]["agx"]
    assert agx["kept_measured"] == 1 and agx["medians"]["c1_tok_s_before"] == 10.0  # not pooled with 20 and 30
    md = fr.render_markdown(rep)
    assert "median of the 1 kept" in md.split("## agx")[1].split("##")[0]
    assert "median of" not in md.split("## nx")[1].split("##")[0]
    assert render_html(rep).count("median of") == 1  # agx only


def test_the_simulated_banner_says_how_the_stand_ins_numbers_are_scaled():
    sim = rec("thor-02", "thor", (300.0, 3.0), (480.0, 2.0), "keep", simulated=True)
    sim["baseline"]["simulated"] = sim["candidate"]["simulated"] = "thor_t5000; time_scale=0.1"
    rep = fr.build_report([sim], "r", "t")
    assert rep["summary"]["time_scales"] == [0.1]
    note = fr.simulated_note(rep)
    assert "10x faster than board time (time_scale 0.1)" in note and "converted to board time" in note
    assert "ratios - gain, drop, acceptance - are unaffected" in note
    assert "every tok/s and millisecond shown here is converted to board time" in note
    sim["baseline"]["simulated"] = sim["candidate"]["simulated"] = "thor_t5000; time_scale=1"
    assert "faster than board time" not in fr.simulated_note(fr.build_report([sim], "r", "t"))


def test_a_check_mode_report_says_it_is_a_dry_run():
    planned = {"host": "thor-01", "facts": {"family": "thor"}, "status": "planned",
               "reasons": ["check mode: a real run would benchmark eagle3 h, k=5"]}
    rep = fr.build_report([planned], "r", "t")
    assert fr.dry_run_note(rep).startswith("DRY RUN (--check): no host was changed")
    assert "> **DRY RUN (--check)" in fr.render_markdown(rep) and "DRY RUN (--check)" in render_html(rep)
    kept = rec("agx-01", "agx", (10.0, 40.0), (16.0, 25.0), "keep")
    assert fr.dry_run_note(fr.build_report([kept], "r", "t")) is None
    assert "DRY RUN" not in fr.render_markdown(fr.build_report([kept], "r", "t"))


def test_chart_series_carries_the_outcome_and_each_estimate_with_its_interval():
    series = fr.chart_series(fr.build_report(FLEET, "r", "t"))
    by_host = dict((s["host"], s) for s in series)
    assert sorted(by_host) == ["agx-01", "agx-02", "agx32-01", "thor-01", "thor-hot-01", "thor-noisy-01"]
    est = by_host["thor-noisy-01"]
    verdict = RECORDED["thor-noisy-01"]["verdict"]["estimates"]
    assert est["c1_gain"] == (verdict["c1_throughput_gain"]["point"], verdict["c1_throughput_gain"]["low"],
                              verdict["c1_throughput_gain"]["high"])
    assert est["tpot_change"] == (-verdict["c1_tpot_drop"]["point"], -verdict["c1_tpot_drop"]["high"],
                                  -verdict["c1_tpot_drop"]["low"])
    assert (est["family"], est["outcome"]) == ("thor", "kept") and by_host["thor-hot-01"]["outcome"] == "human"


def test_the_chart_is_per_family_and_as_wide_at_300_hosts_as_at_8():
    pytest.importorskip("matplotlib")
    import base64
    import struct

    def size(series):
        png, note = report_action.draw_chart(series)
        assert note is None
        data = base64.b64decode(png)
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        return struct.unpack(">II", data[16:24])

    small = size(fr.chart_series(fr.build_report(FLEET, "r", "t")))
    large = size(fr.chart_series(fr.build_report(scale.fleet(300), "r", "t")))
    assert small == large and small[0] == int(report_action.CHART_WIDTH_IN * report_action.CHART_DPI)  # 990 px, not 29,268
    assert report_action.draw_chart([]) == (None, "No host has a verdict's estimate to chart.")


def test_a_host_off_by_policy_reads_so_in_the_tables_and_the_summary():
    off = {"host": "nx-02", "facts": {"family": "orin_nx"}, "status": "off", "config_after": "baseline",
           "verdict": {"decision": "off", "reasons": ["policy.speculation_off: vllm_server_speculation is false"]},
           "reasons": ["policy.speculation_off: vllm_server_speculation is false"]}
    rep = fr.build_report(RECORDS[:1] + [off], "r", "t")
    md = fr.render_markdown(rep)
    assert "1 keep, 1 off by policy" in md
    assert "| nx-02 | off by policy |" in md
    entry = [e for e in rep["hosts"] if e["row"]["host"] == "nx-02"][0]
    assert not entry["row"]["failed"] and entry["why"]["runs_now"] == "baseline"
    assert "vllm_server_speculation" in entry["why"]["next_step"]
    assert "refus" not in render_html(rep).split("nx-02")[1][:200]


def test_the_html_view_is_plain_data_without_markup():
    """Row logic stays in Python as plain text; the markup is the template's (plugin_utils/templates)."""
    view = fr.html_view(fr.build_report(scale.fleet(12), "r", "t"), "QUJD", None, "title")
    json.dumps(view)  # strings, numbers, lists and dicts only

    def strings(value):
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []
    found = strings(view)
    assert found and not [s for s in found if re.search(r"</?(td|tr|th|table|li|ul|p|h[1-3]|strong|a)\b", s)]
    assert view["chart"]["src"] == "data:image/png;base64,QUJD"
    assert [f["name"] for f in view["families"]] == sorted(f["name"] for f in view["families"])
    assert all(row["css"].startswith("o-") for f in view["families"] for row in f["table"]["rows"])
