"""What the rollout left on each simulated board (molecule verify, pytest-testinfra)."""
import json

import pytest

EXPECTED = {
    # host: (state status, verdict decisions, speculative unit). The simulator is noisy like a
    # board: thor's throughput interval may straddle the 30 % keep threshold (marginal, kept).
    "rollout-thor-01": ("kept", ("keep", "marginal"), True),
    "rollout-agx-02": ("reverted", ("revert",), False),
    "rollout-agx32-01": ("reverted", ("revert",), False),
    "rollout-nano-01": ("off", ("off",), False),  # its shipped group_vars set speculation off
}
STATE = "/var/lib/jetson-specdec/state.json"
PROM = "/var/lib/node_exporter/textfile_collector/jetson_specdec.prom"


@pytest.fixture()
def expected(host):
    return EXPECTED[host.backend.get_hostname()]


@pytest.fixture()
def state(host):
    return json.loads(host.file(STATE).content_string)


def test_state_file(host, state, expected):
    status, decision, _spec = expected
    assert host.file(STATE).mode == 0o640  # never world-readable (issue 18)
    assert state["status"] == status
    assert state["verdict"]["decision"] in decision
    assert len(state["config_hash"]) == 64
    assert state["created_at"] and state["updated_at"]
    if status in ("kept", "reverted"):
        assert state["last_good"]["kind"] == ("candidate" if status == "kept" else "baseline")
        assert state["benchmarks"]["baseline"]
    if host.backend.get_hostname() == "rollout-agx32-01":
        # Loading a drafter runs out of memory: the cause-aware ladder skips the other drafters
        # and tries n-gram (no drafter to load), which starts, is measured and loses.
        first, last = state["attempts"][0], state["attempts"][-1]
        assert first["result"] == "failed" and first["cause"] == "out_of_memory"
        assert last["result"] == "started" and last["label"].startswith("ngram")
        assert all(a["result"] == "failed" for a in state["attempts"][:-1])


def test_lock_released(host):
    assert not host.file("/var/lib/jetson-specdec/rollout.lock").exists


def test_final_unit(host, expected):
    text = host.file("/etc/systemd/system/vllm.service").content_string
    assert ("--speculative-config" in text) is expected[2]


def test_textfile_metrics(host, expected):
    prom = host.file(PROM)
    assert prom.exists and prom.mode == 0o644
    text = prom.content_string
    assert 'status="%s"' % expected[0] in text
    assert any('verdict="%s"' % decision in text for decision in expected[1]), text


def test_service_healthy(host):
    assert host.service("vllm").is_running
    out = host.check_output(
        "python3 -c \"import json,urllib.request;"
        "print(json.load(urllib.request.urlopen('http://127.0.0.1:8000/v1/models',timeout=10))['data'][0]['id'])\"")
    assert out.strip()
