"""What an operator chose is what runs: a group set off, a revert with group_vars, each host's own time, the
hosts a run selects (issue 30).

Three boards in one batch (rollout_serial 100%):
- op-thor: kept (low keep bars in its host vars, so that the premise holds), then its group set off in
  group_vars/thor.yml: the next run applies the baseline and records "off by policy", no benchmark;
- op-agx: AGX Orin (the demo's agx-02 on vLLM 0.20.1: no batch-size schedule, so its c=8 regression reverts it),
  evaluated (group_vars/agx_orin.yml sets max_model_len 8192 and utilization 0.80, not the
  role defaults): `revert -l op-agx` puts back exactly the baseline the rollout recorded;
- op-nx: Orin NX, whose shipped group_vars set speculation off: "off by policy", not a refusal, and its
  record's time is its own (a baseline apply), not the batch's benchmark time.
Then the host selections an operator tries, as dry runs (--check changes nothing, and selects like a real run):
-l one host, -l one host plus localhost, a comma-separated jetson_specdec_hosts, a board family (the test
inventory lists every board under `jetsons` only) and a pattern that matches no host.
"""
import os
import pytest

from harness import assert_serving, assert_state, board, recap

PREFIX = "specdec-op-"
EASY_KEEP = {"rollout_keep_throughput_gain": 0.02, "rollout_keep_tpot_drop": 0.02, "rollout_revert_throughput_gain": 0.01,
             "rollout_c8_regression_tolerance": 0.9, "rollout_marginal_action": "keep"}
BOARDS = [board("op-thor", "thor-01", hostvars=EASY_KEEP), board("op-agx", "agx-02", vllm_version="0.20.1"),
          board("op-nx", "nx-01")]


def exec_start(fleet, host):
    return [line for line in fleet.unit(host).splitlines() if line.startswith("ExecStart=")]


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_run_id="first", rollout_serial=["100%"])
    fleet.thor_speculating = fleet.speculative("op-thor")
    fleet.agx_state = fleet.state("op-agx")
    fleet.agx_unit = exec_start(fleet, "op-agx")
    fleet.agx_speculating = fleet.speculative("op-agx")
    fleet.revert = fleet.run("playbooks/revert.yml", "--limit", "op-agx")
    # the operator turns speculation off for the Thor group
    fleet.set_group_vars("thor", vllm_server_speculation=False)
    fleet.off = fleet.run("playbooks/rollout.yml", rollout_run_id="thor-off", jetson_specdec_hosts="op-thor")
    fleet.again = fleet.run("playbooks/rollout.yml", rollout_run_id="thor-off-again", jetson_specdec_hosts="op-thor")
    return fleet


def test_the_first_run_keeps_thor_and_sets_nx_off_by_policy_not_refused(fleet):
    rc, out, dummy = fleet.first
    assert rc == 0, out[-4000:]
    assert fleet.thor_speculating, fleet.running_unit("op-thor")
    rows = fleet.report_rows("first")
    assert rows["op-thor"]["status"] == "kept", rows["op-thor"]
    assert rows["op-nx"]["status"] == "off" and rows["op-nx"]["decision"] == "off", rows["op-nx"]
    assert rows["op-nx"]["c1_tok_s_before"] is None  # no benchmark ran
    state = fleet.state("op-nx")
    assert state["status"] == "off" and state["last_good"]["kind"] == "baseline", state
    assert "vllm_server_speculation" in state["verdict"]["reasons"][0], state["verdict"]
    assert not any(r.startswith("family.") for r in state["verdict"]["reasons"]), state["verdict"]
    assert "off by policy" in out and "refused" not in rows["op-nx"]["decision"]
    assert_serving(fleet, "op-nx", speculative=False)


def test_each_host_of_a_batch_records_its_own_time(fleet):
    rc, out, wall = fleet.first
    assert rc == 0, out[-4000:]
    seconds = dict((e["row"]["host"], e["record"]["timings"]["seconds"]) for e in fleet.report("first")["hosts"])
    print("own time per host (s): %s; run wall time %.1f s" % (seconds, wall))
    assert all(isinstance(s, float) and 0 < s <= wall for s in seconds.values()), seconds
    # the NX only applied its baseline while the two others were benchmarked, in the same batch
    assert seconds["op-nx"] < 60 and seconds["op-nx"] * 3 < min(seconds["op-thor"], seconds["op-agx"]), seconds


def test_revert_puts_back_the_baseline_the_rollout_recorded(fleet):
    rc, out, dummy = fleet.revert
    assert rc == 0, out[-4000:]
    assert recap(out)["op-agx"]["failed"] == 0
    before = fleet.agx_state
    after = assert_state(fleet, "op-agx", "reverted", "revert")
    # the rollout's baseline (reverted for its verdict, or recorded under the candidate it kept)
    assert after["last_good"]["argv"] == before["last_good"]["argv"] or before["last_good"]["kind"] == "candidate"
    if not fleet.agx_speculating:
        assert exec_start(fleet, "op-agx") == fleet.agx_unit
    argv = after["last_good"]["argv"]
    # group_vars/agx_orin.yml, not the role defaults (4096, 0.75)
    assert argv[argv.index("--max-model-len") + 1] == "8192", argv
    assert argv[argv.index("--gpu-memory-utilization") + 1] in ("0.8", "0.80"), argv
    assert "--max-model-len 8192" in fleet.unit("op-agx")
    assert_serving(fleet, "op-agx", speculative=False)


def test_a_kept_host_whose_group_is_set_off_runs_the_baseline_off_by_policy(fleet):
    rc, out, dummy = fleet.off
    assert rc == 0, out[-4000:]
    assert_serving(fleet, "op-thor", speculative=False)
    state = assert_state(fleet, "op-thor", "off", "off")
    assert state["last_good"]["kind"] == "baseline" and state["info"]["config_after"] == "baseline", state
    row = fleet.report_rows("thor-off")["op-thor"]
    assert row["status"] == "off" and row["c1_tok_s_before"] is None, row  # no benchmark
    entry = [e for e in fleet.report("thor-off")["hosts"] if e["row"]["host"] == "op-thor"][0]
    assert "vllm_server_speculation" in entry["record"]["reasons"][0] and "thor" in entry["record"]["reasons"][0]
    assert "Benchmark the baseline" not in out


def test_a_host_set_off_converges(fleet):
    rc, out, dummy = fleet.again
    assert rc == 0, out[-4000:]
    assert fleet.report_rows("thor-off-again")["op-thor"]["status"] == "unchanged"
    assert_serving(fleet, "op-thor", speculative=False)


SELECTIONS = {
    "limit-one": (["--limit", "op-thor"], {}),
    "limit-localhost": (["--limit", "op-thor,localhost"], {}),
    "hosts-list": ([], {"jetson_specdec_hosts": "op-nx,op-agx"}),
    "hosts-family": ([], {"jetson_specdec_hosts": "agx_orin"}),
    "hosts-none": ([], {"jetson_specdec_hosts": "op-nosuch"}),
}
EXPECTED = {"limit-one": ["op-thor"], "limit-localhost": ["op-thor"], "hosts-list": ["op-agx", "op-nx"],
            "hosts-family": ["op-agx"]}


@pytest.fixture(scope="module")
def selections(fleet):
    return dict((run_id, fleet.run("playbooks/rollout.yml", "--check", *args, rollout_run_id=run_id, **extra))
                for run_id, (args, extra) in SELECTIONS.items())


@pytest.mark.parametrize("run_id", sorted(EXPECTED))
def test_the_report_covers_the_selected_hosts_only(fleet, selections, run_id):
    rc, out, dummy = selections[run_id]
    assert rc == 0, out[-4000:]
    report = fleet.report(run_id)
    assert sorted(fleet.report_rows(run_id)) == EXPECTED[run_id], report["summary"]
    assert report["missing_hosts"] == [], report["missing_hosts"]  # nobody else is "unreachable"
    for host in EXPECTED[run_id]:
        assert recap(out)[host]["failed"] == 0, out[-3000:]


def test_a_selection_that_matches_no_host_is_an_error(fleet, selections):
    rc, out, dummy = selections["hosts-none"]
    assert rc != 0
    assert "input.hosts" in out and "op-nosuch" in out, out[-3000:]
    assert not os.path.exists(os.path.join(fleet.reports, "hosts-none", "report.json"))
