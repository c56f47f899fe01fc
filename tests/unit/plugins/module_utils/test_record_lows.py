"""Issue 34 lows on the record side: HTML in the Markdown report, run ids that leave the report directory,
report and spool modes, a lone surrogate in the state file."""
import json
import os
import stat

import pytest

from ansible_collections.jetson.specdec.plugins.plugin_utils import spool as spool_utils
from ansible_collections.jetson.specdec.plugins.module_utils.record import report as fr
from ansible_collections.jetson.specdec.plugins.module_utils.record import state as st
from ansible_collections.jetson.specdec.plugins.module_utils.record.names import UnsafeName, check_run_id
from ansible_collections.jetson.specdec.tests.unit.plugins.action.fleet_report_run import run_report

HTML = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<a href='javascript:x'>y</a>",
        "<iframe src=//x>", "</td><script>", "<svg/onload=alert(1)>", "<!-- x -->", "<style>*{}</style>"]


def _report(text):
    records = [{"host": "h1" + text, "facts": {"family": "thor" + text}, "status": "failed", "error": "boom " + text},
               {"host": "h2", "facts": {"family": "thor"}, "status": "kept",
                "verdict": {"decision": "keep", "action": "keep", "reasons": ["r " + text]}}]
    return fr.build_report(records, "run-1", "2026-03-01T12:00:00Z")


@pytest.mark.parametrize("text", HTML)
def test_the_markdown_report_shows_html_as_text(text):
    md = fr.render_markdown(_report(text), title="Fleet " + text)
    assert "<" not in md.replace("<br>", ""), md
    assert text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|") in md


def test_markdown_keeps_plain_text_readable():
    md = fr.render_markdown(_report("a & b > c"))
    assert "a &amp; b &gt; c" in md and "h1a &amp; b &gt; c" in md


# --- run id ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("run_id", ["../../x", "..", ".", "a/b", "a\\b", "-x", ".hidden", "a..b", "", " x", "x ",
                                    "a\nb", "a\x00b", "é", "a" * 129, "a b", "$(id)", "a;b", None, 7, "~x"])
def test_run_ids_that_are_no_plain_word_are_refused(run_id):
    with pytest.raises(UnsafeName, match="^input.run_id: "):
        check_run_id(run_id)


@pytest.mark.parametrize("run_id", ["20260301T120000Z", "nightly-3", "policy-again", "2026-03-01T12:00", "r1", "a.b_c"])
def test_plain_run_ids_pass(run_id):
    assert check_run_id(run_id) == run_id


@pytest.mark.parametrize("spool, run_id", [
    ("{d}/../../x/hosts", "../../x"), ("{d}/../../x/hosts", None), ("{d}/./hosts", None), ("{d}/a/../../b/hosts", None),
    ("{d}/ok/hosts", "../ok"), ("{d}/ok/hosts", "a/b"),
])
def test_the_spool_never_leaves_the_report_directory(tmp_path, spool, run_id):
    reports = tmp_path / "reports" / "deep"
    reports.mkdir(parents=True)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(UnsafeName, match="input.run_id"):
        spool_utils.publish({"host": "h1"}, spool.format(d=str(reports)), "h1", run_id=run_id)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_spool_records_are_0640_in_a_0750_directory(tmp_path):
    old = os.umask(0)
    try:
        dummy, path = spool_utils.publish({"host": "h1"}, str(tmp_path / "r1" / "hosts"), "h1", run_id="r1")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o750


def test_report_files_are_0640_and_an_old_0644_file_gets_the_mode(tmp_path):
    old = os.umask(0)
    try:
        args = {"records": [{"host": "h1", "status": "failed", "error": "x"}], "dest_dir": str(tmp_path),
                "run_id": "r1", "chart": False}
        failed, result = run_report(args)
        assert not failed and result["changed"], result
        run_dir = tmp_path / "r1"
        for name in ("report.json", "report.md", "report.html"):
            assert stat.S_IMODE(os.stat(str(run_dir / name)).st_mode) == 0o640, name
        assert stat.S_IMODE(os.stat(str(run_dir)).st_mode) == 0o750
        os.chmod(str(run_dir / "report.md"), 0o644)
        failed, result = run_report(args)
        assert not failed and stat.S_IMODE(os.stat(str(run_dir / "report.md")).st_mode) == 0o640
    finally:
        os.umask(old)


@pytest.mark.parametrize("run_id", ["../../x", "..", "a..b", "-x"])
def test_the_report_module_refuses_a_run_id_outside_the_directory(tmp_path, run_id):
    failed, result = run_report({"records": [], "dest_dir": str(tmp_path / "r"), "run_id": run_id,
                                 "chart": False})
    assert failed and "input.run_id" in result["msg"], result
    assert list(tmp_path.iterdir()) == []


# --- state ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\udc80\udc81", "ok \ud83d"])
def test_a_lone_surrogate_in_the_state_file_does_not_break_later_writes(tmp_path, text):
    path = str(tmp_path / "state" / "state.json")
    os.makedirs(os.path.dirname(path), mode=0o750)
    now = st.utc_now()
    state = st.empty_state()
    # What a file holding the (valid) JSON escape "\ud800" reads back as.
    with open(path, "w") as handle:
        handle.write(json.dumps(dict(state, status="failed", error=text), ensure_ascii=True))
    loaded, warnings = st.read_state(path, now)
    assert loaded["error"] == text and not warnings, warnings
    st.write_state(path, st.merge_state(loaded, {"status": "failed", "error": text + " again"}, now))
    st.write_state(path, st.merge_state(loaded, {"status": "failed", "error": "later"}, now))
    raw = open(path, "rb").read()
    raw.decode("ascii")
    again, warnings = st.read_state(path, now)
    assert again["error"] == "later" and not warnings
    st.write_state(path, st.merge_state(again, {"status": "failed", "error": text}, now))
    assert st.read_state(path, now)[0]["error"] == text
    assert len(st.config_hash({"model": text})) == 64
