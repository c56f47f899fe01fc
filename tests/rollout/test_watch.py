"""The watch of kept hosts (issue 35) on a small simulated fleet.

Two Thor boards, alike: both are rolled out and kept. Their stand-ins' acceptance follows the prompts
(profile prompt_acceptance: a prompt about "quarterly tariff codes" has every acceptance probability scaled by
0.2, as new traffic a draft never saw would on real vLLM). Then watch-drift serves that new traffic and
watch-steady the kind of prompts it was benchmarked on, while jetson.specdec.watch reads both hosts' /metrics
over a window: watch-drift is reported drifted with its numbers, watch-steady steady, and neither is touched.
A second watch with rollout_watch_action=revert, while only watch-drift has traffic, reverts watch-drift
through the revert path and finds too little traffic on watch-steady (not a verdict, left alone). A third,
rollout_watch_action=reevaluate, marks watch-steady, and the next rollout evaluates it again and clears the mark.
Observable results only: the watch's textfile, the playbook's output, state files, what each host serves.
"""
import subprocess
import time

import pytest

from harness import assert_serving, assert_state, board, recap

# make integration-all (about 5 min of fleet time); CI's hour has no room for it: the watch's rules are
# unit-tested in CI (test_record_watch); make real-lane-all runs it on real vLLM's counters.
pytestmark = pytest.mark.slow

PREFIX = "specdec-watch-"
MARKER = "quarterly tariff codes"
SHORT = {"rollout_bench_num_prompts": 8, "rollout_bench_warmup_prompts": 1, "rollout_bench_output_len": 32,
         "rollout_verdict_restart_s": 5}
# The timing verdict is not under test: low bars so that a loaded CI host cannot make the keep inconclusive.
EASY_KEEP = {"rollout_keep_throughput_gain": 0.05, "rollout_keep_tpot_drop": 0.05, "rollout_revert_throughput_gain": 0.01,
             "rollout_c8_regression_tolerance": 0.9, "rollout_marginal_action": "keep", "rollout_verdict_max_rounds": 8}
FOLLOWS_PROMPTS = [{"contains": MARKER, "scale": 0.2}]
BOARDS = [
    board("watch-drift", "thor-01", hostvars=EASY_KEEP, prompt_acceptance=FOLLOWS_PROMPTS),
    board("watch-steady", "thor-01", hostvars=EASY_KEEP, prompt_acceptance=FOLLOWS_PROMPTS),
]
WATCH_PROM = "/var/lib/node_exporter/textfile_collector/jetson_specdec_watch.prom"
WINDOW = 6
# The window's traffic is a few dozen short requests: lower bars than a real fleet's defaults.
# TPOT is not what this fleet drifts on: the stand-in runs the board's time per token ten times faster (a few ms), so a busy
# 2-core CI host's late wake-ups alone add more than the default 25 % (CI once saw the steady host "drifted" that
# way). The wide TPOT bar leaves acceptance to decide here; test_record_watch.py judges TPOT drift.
WATCH = {"rollout_watch_window": WINDOW, "rollout_watch_min_requests": 5, "rollout_watch_min_draft_tokens": 50,
         "rollout_watch_tpot_rise": 0.95}

TRAFFIC = r"""
import json, random, sys, time, urllib.request
marker, seconds = sys.argv[1], float(sys.argv[2])
model = json.load(urllib.request.urlopen("http://127.0.0.1:8000/v1/models", timeout=10))["data"][0]["id"]
words = "the log shows a service that restarts after the update and the operator asks why".split()
rng, end, n = random.Random(7), time.monotonic() + seconds, 0
while time.monotonic() < end:
    text = (marker + ": " if marker != "-" else "") + " ".join(rng.choice(words) for _ in range(400))
    body = {"model": model, "prompt": text, "max_tokens": 32, "ignore_eos": True, "temperature": 0}
    req = urllib.request.Request("http://127.0.0.1:8000/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=30).read()
        n += 1
    except OSError:  # the server restarts (the watch's revert): users retry
        time.sleep(0.5)
print(n)
"""


def serve_traffic(fleet, host, marker, seconds):
    """Requests to the host's vLLM on its loopback for `seconds`, in the background (what its users send)."""
    return subprocess.Popen(["docker", "exec", fleet.container(host), "python3", "-c", TRAFFIC, marker or "-",
                             str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return int(out.strip())


def prom(fleet, host):
    text = fleet.sh(host, "cat %s 2>/dev/null" % WATCH_PROM).stdout
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS, hostvars=SHORT)
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="watch")
    assert fleet.first[0] == 0, fleet.first[1][-4000:]
    # both hosts serve; watch-drift's users start asking about something else
    traffic = [serve_traffic(fleet, "watch-drift", MARKER, WINDOW + 25),
               serve_traffic(fleet, "watch-steady", None, WINDOW + 25)]
    time.sleep(3)
    fleet.watched = fleet.run("playbooks/watch.yml", **WATCH)
    # the numbers, for whoever reads the test's output (-rA)
    print("\n".join(line.strip() for line in fleet.watched[1].splitlines() if ": drifted." in line or ": steady." in line))
    fleet.requests = [finish(p) for p in traffic]
    fleet.after_report = {h: prom(fleet, h) for h in fleet.hosts}
    fleet.states_after_report = {h: fleet.state(h) for h in fleet.hosts}
    return fleet


def test_both_hosts_are_kept_before_the_watch(fleet):
    for host in fleet.hosts:
        state = fleet.states_after_report[host]
        assert state["status"] == "kept", state["verdict"]
        assert state["benchmarks"]["candidate"], state


def test_the_watch_flags_the_drifted_host_with_its_numbers_and_next_step(fleet):
    rc, out, seconds = fleet.watched
    assert rc == 0, out[-4000:]
    assert recap(out)["watch-drift"]["failed"] == 0
    values = fleet.after_report["watch-drift"]
    assert values['jetson_specdec_watch_status{status="drifted"}'] == 1, values
    assert values["jetson_specdec_watch_drifted"] == 1
    observed = values['jetson_specdec_watch_acceptance_rate{source="observed"}']
    kept = values['jetson_specdec_watch_acceptance_rate{source="kept"}']
    assert observed < 0.5 * kept, values  # 0.2 of every position's probability
    assert values["jetson_specdec_watch_requests"] >= 5
    assert "watch-drift: drifted. Acceptance drifted:" in out, out[-4000:]
    assert "when kept; the watch allows a 25.0% fall" in out
    assert "Next: The traffic watch-drift serves no longer matches the prompts it was kept on." in out
    # report only: the host still serves its kept config
    assert fleet.states_after_report["watch-drift"]["status"] == "kept"


def test_the_watch_leaves_the_steady_host_alone(fleet):
    values = fleet.after_report["watch-steady"]
    assert values['jetson_specdec_watch_status{status="steady"}'] == 1, values
    assert values["jetson_specdec_watch_drifted"] == 0
    observed = values['jetson_specdec_watch_acceptance_rate{source="observed"}']
    kept = values['jetson_specdec_watch_acceptance_rate{source="kept"}']
    assert observed > 0.75 * kept, values
    assert "watch-steady: steady. Steady over the" in fleet.watched[1]
    assert fleet.states_after_report["watch-steady"]["status"] == "kept"
    assert_serving(fleet, "watch-steady", speculative=True)


def test_the_revert_action_reverts_the_drifted_host_and_a_quiet_host_is_not_judged(fleet):
    traffic = serve_traffic(fleet, "watch-drift", MARKER, WINDOW + 20)
    time.sleep(3)
    rc, out, dummy = fleet.run("playbooks/watch.yml", rollout_watch_action="revert", **WATCH)
    finish(traffic)
    assert rc == 0, out[-4000:]
    state = assert_state(fleet, "watch-drift", "reverted")
    assert state["verdict"]["reasons"][0].startswith(
        "Reverted by jetson.specdec.watch (rollout_watch_action=revert): Acceptance drifted:"), state["verdict"]
    assert state["info"]["revert_took_lock_from"] is None  # nobody held the lock; none was broken
    assert_serving(fleet, "watch-drift", speculative=False)
    quiet = prom(fleet, "watch-steady")
    assert quiet['jetson_specdec_watch_status{status="not_enough_traffic"}'] == 1, quiet
    assert quiet["jetson_specdec_watch_drifted"] == 0
    assert "watch-steady: not_enough_traffic. Not enough traffic: 0 finished requests" in out
    assert fleet.state("watch-steady")["status"] == "kept"
    assert_serving(fleet, "watch-steady", speculative=True)


def test_the_reevaluate_action_marks_the_drifted_host_for_the_next_rollout(fleet):
    traffic = serve_traffic(fleet, "watch-steady", MARKER, WINDOW + 15)
    time.sleep(3)
    rc, out, dummy = fleet.run("playbooks/watch.yml", "-l", "watch-steady", rollout_watch_action="reevaluate", **WATCH)
    finish(traffic)
    assert rc == 0, out[-4000:]
    state = assert_state(fleet, "watch-steady", "kept")  # still kept, lock released
    mark = state["info"]["watch_reevaluate"]
    assert mark["reason"].startswith("Acceptance drifted:"), mark
    kept = prom(fleet, "watch-steady")['jetson_specdec_watch_acceptance_rate{source="kept"}']
    assert mark["observed"]["acceptance"] < 0.5 * kept, (mark, kept)
    assert state["info"]["family"] and state["info"]["model"]  # the rest of info is kept
    assert_serving(fleet, "watch-steady", speculative=True)  # marked, not touched


def test_the_next_rollout_evaluates_the_marked_host_again_and_clears_the_mark(fleet):
    assert (fleet.state("watch-steady")["info"] or {}).get("watch_reevaluate"), "the premise: the host is marked"
    rc, out, dummy = fleet.run("playbooks/rollout.yml", "-l", "watch-steady", rollout_run_id="watch-reevaluated")
    assert rc == 0, out[-4000:]
    assert "watch-steady: evaluated again: the watch found the kept config drifted (Acceptance drifted:" in out, out[-4000:]
    assert "Benchmark the baseline" in out  # judged again, not converged
    state = fleet.state("watch-steady")
    assert state["status"] in ("kept", "reverted") and not watch_mark(state), state["info"]
    assert state["info"]["run_id"] == "watch-reevaluated", state["info"]
    assert fleet.report_rows("watch-reevaluated")["watch-steady"]["status"] in ("kept", "reverted")


def watch_mark(state):
    """The watch's mark, if the re-evaluation left it (it must not)."""
    return (state.get("info") or {}).get("watch_reevaluate")


def test_a_host_no_longer_kept_has_nothing_to_watch(fleet):
    rc, out, dummy = fleet.run("playbooks/watch.yml", "-l", "watch-drift", **dict(WATCH, rollout_watch_window=1))
    assert rc == 0, out[-4000:]
    assert prom(fleet, "watch-drift")['jetson_specdec_watch_status{status="not_kept"}'] == 1
    assert "Nothing to watch: the state says reverted, not kept." in out
