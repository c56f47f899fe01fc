"""A kept config that crash-loops until systemd's start limit is noticed and the baseline serves again (issue 34).

One AGX Orin board (the demo's agx-01: speculation pays at both levels) is kept with EAGLE-3. Then the board
changes under it as a JetPack or firmware update can: the drafter no longer fits (the simulator's profile
fault oom_when_speculative, the OOM vLLM prints at startup), and vLLM is restarted. The kept launch crashes
at every start until systemd gives up (start-limit-hit): nothing serves, and no process runs that the
argv check could compare. Then what the operator does:
- a check-mode rollout names the drift (rule drift.running_config, "vLLM is not serving") and changes nothing;
- the rollout evaluates the host again: the baseline is put back first (the dead server is not asked for
  its health), EAGLE-3 fails to start as it now must, the ladder's n-gram rung (no drafter) starts and is
  judged, and the host ends serving what the verdict chose, recorded with why it was evaluated again;
- the run after that is converged (no drift, no benchmark).
Observable results only: systemd's view, the state file, the unit, the server's answers, the report.
"""
import json
import time

import pytest

from harness import assert_serving, board, recap

PREFIX = "specdec-cl-"
HOST = "cl-agx"
SHORT = {"rollout_bench_num_prompts": 8, "rollout_bench_warmup_prompts": 1, "rollout_bench_output_len": 32,
         "rollout_verdict_restart_s": 5, "rollout_verdict_max_rounds": 6,
         # systemd gives up after 3 crashes 1 s apart, as it does after 5 at the default 10 s
         "vllm_server_restart_sec": 1, "vllm_server_start_limit_burst": 3}
# The verdict is not under test here: agx-01's EAGLE-3 gains about +38 % at c=1 with 8 prompts of 32 tokens, close
# enough to the 30 % bar that a loaded CI host ran out of rounds on it (inconclusive, reverted: 2026-12-07) and
# nothing was left to crash-loop. Low bars make the first keep certain; the later asserts accept either outcome.
EASY_KEEP = {"rollout_keep_throughput_gain": 0.05, "rollout_keep_tpot_drop": 0.05, "rollout_revert_throughput_gain": 0.01,
             "rollout_c8_regression_tolerance": 0.9, "rollout_marginal_action": "keep"}
BOARDS = [board(HOST, "agx-01", hostvars=EASY_KEEP)]
PROFILE = "/etc/jetson-sim/profile.json"
BREAK = ("python3 -c \"import json; p=json.load(open('%s')); p['faults']={'when': 'speculative', "
         "'oom_when_speculative': True}; json.dump(p, open('%s', 'w'))\" && systemctl restart vllm" % (PROFILE, PROFILE))


def systemd(fleet):
    out = fleet.sh(HOST, "systemctl show -p ActiveState -p Result -p MainPID vllm").stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def wait_until_systemd_gives_up(fleet, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        seen = systemd(fleet)
        if seen.get("ActiveState") == "failed":
            return seen
        time.sleep(1)
    return systemd(fleet)


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS, hostvars=SHORT)
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_run_id="first")
    fleet.kept = fleet.state(HOST)
    fleet.sh(HOST, BREAK, check=True)
    fleet.given_up = wait_until_systemd_gives_up(fleet)
    fleet.unit_before = fleet.unit(HOST)
    fleet.dry = fleet.run("playbooks/rollout.yml", "--check", rollout_run_id="dry")
    fleet.after_dry = {"state": fleet.state(HOST), "systemd": systemd(fleet), "unit": fleet.unit(HOST)}
    fleet.fixed = fleet.run("playbooks/rollout.yml", rollout_run_id="fixed")
    fleet.again = fleet.run("playbooks/rollout.yml", rollout_run_id="again")
    return fleet


def test_the_kept_config_crash_loops_until_systemd_gives_up(fleet):
    assert fleet.first[0] == 0, fleet.first[1][-3000:]
    assert fleet.kept["status"] == "kept" and fleet.kept["last_good"]["kind"] == "candidate", fleet.kept
    # systemd keeps the last exit's result (exit-code) when auto-restart runs into the limit; start-limit-hit
    # when a start is asked for beyond it
    assert fleet.given_up.get("ActiveState") == "failed" and fleet.given_up.get("Result") in (
        "exit-code", "start-limit-hit"), fleet.given_up
    assert fleet.given_up.get("MainPID") == "0"  # nothing runs: no argv to compare, only systemd knows


def test_check_mode_names_the_host_that_does_not_serve_and_changes_nothing(fleet):
    rc, out, dummy = fleet.dry
    assert rc == 0, out[-3000:]
    assert "drift.running_config: %s drifted" % HOST in out and "vLLM is not serving" in out, out[-4000:]
    assert "systemd gave up on the unit (result %s" % fleet.given_up.get("Result") in out
    assert fleet.after_dry["state"] == fleet.kept  # nothing recorded
    assert fleet.after_dry["unit"] == fleet.unit_before
    assert fleet.after_dry["systemd"].get("ActiveState") == "failed"  # nothing started either


def test_the_rollout_puts_the_baseline_back_and_records_why(fleet):
    rc, out, dummy = fleet.fixed
    assert rc == 0 and recap(out)[HOST]["failed"] == 0, out[-4000:]
    # the baseline went back first (no health check of the dead server), then the ladder: EAGLE-3 cannot start
    # any more, n-gram (no drafter) can and is judged; the host ends on whichever the verdict chose
    assert "is unhealthy before the rollout started" not in out
    state = fleet.state(HOST)
    argv = state["last_good"]["argv"]
    assert state["status"] in ("kept", "reverted") and "EAGLE3" not in " ".join(argv), state
    speculative = "--speculative-config" in argv
    assert state["last_good"]["kind"] == ("candidate" if speculative else "baseline"), state
    assert systemd(fleet).get("ActiveState") == "active"
    assert_serving(fleet, HOST, speculative=speculative)
    entry = [e for e in fleet.report("fixed")["hosts"] if e["row"]["host"] == HOST][0]
    assert "vLLM is not serving" in json.dumps(entry["record"]), entry["record"]
    assert [a for a in entry["record"]["attempts"] if a["result"] == "failed" and "eagle3" in a["label"]], \
        entry["record"]["attempts"]


def test_the_run_after_that_is_converged(fleet):
    rc, out, dummy = fleet.again
    assert rc == 0, out[-3000:]
    assert "drift.running_config:" not in out and "evaluated again:" not in out, out[-3000:]
    assert fleet.report_rows("again")[HOST]["status"] == "unchanged"
    assert systemd(fleet).get("ActiveState") == "active"
