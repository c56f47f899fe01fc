"""The native vLLM is the configured CLI, not a `vllm` on PATH (issue 33 item 1).

nb-venv is a Thor whose vLLM (the stand-in, 0.20.1) is installed only at /opt/vllm-venv/bin/vllm,
the host's vllm_server_native_bin: no `vllm` on PATH, none at the default /opt/vllm/bin/vllm.
Before the fix the facts asked PATH's `vllm` and every such Thor was refused
`runtime.vllm_version_unknown` even though its fix ("point vllm_server_native_bin at the CLI") was
already applied. Deploy with speculation and the rollout must both plan from the configured CLI.
"""
import pytest

from harness import assert_state, board, recap

# make integration-all (about 2-3 min of fleet time); CI's hour has no room for it:
# finding vLLM outside PATH is unit-tested in CI (test_native_bin_probe).
pytestmark = pytest.mark.slow
PREFIX = "specdec-nb-"
VENV_VLLM = "/opt/vllm-venv/bin/vllm"
BOARDS = [dict(board("nb-venv", "thor-01"), native_vllm_only_at=VENV_VLLM)]


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    fleet.path_vllm = fleet.sh("nb-venv", "command -v vllm; test -e /opt/vllm/bin/vllm && echo default").stdout
    fleet.deployed = fleet.run("playbooks/deploy.yml", vllm_server_speculation=True)
    fleet.unit_after_deploy = fleet.unit("nb-venv")
    fleet.rolled = fleet.run("playbooks/rollout.yml", rollout_run_id="venv")
    return fleet


def test_the_board_has_vllm_only_at_the_configured_path(fleet):
    assert fleet.path_vllm.strip() == ""
    assert fleet.sh("nb-venv", "%s --version" % VENV_VLLM).stdout.strip().endswith("0.20.1")


def test_deploy_plans_speculation_from_the_configured_cli(fleet):
    rc, out, dummy = fleet.deployed
    assert rc == 0, out[-3000:]
    assert "runtime.vllm_version_unknown" not in out and "runtime.vllm_too_old" not in out
    start = [line for line in fleet.unit_after_deploy.splitlines() if line.startswith("ExecStart=")][-1]
    assert VENV_VLLM in start and "--speculative-config" in start, start


def test_the_rollout_does_not_refuse_the_host(fleet):
    rc, out, dummy = fleet.rolled
    assert rc == 0, out[-3000:]
    assert recap(out)["nb-venv"]["failed"] == 0, out[-3000:]
    state = fleet.state("nb-venv")
    assert state and state["status"] != "refused", state
    assert not any("runtime.vllm" in reason for reason in (state.get("verdict") or {}).get("reasons", [])), state
    row = fleet.report_rows("venv")["nb-venv"]
    assert row["status"] != "refused", row
    assert_state(fleet, "nb-venv", state["status"])
