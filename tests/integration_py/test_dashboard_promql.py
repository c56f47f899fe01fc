"""The shipped Grafana dashboard's PromQL, evaluated by promtool against metrics the collection writes.

Three hosts' rollout states are rendered by record/textfile.py (the text node_exporter serves), the
watch's textfile by record/watch.py and pull mode's by pull.sh's own heredoc; they are read into
`promtool test rules` as input series, and every query of every panel is evaluated with the expected
answer: counts that are 0 show 0 (not "No data"), the verdict table has one row per host, and the
live acceptance panels divide vLLM's own counters as vLLM names them. `promtool check metrics` reads
the rendered text as Prometheus would lint it."""
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.jetson.specdec.plugins.module_utils.record import textfile
from ansible_collections.jetson.specdec.plugins.module_utils.record import watch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DASHBOARD = os.path.join(ROOT, "dashboards", "jetson-specdec.json")
PROMTOOL = shutil.which("promtool")


@pytest.fixture(autouse=True)
def promtool_present():
    # Not a skip: `make unit-integration` installs it first (tests/integration_py/ensure_promtool.sh).
    assert PROMTOOL, "promtool is missing: run tests/integration_py/ensure_promtool.sh (Debian's prometheus package)"


def _bench(tok_s, tpot, acceptance=None, simulated=None):
    return {"runs": [{"concurrency": 1, "throughput_tok_s": tok_s, "tpot_ms_p50": tpot, "failed": 0},
                     {"concurrency": 8, "throughput_tok_s": tok_s * 6, "tpot_ms_p50": tpot * 2, "failed": 0}],
            "spec_decode": None if acceptance is None else {"acceptance_rate": acceptance}, "simulated": simulated}


HOSTS = {
    "thor-01:9100": {"status": "kept", "verdict": {"decision": "keep"},
                     "info": {"method": "eagle3", "model": "m", "family": "thor", "simulated": False},
                     "benchmarks": {"baseline": _bench(30.0, 33.0), "candidate": _bench(45.0, 22.0, 0.7)},
                     "updated_at": "2026-12-01T10:00:00Z"},
    "agx-02:9100": {"status": "reverted", "verdict": {"decision": "revert"},
                    "info": {"method": "draft_model", "model": "m", "family": "agx_orin", "simulated": False},
                    "benchmarks": {"baseline": _bench(20.0, 50.0), "candidate": _bench(22.0, 47.0, 0.3)},
                    "updated_at": "2026-12-01T11:00:00Z"},
    "nx-01:9100": {"status": "kept", "verdict": {"decision": "keep"},
                   "info": {"method": "ngram", "model": "m", "family": "orin_nx", "simulated": True},
                   "benchmarks": {"baseline": _bench(100.0, 1.0, simulated="orin_nx_16gb; time_scale=0.1"),
                                  "candidate": _bench(150.0, 0.6, 0.5, simulated="orin_nx_16gb; time_scale=0.1")},
                   "updated_at": "2026-12-01T12:00:00Z"},
}


def _watched(state, acceptance):
    """The watch's textfile (jetson_specdec_watch.prom) of a host after a window that accepted ``acceptance``."""
    obs = {"window_s": 60.0, "requests": 40, "speculating": True, "draft_tokens": 1000,
           "accepted_tokens": int(1000 * acceptance), "acceptance": acceptance, "per_position": [0.4, 0.2],
           "tpot_s": 0.03, "ttft_s": 0.2, "mean_concurrency": 1.0, "restarted": False}
    result = watch.judge(watch.evidence(state), obs, watch.validate_params({}))
    return textfile.render_families(watch.families(result, timestamp=1764583200))


# The last watch of each watched host: thor-01 (kept on 0.7) drifted to 0.2, agx-02 drifted before it was reverted.
WATCHED = {"thor-01:9100": 0.2, "agx-02:9100": 0.1}


PULL_SCRIPT = os.path.join(ROOT, "roles", "pull_mode", "templates", "pull.sh.j2")
# The pull-mode run on nx-01, on promtool's clock (which starts at 0): ended at 4 min, took 60 s,
# ansible-pull exited 0, 3 tasks changed.
PULL_RUN = {"start": 180, "end": 240, "rc": 0, "changed": 3, "repaired": 1}


def _pull_text():
    """jetson_specdec_pull.prom as pull.sh writes it: the script's own heredoc, run by bash."""
    with open(PULL_SCRIPT, encoding="utf-8") as handle:
        script = handle.read()
    heredoc = re.search(r'cat >"\$tmp" <<METRICS\n(.*?\nMETRICS)\n', script, re.S)
    assert heredoc, "pull.sh.j2 no longer writes its metrics with a METRICS heredoc: update this test"
    assignments = "".join("%s=%d; " % kv for kv in sorted(PULL_RUN.items()))
    return subprocess.run(["bash", "-c", assignments + "cat <<METRICS\n" + heredoc.group(1) + "\n"],
                          capture_output=True, text=True, timeout=30, check=True).stdout


def _texts():
    for instance, state in HOSTS.items():
        yield instance, textfile.render(state)
        if instance in WATCHED:
            yield instance, _watched(state, WATCHED[instance])
    yield "nx-01:9100", _pull_text()


def _series():
    """Input series for promtool: every sample the textfiles hold, with the labels Prometheus adds."""
    out = []
    for instance, text in _texts():
        for name, labels, value in _samples(text):
            labels = dict(labels, instance=instance, job="node")
            out.append({"series": "%s{%s}" % (name, ",".join('%s="%s"' % kv for kv in sorted(labels.items()))),
                        "values": "%sx10" % value})
    # vLLM's own counters on the kept Thor's server: 60 drafts, 180 draft tokens, 108 accepted a minute
    for name, per_min, extra in (("vllm:spec_decode_num_drafts_total", 60, {}),
                                 ("vllm:spec_decode_num_draft_tokens_total", 180, {}),
                                 ("vllm:spec_decode_num_accepted_tokens_total", 108, {}),
                                 ("vllm:spec_decode_num_accepted_tokens_per_pos_total", 48, {"position": "0"}),
                                 ("vllm:spec_decode_num_accepted_tokens_per_pos_total", 30, {"position": "1"})):
        labels = dict(extra, instance="thor-01:8000", job="vllm", model_name="m", engine="0")
        out.append({"series": "%s{%s}" % (name, ",".join('%s="%s"' % kv for kv in sorted(labels.items()))),
                    "values": "0+%dx10" % per_min})
    return out


def _samples(text):
    from ansible_collections.jetson.specdec.plugins.module_utils.bench.prometheus import parse_text
    return parse_text(text)


def _panel_targets():
    """Every query of every panel: (title, target index) -> expr, the variables set to all hosts."""
    with open(DASHBOARD, encoding="utf-8") as handle:
        dashboard = json.load(handle)
    out = {}
    for panel in dashboard["panels"]:
        for index, target in enumerate(panel.get("targets", [])):
            out[(panel["title"], index)] = target["expr"].replace("$instance", ".*").replace("$vllm_instance", ".*")
    return out


def _panel_exprs():
    return dict((title, expr) for (title, index), expr in _panel_targets().items() if index == 0)


# What each stat panel must show for HOSTS.
EXPECTED = {
    "Hosts running speculative decoding": [("{}", 2)],
    "Hosts on the baseline": [("{}", 1)],
    "Simulated hosts": [("{}", 1)],
    "Pull-mode runs failing": [("{}", 0)],  # none failing: 0, not "No data"
    "vLLM draft acceptance (live, 5 min rate)": [('{instance="thor-01:8000"}', 0.6)],
    "Kept hosts drifted (last watch)": [("{}", 1)],  # thor-01; agx-02 is no longer kept
}

EVAL_S = 300  # eval_time 5m: time() is 300 on promtool's clock


def _labels(labels):
    return "{%s}" % ",".join('%s="%s"' % kv for kv in sorted(labels.items()))


def _written(name, keep_name=True, value=None, **match):
    """The samples the rendered textfiles hold for ``name`` (labels as Prometheus scrapes them)."""
    out = []
    for instance, text in _texts():
        for sample_name, labels, sample_value in _samples(text):
            labels = dict(labels, instance=instance, job="node")
            if sample_name != name or any(labels.get(k) != v for k, v in match.items()):
                continue
            if value is not None and sample_value != value:
                continue
            if keep_name:
                labels["__name__"] = name
            out.append({"labels": _labels(labels), "value": sample_value})
    assert out, "no %s%s written: the test's hosts no longer cover this panel" % (name, match)
    return out


def _age(name):
    return [dict(sample, value=EVAL_S - sample["value"]) for sample in _written(name, keep_name=False)]


def _checks():
    """(title, target index) -> the samples promtool must return at 5m."""
    checks = dict(((title, 0), [{"labels": labels, "value": value} for labels, value in samples])
                  for title, samples in EXPECTED.items())
    # the pull run of nx-01 set a broken checkout aside (pull.sh's repair): one host repaired
    checks[("Pull-mode runs failing", 1)] = [{"labels": "{}", "value": 1}]
    # the verdict table: the info series of every host, its labels as columns
    checks[("Verdict per host", 0)] = [
        {"labels": 'jetson_specdec_info{instance="%s",job="node",verdict="%s",status="%s",method="%s",model="m",'
                   'family="%s"}' % (i, s["verdict"]["decision"], s["status"], s["info"]["method"], s["info"]["family"]),
         "value": 1} for i, s in sorted(HOSTS.items())]
    # TPOT in seconds and throughput in tok/s, a simulated board in board time (nx-01 at time_scale 0.1:
    # 0.6 ms is 6 ms and 150 tok/s is 15 tok/s on the board)
    board = {"thor-01:9100": ((33.0, 22.0), (30, 45)), "agx-02:9100": ((50.0, 47.0), (20, 22)),
             "nx-01:9100": ((10.0, 6.0), (10, 15))}
    checks[("Time per output token (p50), concurrency 1", 0)] = [
        {"labels": _labels({"__name__": "jetson_specdec_tpot_p50_seconds", "concurrency": "1", "instance": i,
                            "job": "node", "phase": phase}), "value": tpot[n] / 1000.0}
        for i, (tpot, dummy) in board.items() for n, phase in enumerate(("baseline", "candidate"))]
    for concurrency, factor in (("1", 1), ("8", 6)):
        checks[("Output throughput, concurrency %s" % concurrency, 0)] = [
            {"labels": _labels({"__name__": "jetson_specdec_throughput_tokens_per_second",
                                "concurrency": concurrency, "instance": i, "job": "node", "phase": phase}),
             "value": tok_s[n] * factor}
            for i, (dummy, tok_s) in board.items() for n, phase in enumerate(("baseline", "candidate"))]
    checks[("Draft acceptance rate", 0)] = [
        {"labels": _labels({"__name__": "jetson_specdec_acceptance_rate", "instance": i, "job": "node"}), "value": v}
        for i, v in (("thor-01:9100", 0.7), ("agx-02:9100", 0.3), ("nx-01:9100", 0.5))]
    checks[("Age of the last rollout state change", 0)] = _age("jetson_specdec_last_run_timestamp_seconds")
    # pull mode on nx-01: the run ended 60 s before the evaluation, took 60 s and changed 3 tasks
    nx = {"instance": "nx-01:9100", "job": "node"}
    checks[("Pull mode: last run", 0)] = [{"labels": _labels(nx), "value": EVAL_S - PULL_RUN["end"]}]
    checks[("Pull mode: last run", 1)] = [
        {"labels": _labels(dict(nx, __name__="jetson_specdec_pull_last_duration_seconds")), "value": 60}]
    checks[("Pull mode: last run", 2)] = [
        {"labels": _labels(dict(nx, __name__="jetson_specdec_pull_last_changed_tasks")), "value": 3}]
    checks[("vLLM acceptance per draft position (live, 5 min rate)", 0)] = [
        {"labels": '{instance="thor-01:8000",position="%s"}' % pos, "value": value}
        for pos, value in (("0", 0.8), ("1", 0.5))]
    # the watch: thor-01 kept on 0.7 observed 0.2; agx-02's last watch (before its revert) observed 0.1
    checks[("Watch: acceptance over the window (observed) and when kept", 0)] = [
        {"labels": _labels({"__name__": "jetson_specdec_watch_acceptance_rate", "instance": i, "job": "node",
                            "source": source}), "value": value}
        for i, kept, observed in (("thor-01:9100", 0.7, 0.2), ("agx-02:9100", 0.3, 0.1))
        for source, value in (("kept", kept), ("observed", observed))]
    checks[("Watch: time per output token (observed, kept, baseline)", 0)] = _written(
        "jetson_specdec_watch_tpot_seconds")
    table = "Watch per host (last window)"
    checks[(table, 0)] = _written("jetson_specdec_watch_status", value=1)
    checks[(table, 1)] = _written("jetson_specdec_watch_requests")
    checks[(table, 2)] = _written("jetson_specdec_watch_window_seconds")
    checks[(table, 3)] = _written("jetson_specdec_watch_ttft_seconds")
    checks[(table, 4)] = _written("jetson_specdec_watch_acceptance_per_position")
    checks[(table, 5)] = _age("jetson_specdec_watch_last_run_timestamp_seconds")
    return checks


def _run_promtool(tmp_path, tests):
    (tmp_path / "rules.yml").write_text("groups: []\n")
    (tmp_path / "test.yml").write_text(yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "1m",
                                                       "tests": tests}))
    return subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "test.yml")], capture_output=True, text=True,
                          timeout=120, check=False)


def test_every_query_of_every_panel_is_checked():
    targets, checks = _panel_targets(), _checks()
    assert sorted(set(targets) - set(checks)) == [], "panel queries without an expected answer"
    assert sorted(set(checks) - set(targets)) == [], "expected answers for queries the dashboard no longer has"


def test_every_panel_answers_what_the_written_metrics_say(tmp_path):
    targets = _panel_targets()
    tests = [{"interval": "1m", "input_series": _series(), "promql_expr_test": [
        {"expr": targets[key], "eval_time": "5m", "exp_samples": samples}
        for key, samples in sorted(_checks().items()) if key in targets]}]
    result = _run_promtool(tmp_path, tests)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_count_without_its_fallback_would_show_no_data(tmp_path):
    """The control: the same check fails for the expression the dashboard had (so the test can fail)."""
    tests = [{"interval": "1m", "input_series": _series(), "promql_expr_test": [
        {"expr": 'count(jetson_specdec_pull_last_exit_code{instance=~".*"} != 0)', "eval_time": "5m",
         "exp_samples": [{"labels": "{}", "value": 0}]}]}]
    result = _run_promtool(tmp_path, tests)
    assert result.returncode != 0 and "FAILED" in result.stdout + result.stderr


def test_the_rendered_metrics_pass_promtool_check_metrics():
    for dummy, text in _texts():
        result = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                                text=True, timeout=60, check=False)
        assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr
