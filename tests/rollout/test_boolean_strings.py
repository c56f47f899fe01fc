"""Issue 34 item 4 on a board: booleans given with -e KEY=VALUE arrive as strings.

One simulated Thor, jetson.specdec.deploy three times with key=value extra vars (strings, as an operator
types them): "false"/"no" leave --trust-remote-code and --enforce-eager off, "yes"/"on" turn them on, and
"maybe" is refused in preflight (input.boolean) with the unit, the env file and the server untouched.
The filters' every spelling is in tests/unit/plugins/filter/test_boolean_inputs.py.
"""
import pytest

from harness import UNIT, board, recap

PREFIX = "specdec-bool-"
BOARDS = [board("bool-thor", "thor-01")]
HOST = "bool-thor"


def exec_start(fleet):
    return [line for line in fleet.unit(HOST).splitlines() if line.startswith("ExecStart=")]


def snapshot(fleet):
    script = ("sha256sum %s /etc/vllm/vllm.env 2>&1; systemctl show -p MainPID --value vllm" % UNIT)
    return fleet.sh(HOST, script).stdout


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    off = ["-e", "vllm_server_trust_remote_code=false", "-e", "vllm_server_enforce_eager=no",
           "-e", "vllm_server_use_existing_user=off", "-e", "vllm_server_allow_open_bind=0"]
    fleet.off = fleet.run("playbooks/deploy.yml", *off)
    fleet.off_unit = exec_start(fleet)
    fleet.on = fleet.run("playbooks/deploy.yml", "-e", "vllm_server_trust_remote_code=yes", "-e",
                         "vllm_server_enforce_eager=on")
    fleet.on_unit = exec_start(fleet)
    fleet.before = snapshot(fleet)
    fleet.junk = fleet.run("playbooks/deploy.yml", "-e", "vllm_server_trust_remote_code=maybe")
    fleet.after = snapshot(fleet)
    return fleet


def test_string_false_leaves_the_flags_off(fleet):
    rc, out, dummy = fleet.off
    assert rc == 0, out[-3000:]
    assert fleet.off_unit and "/vllm serve " in fleet.off_unit[0] or "serve" in fleet.off_unit[0], fleet.off_unit
    assert "--trust-remote-code" not in fleet.off_unit[0] and "--enforce-eager" not in fleet.off_unit[0], fleet.off_unit


def test_string_true_turns_them_on(fleet):
    rc, out, dummy = fleet.on
    assert rc == 0, out[-3000:]
    assert "--trust-remote-code" in fleet.on_unit[0] and "--enforce-eager" in fleet.on_unit[0], fleet.on_unit


def test_a_word_that_is_no_boolean_is_refused_and_the_host_unchanged(fleet):
    rc, out, dummy = fleet.junk
    assert rc != 0 and recap(out)[HOST]["failed"] == 1, out[-3000:]
    # The role's argument validation (type: bool) stops it first; preflight's input.boolean is the second line.
    assert "vllm_server_trust_remote_code" in out and ("not a valid boolean" in out or "input.boolean" in out), out[-3000:]
    assert fleet.after == fleet.before and fleet.after.count("\n") >= 2, (fleet.before, fleet.after)
