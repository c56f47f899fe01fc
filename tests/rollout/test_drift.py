"""What runs is compared with what was decided, on every run (issue 30 item 2).

One AGX Orin board whose speculation is off by policy (its host vars), so that each run is short (no
benchmark): the first rollout records it "off" with the baseline as its last good config. Then what an
operator did:
- `jetson.specdec.deploy -e vllm_server_speculation=true` turns speculation on behind the rollout's back:
  the next rollout reports the drift (rule drift.running_config), puts the recorded baseline back and says
  so, not "converged";
- an API key added to the inventory (as the vault would): the next rollout finds the secrets file differs,
  evaluates the host again and the server answers only with the key; the run after that is converged;
- a halved context window started by hand, then the unit file put back without a restart: the running
  process differs from the last good config, and the next rollout restarts vLLM on it.
"""
import json
import secrets
import subprocess

import pytest

from harness import UNIT, board, recap

PREFIX = "specdec-dr-"
HOST = "dr-agx"
BOARDS = [board(HOST, "agx-02", hostvars={"vllm_server_speculation": False})]


def models_with_key(fleet, key):
    """The served model ids with the key (None when the server does not answer)."""
    script = ("import json,sys,urllib.request\n"
              "q=urllib.request.Request('http://127.0.0.1:8000/v1/models',headers={'Authorization':'Bearer '+sys.argv[1]})\n"
              "print(json.dumps([m['id'] for m in json.load(urllib.request.urlopen(q,timeout=10))['data']]))\n")
    proc = subprocess.run(["docker", "exec", fleet.container(HOST), "python3", "-c", script, key],
                          capture_output=True, text=True, timeout=60, check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_run_id="first")
    fleet.recorded = fleet.state(HOST)
    fleet.deploy = fleet.run("playbooks/deploy.yml", "--limit", HOST, vllm_server_speculation=True)
    fleet.deployed_speculative = fleet.speculative(HOST)
    fleet.dry = fleet.run("playbooks/rollout.yml", "--check", rollout_run_id="dry")
    fleet.drift = fleet.run("playbooks/rollout.yml", rollout_run_id="drift")
    # what the drift run left (the runs below change the host again)
    fleet.after_drift = {"state": fleet.state(HOST), "speculative": fleet.speculative(HOST), "unit": fleet.unit(HOST),
                         "trial": fleet.trial(HOST), "lock_held": fleet.lock_held(HOST), "models": fleet.models(HOST),
                         "need_reload": fleet.sh(HOST, "systemctl show -p NeedDaemonReload --value vllm").stdout.strip()}
    fleet.key = secrets.token_hex(16)
    fleet.set_group_vars("all", vllm_server_api_key=fleet.key)  # what adding it to the vault does
    fleet.keyed = fleet.run("playbooks/rollout.yml", rollout_run_id="keyed")
    fleet.again = fleet.run("playbooks/rollout.yml", rollout_run_id="again")
    # by hand: a halved context window started, then the unit file put back and reloaded, no restart
    fleet.sh(HOST, "cp %(u)s /root/good.service && sed -i 's/--max-model-len 8192/--max-model-len 4096/' %(u)s && "
                   "systemctl daemon-reload && systemctl restart vllm && cp /root/good.service %(u)s && "
                   "systemctl daemon-reload" % {"u": UNIT}, check=True)
    fleet.stale_process = process_argv(fleet)
    fleet.process = fleet.run("playbooks/rollout.yml", rollout_run_id="process")
    return fleet


def process_argv(fleet):
    """The main process's argv, once it has exec'd (until then systemd names the forked child "(vllm)")."""
    return fleet.sh(HOST, "for i in $(seq 40); do a=$(tr '\\000' ' ' < /proc/$(systemctl show -p MainPID --value vllm)/cmdline); "
                          "case \"$a\" in '('*) sleep 0.5;; *) break;; esac; done; printf '%s' \"$a\"").stdout


def test_the_first_run_records_the_baseline_as_the_last_good_config(fleet):
    rc, out, dummy = fleet.first
    assert rc == 0, out[-4000:]
    assert fleet.recorded["status"] == "off" and fleet.recorded["last_good"]["kind"] == "baseline", fleet.recorded
    assert fleet.deploy[0] == 0, fleet.deploy[1][-3000:]
    assert fleet.deployed_speculative, "the deploy did not turn speculation on: the premise fails"


def test_check_mode_reports_the_drift_and_what_a_real_run_would_do(fleet):
    rc, out, dummy = fleet.dry
    assert rc == 0, out[-4000:]
    assert "drift.running_config: %s drifted from its last good config" % HOST in out, out[-4000:]
    assert "put back the last good config" in out, out[-4000:]
    assert fleet.report_rows("dry")[HOST]["status"] == "planned"


def test_a_deploy_behind_the_rollouts_back_is_drift_reported_and_corrected(fleet):
    rc, out, wall = fleet.drift
    print("drift run: %.1f s" % wall)
    assert rc == 0, out[-4000:]
    assert recap(out)[HOST]["changed"] > 0, out[-3000:]
    assert "drift.running_config: %s drifted from its last good config" % HOST in out, out[-4000:]
    assert "--speculative-config" in out  # the finding names what ran
    assert "Benchmark the baseline" not in out  # put back, not evaluated again
    record = [e["record"] for e in fleet.report("drift")["hosts"] if e["row"]["host"] == HOST][0]
    assert record["status"] == "off" and record["drift"]["corrected"] is True, record
    assert record["reasons"][0].startswith("Drift corrected: drift.running_config"), record["reasons"]
    after = fleet.after_drift
    state = after["state"]
    assert state["status"] == "off" and not after["lock_held"], state
    assert state["last_good"] == fleet.recorded["last_good"]
    assert state["info"]["drift_corrected"]["run_id"] == "drift", state["info"]
    # the recorded baseline runs from the unit, loaded, serving (assert_serving, as it was then)
    assert not after["speculative"] and after["trial"] == "" and after["need_reload"] == "no", after
    assert after["models"], "/v1/models does not answer after the correction"
    unit_exec = [line for line in after["unit"].splitlines() if line.startswith("ExecStart=")][-1]
    assert "--max-model-len 8192" in unit_exec and "--speculative-config" not in unit_exec, unit_exec


def test_an_api_key_added_in_the_vault_is_applied_and_the_run_after_is_converged(fleet):
    rc, out, dummy = fleet.keyed
    assert rc == 0, out[-4000:]
    assert "the secrets file (API key, Hugging Face token) is not what the inventory (vault) sets now" in out, out[-4000:]
    assert fleet.report_rows("keyed")[HOST]["status"] == "off"
    assert fleet.models(HOST) is None, "the server still answers without the key"
    assert models_with_key(fleet, fleet.key), "the server does not answer with the key"
    rc, out, dummy = fleet.again
    assert rc == 0, out[-4000:]
    assert "drift.running_config" not in out, out[-4000:]
    assert fleet.report_rows("again")[HOST]["status"] == "unchanged"
    assert recap(out)[HOST]["changed"] == 0, out[-3000:]


def test_a_process_started_from_another_unit_is_drift_and_restarted_on_the_last_good_config(fleet):
    assert "--max-model-len 4096" in fleet.stale_process, fleet.stale_process  # the premise
    rc, out, dummy = fleet.process
    assert rc == 0, out[-4000:]
    assert "the running vLLM process runs " in out and "not the last good config (baseline)" in out, out[-4000:]
    assert "Load the unit on disk and restart vLLM" in out
    now = process_argv(fleet)
    assert "--max-model-len 8192" in now and "--speculative-config" not in now, now
    assert models_with_key(fleet, fleet.key)
    assert fleet.report_rows("process")[HOST]["status"] == "off"
