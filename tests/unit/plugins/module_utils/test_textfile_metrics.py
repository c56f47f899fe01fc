# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import os
import re

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import textfile as tm

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)')


def strict_parse(text):
    """Tiny strict exposition-format parser: fails on anything node_exporter would reject."""
    assert text.endswith("\n"), "file must end with a newline"
    families, current, samples = {}, None, []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert name not in families, "family %s appears twice" % name
            families[name] = {"help": True}
            current = name
        elif line.startswith("# TYPE "):
            _h, _t, name, mtype = line.split(" ")
            assert name == current and mtype in ("gauge", "counter", "untyped")
            families[name]["type"] = mtype
        else:
            m = _SAMPLE.match(line)
            assert m, "bad sample line %r" % line
            assert m.group(1) == current, "sample %s outside its family block" % m.group(1)
            labels, rest = {}, m.group(3) or ""
            while rest:
                lm = _LABEL.match(rest)
                assert lm, "bad labels in %r" % line
                labels[lm.group(1)] = lm.group(2).replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
                rest = rest[lm.end():]
            samples.append((m.group(1), labels, float(m.group(4))))
    assert all("type" in f for f in families.values())
    return samples


def bench(tok_s, tpot, acceptance=None):
    return {"runs": [{"concurrency": 1, "throughput_tok_s": tok_s, "tpot_ms_p50": tpot, "failed": 0},
                     {"concurrency": 8, "throughput_tok_s": tok_s * 6, "tpot_ms_p50": tpot * 2, "failed": 0}],
            "spec_decode": None if acceptance is None else {"acceptance_rate": acceptance}}


STATE = {
    "status": "kept",
    "verdict": {"decision": "keep"},
    "info": {"method": "eagle3", "model": 'Qwen/Qwen3-8B "w4a16"\\x\nnew', "family": "thor", "simulated": True},
    "benchmarks": {"baseline": bench(28.0, 35.0), "candidate": [bench(40.0, 24.0, 0.7), bench(42.0, 23.0, 0.72)]},
    "updated_at": "2026-03-01T12:00:00Z",
}


def test_render_parses_and_has_expected_values():
    samples = strict_parse(tm.render(STATE))
    by = {}
    for name, labels, value in samples:
        by.setdefault(name, []).append((labels, value))
    info_labels, info_value = by["jetson_specdec_info"][0]
    assert info_value == 1 and info_labels["verdict"] == "keep" and info_labels["family"] == "thor"
    assert info_labels["model"] == STATE["info"]["model"]  # escaping round-trips
    assert by["jetson_specdec_speculation_enabled"] == [({}, 1.0)]
    assert by["jetson_specdec_simulated"] == [({}, 1.0)]
    assert by["jetson_specdec_acceptance_rate"] == [({}, pytest.approx(0.71))]
    assert by["jetson_specdec_last_run_timestamp_seconds"] == [({}, 1772366400.0)]
    tpot = dict(((l["phase"], l["concurrency"]), v) for l, v in by["jetson_specdec_tpot_p50_seconds"])
    assert tpot[("baseline", "1")] == 0.035 and tpot[("candidate", "1")] == 0.0235
    assert ("final", "1") not in tpot  # no final phase measured: no sample rather than a fake 0
    thr = dict(((l["phase"], l["concurrency"]), v) for l, v in by["jetson_specdec_throughput_tokens_per_second"])
    assert thr[("candidate", "8")] == pytest.approx(246.0)


def test_render_matches_the_project_parser():
    from ansible_collections.jetson.specdec.plugins.module_utils.bench.prometheus import parse_text
    text = tm.render(STATE)
    assert len(parse_text(text)) == len(strict_parse(text))


def test_reverted_state_reports_speculation_off_and_is_deterministic():
    state = dict(STATE, status="reverted", verdict={"decision": "revert"})
    text = tm.render(state)
    assert "jetson_specdec_speculation_enabled 0\n" in text
    assert text == tm.render(state)


def test_empty_state_still_valid():
    samples = strict_parse(tm.render({}))
    names = set(s[0] for s in samples)
    assert "jetson_specdec_info" in names and "jetson_specdec_tpot_p50_seconds" not in names


def test_a_simulated_boards_metrics_are_in_board_time():
    """A stand-in at time_scale 0.1 runs ten times faster than its board: the metrics show the board."""
    sim = "thor_t5000; time_scale=0.1"
    benches = {"baseline": dict(bench(280.0, 3.5), simulated=sim), "candidate": [dict(bench(400.0, 2.4), simulated=sim)]}
    by = {}
    for name, labels, value in strict_parse(tm.render(dict(STATE, benchmarks=benches))):
        by.setdefault(name, {})[(labels.get("phase"), labels.get("concurrency"))] = value
    assert by["jetson_specdec_tpot_p50_seconds"][("baseline", "1")] == pytest.approx(0.035)
    assert by["jetson_specdec_throughput_tokens_per_second"][("candidate", "1")] == pytest.approx(40.0)


def test_escape_and_format():
    assert tm.escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    assert tm.format_value(True) == "1" and tm.format_value(2.0) == "2" and tm.format_value(0.25) == "0.25"
    assert tm.format_value(float("nan")) == "NaN" and tm.format_value(float("-inf")) == "-Inf"


def test_write_textfile_atomic_and_idempotent(tmp_path):
    text = tm.render(STATE)
    changed, path = tm.write_textfile(str(tmp_path), text)
    assert changed and path.endswith("jetson_specdec.prom") and open(path).read() == text
    assert tm.write_textfile(str(tmp_path), text)[0] is False
    assert os.listdir(str(tmp_path)) == ["jetson_specdec.prom"]
    with pytest.raises(ValueError, match="must end in .prom"):
        tm.write_textfile(str(tmp_path), text, filename="x.txt")
