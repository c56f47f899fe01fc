# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import base64
import builtins
import json
import os
from html.parser import HTMLParser

from ansible_collections.jetson.specdec.tests.unit.plugins.action.fleet_report_run import run_report


def bench(tok_s, tpot):
    return {"runs": [{"concurrency": 1, "throughput_tok_s": tok_s, "tpot_ms_p50": tpot, "failed": 0},
                     {"concurrency": 8, "throughput_tok_s": tok_s * 6, "tpot_ms_p50": tpot * 2, "failed": 0}]}


RECORDS = [
    {"host": "thor-01", "simulated": True, "facts": {"family": "thor"}, "status": "kept",
     "baseline": bench(28.1, 35.0), "candidate": bench(39.7, 24.0), "verdict": {"decision": "keep", "action": "keep"}},
    {"host": "orin-01", "facts": {"family": "orin-agx"}, "status": "reverted",
     "baseline": bench(20.0, 50.0), "candidate": bench(20.5, 49.0), "verdict": {"decision": "revert"}},
]


def test_writes_three_files_with_chart(tmp_path):
    failed, result = run_report({"records": RECORDS, "dest_dir": str(tmp_path),
                                 "run_id": "r1", "expected_hosts": ["thor-01", "orin-01", "nx-9"]})
    assert not failed and result["changed"] and result["chart"] is True
    run_dir = tmp_path / "r1"
    assert sorted(os.listdir(str(run_dir))) == ["report.html", "report.json", "report.md"]
    report = json.loads((run_dir / "report.json").read_text())
    assert report["missing_hosts"] == ["nx-9"]
    assert report["hosts"][0]["record"]["baseline"]["runs"][0]["throughput_tok_s"] == 28.1
    html_text = (run_dir / "report.html").read_text()
    b64 = html_text.split("data:image/png;base64,")[1].split('"')[0]
    assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"
    assert result["markdown"] == (run_dir / "report.md").read_text()
    assert "thor-01 (SIMULATED)" in result["markdown"]
    # what the play prints: the report's head and Summary, the tables stay in the files
    assert result["console"][0] == "# jetson.specdec fleet report" and "## Summary" in result["console"]
    assert result["markdown"].startswith("\n".join(result["console"])) and len(result["console"]) < len(
        result["markdown"].splitlines())


def test_without_matplotlib_html_is_table_only(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    failed, result = run_report({"records": RECORDS, "dest_dir": str(tmp_path), "run_id": "r2"})
    assert not failed and result["chart"] is False
    html_text = (tmp_path / "r2" / "report.html").read_text()
    assert "matplotlib is not installed" in html_text and "data:image/png" not in html_text
    assert "<table>" in html_text


def test_check_mode_writes_nothing(tmp_path):
    failed, result = run_report({"records": RECORDS, "dest_dir": str(tmp_path), "run_id": "r3",
                                 "_ansible_check_mode": True})
    assert not failed and result["changed"] and not (tmp_path / "r3").exists()
    assert "## thor (1 host)" in result["markdown"]


def test_default_run_id_and_bad_run_id(tmp_path):
    failed, result = run_report({"records": [], "dest_dir": str(tmp_path), "chart": False})
    assert not failed and os.path.basename(result["run_dir"]).endswith("Z")
    failed, result = run_report({"records": [], "dest_dir": str(tmp_path), "run_id": "../x"})
    assert failed and "single directory name" in result["msg"]


def test_reads_the_spool_and_reports_hosts_without_a_record(tmp_path):
    hosts = tmp_path / "r2" / "hosts"
    hosts.mkdir(parents=True)
    (hosts / "thor-01.json").write_text(json.dumps(RECORDS[0]))
    (hosts / "notes.txt").write_text("not a record")
    # a host name with quotes once broke the playbook's regex-and-from_json records
    odd = "agx-'quoted\"-01"
    failed, result = run_report({"read_spool": True, "dest_dir": str(tmp_path), "run_id": "r2",
                                 "expected_hosts": ["thor-01", odd]})
    assert not failed, result
    report = json.loads((tmp_path / "r2" / "report.json").read_text())
    rows = dict((entry["row"]["host"], entry["row"]) for entry in report["hosts"])
    assert rows["thor-01"]["decision"] == "keep"
    assert rows[odd]["status"] == "unreachable" and "no record" in rows[odd]["error"]


def test_an_unreadable_spooled_record_fails_naming_the_file(tmp_path):
    hosts = tmp_path / "r3" / "hosts"
    hosts.mkdir(parents=True)
    (hosts / "bad.json").write_text("{not json")
    failed, result = run_report({"read_spool": True, "dest_dir": str(tmp_path), "run_id": "r3"})
    assert failed and "bad.json" in result["msg"]


class _Page(HTMLParser):
    """The tags, attributes and text of a page as a browser's parser reads them."""

    def __init__(self):
        HTMLParser.__init__(self, convert_charrefs=True)
        self.tags, self.attrs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs

    def handle_data(self, data):
        self.text.append(data)


HOSTILE_HOST = "agx-<script>alert(1)</script>-01"
HOSTILE_MODEL = "org/m\"><img src=x onerror=alert(2)>&'"
HOSTILE_REASON = "launch.failed: <script>alert(3)</script> said \"no\" & 'never' </li></ul><b>bold</b>"


def test_hostile_names_models_and_reasons_come_out_escaped(tmp_path):
    served = dict(bench(39.7, 24.0), server={"model": HOSTILE_MODEL, "version": "0.20<1>&"})
    records = [dict(RECORDS[0], host=HOSTILE_HOST, facts={"family": "thor<i>", "model": HOSTILE_MODEL}, candidate=served),
               {"host": "nx-\"quoted\"&amp;-02", "facts": {"family": "orin-nx", "model": HOSTILE_MODEL},
                "status": "failed", "error": HOSTILE_REASON}]
    failed, result = run_report({"records": records, "dest_dir": str(tmp_path), "run_id": "r1",
                                 "title": "Fleet <script>alert(4)</script> & co", "chart": False})
    assert not failed, result
    page_text = (tmp_path / "r1" / "report.html").read_text()
    page = _Page()
    page.feed(page_text)
    # no tag, attribute or script from the records: only the template's own markup
    assert "script" not in page.tags and "img" not in page.tags and "b" not in page.tags and "i" not in page.tags
    assert "onerror" not in [name for name, _value in page.attrs]
    assert "<script>" not in page_text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page_text
    # every hostile string is on the page as the text it is, quotes and ampersands included
    text = "".join(page.text)
    for value in (HOSTILE_HOST, HOSTILE_MODEL.split("/")[1], "said \"no\" & 'never'", "nx-\"quoted\"&amp;-02",
                  "Fleet <script>alert(4)</script> & co", "thor<i>",
                  "vLLM 0.20<1>&"):
        assert value in text, value
    # the links to each host's Why keep the whole host name in one attribute value
    assert ("id", "why-nx-\"quoted\"&amp;-02") in page.attrs and ("href", "#why-nx-\"quoted\"&amp;-02") in page.attrs


def test_the_page_is_one_self_contained_file(tmp_path):
    failed, result = run_report({"records": RECORDS, "dest_dir": str(tmp_path), "run_id": "r1"})
    assert not failed and result["chart"] is True
    page = _Page()
    page.feed((tmp_path / "r1" / "report.html").read_text())
    assert "style" in page.tags and "link" not in page.tags and "script" not in page.tags
    external = [(name, value) for name, value in page.attrs if name in ("src", "href")
                and not value.startswith(("data:image/png;base64,", "#"))]
    assert external == []


def test_the_next_run_says_what_changed_since_the_last_one(tmp_path):
    """Run r1 then r2 in one report directory: r2's report compares with r1's (an unreadable other report is skipped)."""
    failed, dummy = run_report({"records": RECORDS, "dest_dir": str(tmp_path), "run_id": "r1", "chart": False})
    assert not failed
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "report.json").write_text("{not json")
    os.utime(str(tmp_path / "r1" / "report.json"), (1, 1))  # r1 is the older file; junk the newest, unreadable
    later = [dict(RECORDS[0], status="reverted", verdict={"decision": "revert", "action": "revert"}), RECORDS[1]]
    failed, result = run_report({"records": later, "dest_dir": str(tmp_path), "run_id": "r2", "chart": False})
    assert not failed, result
    report = json.loads((tmp_path / "r2" / "report.json").read_text())
    assert report["since"]["run_id"] == "r1"
    assert [c["host"] for c in report["since"]["changed"]] == ["thor-01"]
    assert any(line.startswith("- **Since the last run**: Since run r1") for line in result["console"])
    failed, result = run_report({"records": later, "dest_dir": str(tmp_path), "run_id": "r3", "chart": False,
                                 "since_last_run": False})
    assert not failed and json.loads((tmp_path / "r3" / "report.json").read_text())["since"] is None
