"""jetson.specdec.vllm_unit on a simulated board's real systemd: one apply is one task.

The board gets the baseline from playbooks/deploy.yml; then the module alone (ad-hoc, as the
role's configure step calls it) applies: the same unit (nothing happens), a trial drop-in
(restart into it), the trial's launch written into the unit (promoted: same process, no
restart), a check-mode run with --diff (nothing changes), the baseline again (restart, drop-in
gone), and a trial on a host without its unit (refused, nothing written).
"""
import json
import os
import re
import subprocess
import time

import pytest

from harness import TRIAL, UNIT, VENV_BIN, REPO, board

PREFIX = "specdec-unit-"
HOST = "un-thor"
BOARDS = [board(HOST, "thor-01")]
NGRAM = json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}, separators=(",", ":"))


def apply(fleet, *flags, **args):
    """Run the module once against the board; returns (rc, the host's result)."""
    args.setdefault("service", "vllm")
    args.setdefault("unit_path", UNIT)
    args.setdefault("trial_path", TRIAL)
    env = dict(fleet.env(), ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible"), "-i", fleet.inventory, HOST, "-m", "jetson.specdec.vllm_unit",
                           "-a", json.dumps(args)] + list(flags), cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    out = proc.stdout
    # the JSON document, then (on a failure) the collection's summary callback's lines
    result = json.JSONDecoder().raw_decode(out[out.index("{"):])[0]["plays"][0]["tasks"][0]["hosts"][HOST]
    return proc.returncode, result


def main_pid(fleet):
    return fleet.sh(HOST, "systemctl show -p MainPID --value vllm").stdout.strip()


def wait_serving(fleet):
    deadline = time.time() + 180
    while time.time() < deadline:
        if fleet.models(HOST):
            return True
        time.sleep(2)
    return False


def speculative_unit(unit):
    """The deployed unit with an n-gram speculative config on its ExecStart= (as the role would plan it)."""
    return re.sub(r"^(ExecStart=.*)$", lambda m: m.group(1) + " --speculative-config '" + NGRAM + "'", unit,
                  count=1, flags=re.M)


def exec_start(text):
    return [line for line in text.splitlines() if line.startswith("ExecStart=") and line != "ExecStart="][-1]


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    rc, out, dummy = fleet.run("playbooks/deploy.yml", vllm_server_speculation=False)
    assert rc == 0, out[-3000:]
    assert wait_serving(fleet)
    fleet.baseline = fleet.unit(HOST)
    return fleet


def test_the_same_unit_changes_nothing(fleet):
    pid = main_pid(fleet)
    rc, result = apply(fleet, unit=fleet.baseline)
    assert rc == 0 and result["changed"] is False, result
    assert not result["restarted"] and not result["reloaded"] and main_pid(fleet) == pid


def test_a_trial_restarts_into_the_drop_in_and_keeps_the_unit(fleet):
    pid = main_pid(fleet)
    trial = "# trial\n[Service]\nExecStart=\n" + exec_start(speculative_unit(fleet.baseline)) + "\n"
    rc, result = apply(fleet, trial=trial)
    assert rc == 0 and result["changed"] and result["restarted"] and result["written"] == [TRIAL], result
    assert wait_serving(fleet)
    assert fleet.trial(HOST) == trial and fleet.unit(HOST) == fleet.baseline
    assert fleet.speculative(HOST) and main_pid(fleet) != pid
    assert fleet.sh(HOST, "systemctl show -p NeedDaemonReload --value vllm").stdout.strip() == "no"


def test_the_trials_launch_written_into_the_unit_keeps_running(fleet):
    pid = main_pid(fleet)
    rc, result = apply(fleet, unit=speculative_unit(fleet.baseline))
    assert rc == 0 and result["promoted"] and not result["restarted"], result
    assert result["removed"] == [TRIAL] and result["written"] == [UNIT]
    assert main_pid(fleet) == pid, "the kept candidate was restarted"
    assert fleet.trial(HOST) == "" and fleet.speculative(HOST)
    assert fleet.sh(HOST, "systemctl show -p NeedDaemonReload --value vllm").stdout.strip() == "no"
    assert fleet.sh(HOST, "stat -c '%a %U %G' " + UNIT).stdout.split() == ["644", "root", "root"]


def test_check_mode_shows_the_diff_and_changes_nothing(fleet):
    pid, unit = main_pid(fleet), fleet.unit(HOST)
    rc, result = apply(fleet, "--check", "--diff", unit=fleet.baseline)
    assert rc == 0 and result["changed"] and result["restarted"], result
    diff = result["diff"][0]
    assert diff["before"] == unit and diff["after"] == fleet.baseline and diff["after_header"] == UNIT
    assert fleet.unit(HOST) == unit and main_pid(fleet) == pid


def test_the_baseline_again_restarts_without_speculation(fleet):
    pid = main_pid(fleet)
    rc, result = apply(fleet, unit=fleet.baseline)
    assert rc == 0 and result["restarted"] and not result["promoted"], result
    assert wait_serving(fleet)
    assert fleet.unit(HOST) == fleet.baseline and not fleet.speculative(HOST) and main_pid(fleet) != pid


def test_a_trial_without_its_unit_is_refused_and_writes_nothing(fleet):
    paths = dict(service="nothere", unit_path="/etc/systemd/system/nothere.service",
                 trial_path="/run/systemd/system/nothere.service.d/50-jetson-specdec-trial.conf")
    rc, result = apply(fleet, "--check", trial="[Service]\nExecStart=\nExecStart=/bin/true\n", **paths)
    assert rc == 0 and result["changed"] and result["written"] == [paths["trial_path"]], result
    rc, result = apply(fleet, trial="[Service]\nExecStart=\nExecStart=/bin/true\n", **paths)
    assert rc != 0 and "does not have" in result["msg"] and "last good launch" in result["msg"], result
    assert fleet.sh(HOST, "test -e " + paths["trial_path"]).returncode != 0


def switch(fleet, *flags, **extra):
    """vllm_server's switch entry point after its preflight; returns (rc, output, the launch it published)."""
    rc, out, dummy = fleet.run("tests/rollout/switch_play.yml", *flags, **extra)
    # the default callback prints the debug message as a JSON string
    published = re.search(r'"msg": ("PUBLISHED .*")\n', out)
    return rc, out, json.loads(json.loads(published.group(1))[len("PUBLISHED "):]) if published else None


def test_the_switch_in_check_mode_shows_the_trial_and_changes_nothing(fleet):
    pid = main_pid(fleet)
    rc, out, launch = switch(fleet, "--check", "--diff", switch_speculation=True, switch_trial=True,
                             switch_method="ngram")
    assert rc == 0, out[-3000:]
    assert "+ExecStart=" in out and "--speculative-config" in out and TRIAL in out  # the diff of the drop-in
    assert launch["speculation"] and launch["applied"] == "candidate" and launch["unit"]["changed"]
    assert "serving" not in launch  # no wait in check mode
    assert fleet.trial(HOST) == "" and main_pid(fleet) == pid


def test_a_candidate_the_memory_check_refuses_changes_nothing_and_is_published(fleet):
    pid, unit = main_pid(fleet), fleet.unit(HOST)
    # a reserve larger than the board: the baseline (no memory check) passes, the candidate does not fit
    rc, out, launch = switch(fleet, switch_speculation=True, switch_trial=True, switch_method="ngram",
                             switch_reserve_bytes=10 ** 15)
    assert rc != 0 and "vllm_server preflight refused" in out, out[-3000:]
    assert launch["failed"] and [r["rule"] for r in launch["refusals"]] == ["memory.headroom"]
    assert launch["candidate"]["headroom"]["fits"] is False  # what the rollout's ladder reads
    assert "unit" not in launch  # refused before the write
    assert fleet.unit(HOST) == unit and fleet.trial(HOST) == "" and main_pid(fleet) == pid


def test_the_switch_applies_the_trial_and_publishes_how_long_vllm_did_not_serve(fleet):
    rc, out, launch = switch(fleet, switch_speculation=True, switch_trial=True, switch_method="ngram")
    assert rc == 0, out[-3000:]
    assert launch["unit"]["restarted"] and launch["serving"]["models"] and launch["serving"]["serving_gap_s"] > 0
    assert fleet.speculative(HOST) and fleet.unit(HOST) == fleet.baseline  # a trial: the unit is untouched
    rc, out, launch = switch(fleet)  # back to the baseline: the drop-in goes
    assert rc == 0 and not launch["speculation"] and fleet.trial(HOST) == "" and not fleet.speculative(HOST)
