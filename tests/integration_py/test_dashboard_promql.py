"""The shipped Grafana dashboard's PromQL, evaluated by promtool against metrics the collection writes.

Three hosts' rollout states are rendered by record/textfile.py (the text node_exporter serves), read
into `promtool test rules` as input series, and every panel's query is evaluated with the expected
answer: counts that are 0 show 0 (not "No data"), the verdict table has one row per host, and the
live acceptance panels divide vLLM's own counters as vLLM names them. `promtool check metrics` reads
the rendered text as Prometheus would lint it."""
import json
import os
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


def _texts():
    for instance, state in HOSTS.items():
        yield instance, textfile.render(state)
        if instance in WATCHED:
            yield instance, _watched(state, WATCHED[instance])


def _series():
    """Input series for promtool: every sample the textfiles hold, with the labels Prometheus adds."""
    out = []
    for instance, text in _texts():
        for name, labels, value in _samples(text):
            labels = dict(labels, instance=instance, job="node")
            out.append({"series": "%s{%s}" % (name, ",".join('%s="%s"' % kv for kv in sorted(labels.items()))),
                        "values": "%sx10" % value})
    # pull mode's metrics on one board (exit code 0: nothing failing)
    out.append({"series": 'jetson_specdec_pull_last_exit_code{instance="nx-01:9100",job="node"}', "values": "0x10"})
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


def _panel_exprs():
    with open(DASHBOARD, encoding="utf-8") as handle:
        dashboard = json.load(handle)
    return dict((panel["title"], panel["targets"][0]["expr"].replace("$instance", ".*").replace("$vllm_instance", ".*"))
                for panel in dashboard["panels"])


# What each panel must show for HOSTS (None: a sample per series, checked by count).
EXPECTED = {
    "Hosts running speculative decoding": [("{}", 2)],
    "Hosts on the baseline": [("{}", 1)],
    "Simulated hosts": [("{}", 1)],
    "Pull-mode runs failing": [("{}", 0)],  # none failing: 0, not "No data"
    "vLLM draft acceptance (live, 5 min rate)": [('{instance="thor-01:8000"}', 0.6)],
    "Kept hosts drifted (last watch)": [("{}", 1)],  # thor-01; agx-02 is no longer kept
}


def _run_promtool(tmp_path, tests):
    (tmp_path / "rules.yml").write_text("groups: []\n")
    (tmp_path / "test.yml").write_text(yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "1m",
                                                       "tests": tests}))
    return subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "test.yml")], capture_output=True, text=True,
                          timeout=120, check=False)


def test_every_panel_answers_what_the_written_metrics_say(tmp_path):
    exprs = _panel_exprs()
    tests = [{"interval": "1m", "input_series": _series(), "promql_expr_test": []}]
    checks = tests[0]["promql_expr_test"]
    for title, samples in EXPECTED.items():
        checks.append({"expr": exprs[title], "eval_time": "5m",
                       "exp_samples": [{"labels": labels, "value": value} for labels, value in samples]})
    # the verdict table: the info series of every host, its labels as columns
    checks.append({"expr": exprs["Verdict per host"], "eval_time": "5m", "exp_samples": [
        {"labels": 'jetson_specdec_info{instance="%s",job="node",verdict="%s",status="%s",method="%s",model="m",'
                   'family="%s"}' % (i, s["verdict"]["decision"], s["status"], s["info"]["method"], s["info"]["family"]),
         "value": 1} for i, s in sorted(HOSTS.items())]})
    # TPOT in seconds, a simulated board in board time (0.6 ms at time_scale 0.1 is 6 ms on the board)
    checks.append({"expr": exprs["Time per output token (p50), concurrency 1"] + ' and on (instance) '
                   'jetson_specdec_simulated == 1', "eval_time": "5m", "exp_samples": [
                       {"labels": '{__name__="jetson_specdec_tpot_p50_seconds",concurrency="1",instance="nx-01:9100",'
                                  'job="node",phase="%s"}' % phase, "value": value}
                       for phase, value in (("baseline", 0.01), ("candidate", 0.006))]})
    checks.append({"expr": exprs["vLLM acceptance per draft position (live, 5 min rate)"], "eval_time": "5m",
                   "exp_samples": [{"labels": '{instance="thor-01:8000",position="%s"}' % pos, "value": value}
                                   for pos, value in (("0", 0.8), ("1", 0.5))]})
    checks.append({"expr": exprs["Watch: acceptance over the window (observed) and when kept"]
                   + ' and on (instance) jetson_specdec_info{status="kept"}', "eval_time": "5m", "exp_samples": [
                       {"labels": '{__name__="jetson_specdec_watch_acceptance_rate",instance="thor-01:9100",job="node",'
                                  'source="%s"}' % source, "value": value}
                       for source, value in (("kept", 0.7), ("observed", 0.2))]})
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
