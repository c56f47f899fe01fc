"""Raising k as the verdict advises is planned, not refused (issue 33 item 4).

Two AGX Orin boards whose operator raised k from the start (3) to 4, the advice a kept verdict gives
above an acceptance of 0.6. k-measured has a state file whose last verdict measured 0.72; k-never has
none. The rollout reads the last verdict's acceptance before it plans (check mode: read-only, no
benchmark), so only the host without a measurement is refused config.k_above_start.
"""
import json

import pytest

from harness import STATE, board, recap

PREFIX = "specdec-rk-"
RAISED = {"vllm_server_num_speculative_tokens": 4}
BOARDS = [board("k-measured", "agx-01", hostvars=RAISED), board("k-never", "agx-01", hostvars=RAISED)]
SEED = {"schema_version": 1, "status": "kept", "config_hash": "0" * 64, "config": {"k": 3},
        "verdict": {"decision": "keep", "action": "keep", "reasons": ["kept at k=3"],
                    "metrics": {"acceptance_rate": 0.72}},
        "created_at": "2026-12-01T10:00:00Z", "updated_at": "2026-12-01T10:00:00Z"}


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    fleet.sh("k-measured", "mkdir -p /var/lib/jetson-specdec && cat > %s <<'EOF'\n%s\nEOF\nchmod 0640 %s"
             % (STATE, json.dumps(SEED), STATE), check=True)
    fleet.checked = fleet.run("playbooks/rollout.yml", "--check", rollout_run_id="raise-k")
    return fleet


def test_the_check_runs_on_both_hosts(fleet):
    rc, out, dummy = fleet.checked
    assert set(recap(out)) >= {"k-measured", "k-never"}, out[-3000:]


def _reasons(fleet, host):
    entry = [e for e in fleet.report("raise-k")["hosts"] if e["row"]["host"] == host][0]
    return json.dumps(entry["record"].get("reasons") or [])


def test_the_host_with_a_measured_acceptance_above_0_6_plans_k_4(fleet):
    # check mode: every host is "planned"; its reasons say what a real run would do
    reasons = _reasons(fleet, "k-measured")
    assert "a real run would benchmark" in reasons and "k=4" in reasons, reasons
    assert "k_above_start" not in reasons and "refuse" not in reasons, reasons
    rc, out, dummy = fleet.checked
    assert "allowed by the measured acceptance rate 0.72" in out
    # read-only: the seeded state is as it was
    assert fleet.state("k-measured")["verdict"]["metrics"]["acceptance_rate"] == 0.72


def test_the_host_without_a_measurement_is_refused_k_above_start(fleet):
    reasons = _reasons(fleet, "k-never")
    assert "a real run would refuse speculation" in reasons and "config.k_above_start" in reasons, reasons
    assert "none was measured on this host" in reasons, reasons
