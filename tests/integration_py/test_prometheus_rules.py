"""The Prometheus alerting rules (dashboards/jetson-specdec-alerts.yml) under `promtool test rules`.

The input series are the metrics the collection really writes: record/textfile.py renders each
host's state file, and every sample of that text becomes a series of the test (with the instance
label node_exporter adds). promtool comes with Debian's prometheus package: installed here when it
is missing and we are root (as the test-bed scripts install what they need), else the test fails.
"""
import os
import re
import shutil
import subprocess

import yaml

from ansible_collections.jetson.specdec.plugins.module_utils.record import textfile
from ansible_collections.jetson.specdec.plugins.module_utils.record import watch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULES = os.path.join(REPO, "dashboards", "jetson-specdec-alerts.yml")
EPOCH = "1970-01-01T00:00:00Z"  # promtool's clock starts at 0: states written then


def promtool():
    path = shutil.which("promtool")
    if path is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "prometheus"], env=env,
                       check=False, capture_output=True, timeout=900)
        path = shutil.which("promtool")
    assert path, "promtool is missing: apt-get install prometheus (Debian) or put promtool on PATH"
    return path


def series(instance, state, minutes=60, text=None):
    """The rendered metrics of one host's state (or ``text``, a rendered textfile) as promtool input series."""
    out = []
    for line in (textfile.render(state) if text is None else text).splitlines():
        if not line or line.startswith("#"):
            continue
        metric, value = line.rsplit(" ", 1)
        name, dummy, labels = metric.partition("{")
        labels = ("{instance=\"%s\"," % instance + labels) if labels else "{instance=\"%s\"}" % instance
        out.append({"series": name + labels, "values": "%sx%d" % (value, minutes)})
    return out


STATES = {
    "thor-failed:9100": {"status": "failed", "updated_at": EPOCH, "info": {"family": "thor", "model": "m"}},
    "thor-pending:9100": {"status": "pending", "updated_at": EPOCH, "info": {"family": "thor", "model": "m"}},
    "thor-lossy:9100": {"status": "reverted", "updated_at": EPOCH, "verdict": {"decision": "lossy"},
                        "info": {"family": "thor", "model": "m", "method": None}},
    "thor-kept:9100": {"status": "kept", "updated_at": EPOCH, "verdict": {"decision": "keep"},
                       "info": {"family": "thor", "model": "m", "method": "eagle3"}},
    "thor-kept-down:9100": {"status": "kept", "updated_at": EPOCH, "verdict": {"decision": "keep"},
                            "info": {"family": "thor", "model": "m", "method": "eagle3"}},
    "thor-drifted:9100": {"status": "kept", "updated_at": EPOCH, "verdict": {"decision": "keep"},
                          "info": {"family": "thor", "model": "m", "method": "ngram"}},
    # drifted, then reverted (by the watch's revert or by hand): its last watch result is stale
    "thor-drifted-reverted:9100": {"status": "reverted", "updated_at": EPOCH, "verdict": {"decision": "revert"},
                                   "info": {"family": "thor", "model": "m", "method": None}},
}


def kept_bench(tpot_ms, acceptance=None):
    out = {"runs": [{"concurrency": 1, "tpot_ms_p50": tpot_ms, "throughput_tok_s": 40.0, "completed": 8}]}
    if acceptance is not None:
        out["spec_decode"] = {"acceptance_rate": acceptance, "per_position": [0.8, 0.6, 0.4]}
    return out


def watched(acceptance, status="kept"):
    """The watch's textfile (jetson_specdec_watch.prom) of a host kept on acceptance 0.6, as rollout_watch
    writes it, after a window in which it accepted ``acceptance`` (0.3: drifted; 0.58: steady)."""
    state = {"status": status, "benchmarks": {"baseline": kept_bench(30.0), "candidate": kept_bench(20.0, 0.6)}}
    drafted, requests = 3000.0, 50.0
    obs = {"window_s": 60.0, "requests": 50, "speculating": True, "draft_tokens": 3000,
           "accepted_tokens": int(acceptance * drafted), "acceptance": acceptance, "per_position": [0.5, 0.3, 0.1],
           "tpot_s": 0.021, "ttft_s": 0.1, "mean_concurrency": 1.0, "restarted": False}
    result = watch.judge(watch.evidence(state), obs, watch.validate_params({}))
    assert result["status"] == ("drifted" if acceptance < 0.45 else "steady"), result
    return textfile.render_families(watch.families(result, timestamp=0))


# host -> the watch textfile beside its rollout textfile (STATES)
WATCHED = {"thor-kept:9100": 0.58, "thor-drifted:9100": 0.3, "thor-drifted-reverted:9100": 0.3}


def labels_of(instance):
    """The labels of the host's jetson_specdec_info series (Prometheus drops empty ones)."""
    state = STATES[instance]
    info = state.get("info") or {}
    labels = {"instance": instance, "verdict": (state.get("verdict") or {}).get("decision") or state["status"],
              "status": state["status"], "method": info.get("method") or "", "model": info.get("model") or "",
              "family": info.get("family") or ""}
    return dict((k, v) for k, v in labels.items() if v)


def expect(alertname, labels):
    """One expected alert: its labels and its annotations, the rule's templates filled from the labels."""
    with open(RULES) as handle:
        rule = next(r for g in yaml.safe_load(handle)["groups"] for r in g["rules"] if r["alert"] == alertname)
    annotations = {}
    for key, text in rule["annotations"].items():
        for name in re.findall(r"\{\{ \$labels\.(\w+) \}\}", text):
            text = text.replace("{{ $labels.%s }}" % name, labels.get(name, ""))
        annotations[key] = text
    return {"exp_labels": dict(labels, **rule["labels"]), "exp_annotations": annotations}


def test_the_rules_file_is_valid():
    proc = subprocess.run([promtool(), "check", "rules", RULES], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "5 rules found" in proc.stdout, proc.stdout


def test_the_alerts_fire_on_the_metrics_the_collection_writes(tmp_path):
    inputs = []
    for instance, state in STATES.items():
        inputs += series(instance, state)
    for instance, acceptance in WATCHED.items():
        inputs += series(instance, None, text=watched(acceptance))
    unit = 'node_systemd_unit_state{instance="%s",name="vllm.service",state="active"}'
    inputs += [{"series": unit % "thor-kept:9100", "values": "1x60"},
               {"series": unit % "thor-kept-down:9100", "values": "0x60"},
               {"series": unit % "thor-drifted:9100", "values": "1x60"}]
    expected = {
        "JetsonSpecdecRolloutFailed": ["thor-failed:9100"],
        "JetsonSpecdecLossyCandidate": ["thor-lossy:9100"],
        "JetsonSpecdecKeptHostNotServing": ["thor-kept-down:9100"],
        # the steady kept host and the reverted one stay quiet
        "JetsonSpecdecKeptHostDrifted": ["thor-drifted:9100"],
    }
    tests = []
    alerts = []
    for name, hosts in expected.items():
        alerts.append({"eval_time": "30m", "alertname": name, "exp_alerts": [
            expect(name, labels_of(h) if name not in ("JetsonSpecdecKeptHostNotServing", "JetsonSpecdecKeptHostDrifted")
                   else {"instance": h})
            for h in hosts]})
    # not yet: a pending host 30 minutes old is a rollout at work, not a stuck one
    alerts.append({"eval_time": "30m", "alertname": "JetsonSpecdecRolloutStuck", "exp_alerts": []})
    alerts.append({"eval_time": "5m", "alertname": "JetsonSpecdecRolloutFailed", "exp_alerts": []})  # for: 10m
    tests.append({"interval": "1m", "input_series": inputs, "alert_rule_test": alerts})
    # after 7 hours the pending host is stuck (the other alerts keep firing)
    later = []
    for instance, state in STATES.items():
        later += series(instance, state, minutes=500)
    tests.append({"interval": "1m", "input_series": later, "alert_rule_test": [
        {"eval_time": "7h", "alertname": "JetsonSpecdecRolloutStuck",
         "exp_alerts": [expect("JetsonSpecdecRolloutStuck", labels_of("thor-pending:9100"))]}]})
    path = tmp_path / "alerts-test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [RULES], "evaluation_interval": "1m", "tests": tests}))
    proc = subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
