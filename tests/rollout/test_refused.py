"""Speculation off on Orin NX: the board runs the baseline, with no red, and says why.

Two Orin NX boards (the skill's rules keep speculation off on Orin NX and Nano):
- rf-spec runs an n-gram speculative unit an operator made by hand (the role refuses to deploy one
  on Orin NX); its shipped group_vars (orin_nx.yml) set speculation off, so the rollout puts the
  baseline in its place and reports it "off by policy", naming the variable (not a refusal);
- rf-fresh has no vLLM unit at all and host vars that turn speculation on (vllm_server_speculation:
  true): the rules refuse it (the family rule first, whose fix, to set the variable false, now holds)
  and the rollout installs and starts the baseline.
A second run finds both converged and touches neither (same unit, same server process).
"""
import subprocess
import time

import pytest

from harness import assert_serving, assert_state, board, recap

PREFIX = "specdec-rf-"
BOARDS = [board("rf-spec", "nx-01"), board("rf-fresh", "nx-01", hostvars={"vllm_server_speculation": True})]
STATUS = {"rf-spec": "off", "rf-fresh": "refused"}


# Appends an n-gram speculative config to the deployed unit's ExecStart, as an operator would by hand
# (single quotes: systemd passes the JSON as one argument).
SPECULATE_BY_HAND = """
import json, re
path = '/etc/systemd/system/vllm.service'
spec = json.dumps({'method': 'ngram', 'num_speculative_tokens': 3, 'prompt_lookup_max': 4}, separators=(',', ':'))
text = re.sub(r'^(ExecStart=.*)$', lambda m: m.group(1) + " --speculative-config '" + spec + "'", open(path).read(),
              count=1, flags=re.M)
open(path, 'w').write(text)
"""


def main_pid(fleet, host):
    return fleet.sh(host, "systemctl show -p MainPID --value vllm").stdout.strip()


def speculate_by_hand(fleet, host):
    subprocess.run(["docker", "exec", fleet.container(host), "python3", "-c", SPECULATE_BY_HAND], check=True,
                   capture_output=True, text=True, timeout=60)
    fleet.sh(host, "systemctl daemon-reload && systemctl restart vllm", check=True)
    deadline = time.time() + 300
    while time.time() < deadline and not fleet.models(host):
        time.sleep(2)


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    fleet.deployed = fleet.run("playbooks/deploy.yml", "--limit", "rf-spec", vllm_server_speculation=False)
    speculate_by_hand(fleet, "rf-spec")
    fleet.speculating_before = fleet.speculative("rf-spec") and bool(fleet.models("rf-spec"))
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_run_id="policy")
    fleet.pids = dict((host, main_pid(fleet, host)) for host in fleet.hosts)
    fleet.second = fleet.run("playbooks/rollout.yml", rollout_run_id="policy-again")
    return fleet


def test_the_hand_made_speculative_unit_served_before_the_rollout(fleet):
    rc, out, dummy = fleet.deployed
    assert rc == 0, out[-3000:]
    assert fleet.speculating_before


def test_refused_boards_run_the_baseline_without_a_failure(fleet):
    rc, out, dummy = fleet.first
    assert rc == 0, out[-3000:]
    for host in fleet.hosts:
        assert recap(out)[host]["failed"] == 0, out[-3000:]
        assert_serving(fleet, host, speculative=False)
        state = assert_state(fleet, host, STATUS[host], STATUS[host])
        assert state["last_good"]["kind"] == "baseline" and state["last_good"]["argv"], state
        assert state["info"]["config_after"] == "baseline"
        # the rule comes first, in the state and in the report
        first = state["verdict"]["reasons"][0]
        if STATUS[host] == "off":
            assert first.startswith("policy.speculation_off:") and "vllm_server_speculation is false" in first, first
        else:
            assert first.startswith("family.") and "vllm_server_speculation: false" in first, first
        row = fleet.report_rows("policy")[host]
        assert row["status"] == STATUS[host], row


def test_a_converged_refused_board_is_not_touched_again(fleet):
    rc, out, dummy = fleet.second
    assert rc == 0, out[-3000:]
    for host in fleet.hosts:
        assert fleet.report_rows("policy-again")[host]["status"] == "unchanged"
        assert main_pid(fleet, host) == fleet.pids[host] and fleet.pids[host] not in ("", "0")
        assert_serving(fleet, host, speculative=False)
