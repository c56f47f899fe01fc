"""rollout_bench_hold_clocks: MAXN and jetson_clocks for the benchmark window, then exactly what was there.

Both boards start as an operator may leave them: the 120W power mode, the GPU under DVFS
(nobody ran jetson_clocks). The board's nvpmodel and jetson_clocks are the test bed's
stand-ins (tests/simulator/vllm_sim/board_tools.py), acting on the files the collection reads.

- check mode with --diff shows the change per host and makes none;
- hc-thor is benchmarked at MAXN with pinned clocks (every sample of every round says so) and
  runs at 120W under DVFS again afterwards, file for file;
- hc-fail's baseline dies in its benchmark (an unexpected failure, the rescue path): the board is
  put back all the same.
"""
import pytest

from harness import board

# ~4 min of a CI machine's 2 cores: make integration-all, not CI (make test), which keeps the margin under its hour.
# jetson_clock_hold itself, with its faults, is tested in tests/integration_py/test_jetson_clock_hold_module.py on the
# nvpmodel/jetson_clocks stand-ins.
pytestmark = pytest.mark.slow

PREFIX = "specdec-hc-"
BOARDS = [
    board("hc-thor", "thor-01", clocks_pinned=False),
    board("hc-fail", "thor-01", faults={"crash_after_requests": 5, "when": "baseline"}, clocks_pinned=False),
]
HOSTS = [b["name"] for b in BOARDS]
SYSROOT = "/opt/jetson-sim/root"
# what decides the clocks: nvpmodel's status, the GPU devfreq floor and ceiling (Thor's node)
BOARD_FILES = ["var/lib/nvpmodel/status"] + ["sys/class/devfreq/gpu-gpc-0/%s" % f for f in ("min_freq", "max_freq")]
RECORD = "/var/lib/jetson-specdec/clock-hold.json"
RUN = dict(rollout_bench_hold_clocks=True, rollout_serial=["100%"], rollout_max_fail_percentage=100)


def board_files(fleet, host):
    out = fleet.sh(host, "cd %s && for f in %s; do echo \"$f=$(cat $f)\"; done" % (SYSROOT, " ".join(BOARD_FILES)))
    return out.stdout


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    for host in HOSTS:
        fleet.sh(host, "%s/usr/sbin/nvpmodel -m 1" % SYSROOT, check=True)  # 120W
    fleet.before = dict((h, board_files(fleet, h)) for h in HOSTS)
    fleet.check = fleet.run("playbooks/rollout.yml", "--check", "--diff", rollout_run_id="plan", **RUN)
    fleet.after_check = dict((h, board_files(fleet, h)) for h in HOSTS)
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_run_id="held", **RUN)
    return fleet


def test_the_boards_start_at_120w_under_dvfs(fleet):
    for host in HOSTS:
        assert "status=pmode:0001" in fleet.before[host], fleet.before[host]
        assert "min_freq=306000000" in fleet.before[host], fleet.before[host]


def test_check_mode_shows_the_hold_per_host_and_changes_nothing(fleet):
    rc, out, dummy = fleet.check
    assert rc == 0, out[-3000:]
    assert out.count("-power mode 120W (id 1), clocks under DVFS") == len(HOSTS), out[-4000:]
    assert out.count("+power mode MAXN (id 0), clocks held by jetson_clocks") == len(HOSTS), out[-4000:]
    assert fleet.after_check == fleet.before
    for host in HOSTS:
        assert fleet.sh(host, "test -e %s" % RECORD).returncode != 0


def test_the_benchmarks_ran_at_maxn_with_pinned_clocks(fleet):
    rc, out, dummy = fleet.first
    state = fleet.state("hc-thor")
    assert state["status"] in ("kept", "reverted"), (state, out[-3000:])
    assert state["benchmarks"]["rounds"]
    for arm in ("baseline", "candidate"):
        samples = state["benchmarks"][arm]["conditions"]
        assert samples and all(s["maxn"] and s["clocks_pinned"] for s in samples), (arm, samples)
        assert all(s["power_mode"]["name"] == "MAXN" for s in samples)
    assert not state["verdict"].get("set_aside"), state["verdict"]


def test_the_board_runs_as_before_after_a_verdict(fleet):
    assert board_files(fleet, "hc-thor") == fleet.before["hc-thor"]
    assert fleet.sh("hc-thor", "test -e %s" % RECORD).returncode != 0


def test_the_board_runs_as_before_after_a_failure(fleet):
    rc, out, dummy = fleet.first
    assert rc != 0  # hc-fail failed
    assert fleet.state("hc-fail")["status"] == "failed", fleet.state("hc-fail")
    assert "Put back the power mode and clocks the board had" in out
    assert board_files(fleet, "hc-fail") == fleet.before["hc-fail"]
    assert fleet.sh("hc-fail", "test -e %s" % RECORD).returncode != 0
    assert not fleet.lock_held("hc-fail")
