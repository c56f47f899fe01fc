"""Boards that serve users (issue 33): the operator's hooks around each host's evaluation, and foreign traffic.

Two Thor boards serving the baseline (deployed first, as today's fleet does):
- hk-serve: its hooks log each call on the board with what vLLM ran at that moment. before_host also starts a
  load generator on the board (someone else's users, still sending requests while the baseline is measured):
  the benchmark's traffic watch sees the foreign requests, the verdict sets that round aside and says why.
  The calls come in order: before_host once, before_restart before every switch (the baseline's, each
  candidate's), after_host once, last, with the final config serving and the status written.
- hk-fail: its before_host hook fails (a load balancer that does not answer): the host is failed, its vLLM
  never restarted (same process, same unit), after_host still runs (to undrain), and the record names the hook.
A hook file that does not exist is refused before any host changes (rule input.rollout_hook).
"""
import os
import re
import textwrap

import pytest

from harness import assert_serving, board, recap

# make integration-all (about 2-3 min of fleet time); CI's hour has no room for it:
# the hook rules (names, files, failures) are unit-tested in CI (test_common_hooks).
pytestmark = pytest.mark.slow
PREFIX = "specdec-hk-"
SHORT = {"rollout_bench_num_prompts": 8, "rollout_bench_warmup_prompts": 1, "rollout_bench_output_len": 32,
         "rollout_verdict_restart_s": 5, "rollout_verdict_max_rounds": 8}
LOG = "/var/log/specdec-hooks.log"

# Someone else's users: four threads sending short completions for 60 s (past the baseline's first round even on a
# loaded machine), errors ignored (the server restarts).
FOREIGN = textwrap.dedent("""\
    import json, threading, time, urllib.request
    def user():
        end = time.time() + 60
        while time.time() < end:
            try:
                model = json.load(urllib.request.urlopen("http://127.0.0.1:8000/v1/models", timeout=5))["data"][0]["id"]
                body = json.dumps({"model": model, "prompt": "hello " * 64, "max_tokens": 64}).encode()
                urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:8000/v1/completions", body,
                                                              {"Content-Type": "application/json"}), timeout=30).read()
            except Exception:
                time.sleep(0.2)
    threads = [threading.Thread(target=user) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    """)

# What vLLM runs when the hook is called: its main PID and whether it speculates.
NOW = ('pid=$(systemctl show -p MainPID --value vllm); '
       'spec=$(tr "\\000" " " < /proc/$pid/cmdline 2>/dev/null | grep -c -- --speculative-config); ')


def hook(name, line, extra=""):
    return textwrap.dedent("""\
        ---
        - name: Log the {name} hook
          ansible.builtin.shell: '{now}echo "{line} pid=$pid spec=$spec" >> {log}'
          changed_when: true
        """).format(name=name, now=NOW, line=line, log=LOG) + extra


@pytest.fixture(scope="module")
def fleet(make_fleet):
    boards = [board("hk-serve", "thor-01"), board("hk-fail", "thor-01")]
    fleet = make_fleet(PREFIX, boards, hostvars=SHORT)
    hooks = os.path.join(fleet.workdir, "hooks")
    os.makedirs(hooks)
    files = {
        "before_host": hook("before_host", "before_host", textwrap.dedent("""\
            - name: Start someone else's users on the board
              ansible.builtin.shell: setsid nohup python3 /root/foreign.py >/dev/null 2>&1 < /dev/null &
              changed_when: true
            """)),
        "before_restart": hook("before_restart", "before_restart {{ rollout_hook_arm }} {{ rollout_hook_label }}"),
        "after_host": hook("after_host", "after_host {{ rollout_hook_status }}"),
        "failing": hook("before_host", "before_host", textwrap.dedent("""\
            - name: Drain the board from the load balancer
              ansible.builtin.fail:
                msg: the load balancer did not answer
            """)),
    }
    for name, text in files.items():
        with open(os.path.join(hooks, name + ".yml"), "w") as handle:
            handle.write(text)
    fleet.hook_file = lambda name: os.path.join(hooks, name + ".yml")
    fleet.sh("hk-serve", "cat > /root/foreign.py <<'EOF'\n%sEOF" % FOREIGN, check=True)
    fleet.deploy = fleet.run("playbooks/deploy.yml", vllm_server_speculation=False)
    fleet.missing = fleet.run("playbooks/rollout.yml", "--limit", "hk-serve", rollout_run_id="hk-missing",
                              rollout_hook_after_host=os.path.join(hooks, "nonexistent.yml"))
    fleet.missing_state = fleet.state("hk-serve")
    fleet.served = fleet.run("playbooks/rollout.yml", "--limit", "hk-serve", rollout_run_id="hk-serve",
                             rollout_hook_before_host=fleet.hook_file("before_host"),
                             rollout_hook_before_restart=fleet.hook_file("before_restart"),
                             rollout_hook_after_host=fleet.hook_file("after_host"))
    fleet.fail_pid = fleet.sh("hk-fail", "systemctl show -p MainPID --value vllm").stdout.strip()
    fleet.fail_unit = fleet.unit("hk-fail")
    fleet.failed = fleet.run("playbooks/rollout.yml", "--limit", "hk-fail", rollout_run_id="hk-fail",
                             rollout_hook_before_host=fleet.hook_file("failing"),
                             rollout_hook_before_restart=fleet.hook_file("before_restart"),
                             rollout_hook_after_host=fleet.hook_file("after_host"))
    return fleet


def calls(fleet, host):
    return [line for line in fleet.sh(host, "cat %s 2>/dev/null" % LOG).stdout.splitlines() if line.strip()]


def test_a_hook_file_that_does_not_exist_is_refused_before_any_change(fleet):
    assert fleet.deploy[0] == 0, fleet.deploy[1][-3000:]
    rc, out, dummy = fleet.missing
    assert rc != 0
    assert "input.rollout_hook: rollout_hook_after_host names" in out and "nonexistent.yml" in out, out[-3000:]
    assert fleet.missing_state is None, fleet.missing_state  # no state written, no lock taken
    assert "Benchmark the baseline" not in out


def test_the_hooks_run_in_order_around_the_evaluation(fleet):
    rc, out, wall = fleet.served
    print("hooked run: %.1f s" % wall)
    assert rc == 0, out[-4000:]
    lines = calls(fleet, "hk-serve")
    events = [line.split()[0] for line in lines]
    assert events[0] == "before_host" and events[-1] == "after_host", lines
    assert events.count("before_host") == 1 and events.count("after_host") == 1, lines
    restarts = [line for line in lines if line.startswith("before_restart")]
    # the baseline's switch first, then at least one candidate's, before every restart of vLLM
    assert restarts and restarts[0].startswith("before_restart baseline baseline"), lines
    assert any(line.startswith("before_restart candidate eagle3") for line in restarts), lines
    # before_host ran while the deployed baseline served, before anything changed
    assert re.search(r"spec=0$", lines[0]) and not lines[0].endswith("pid=0 spec=0"), lines


def test_after_host_sees_the_final_config_serving_and_its_status(fleet):
    state = fleet.state("hk-serve")
    final = calls(fleet, "hk-serve")[-1]
    assert final.startswith("after_host %s " % state["status"]), (final, state["status"])
    assert state["status"] in ("kept", "reverted"), state
    speculating = state["status"] == "kept"
    assert final.endswith("spec=%d" % int(speculating)), final
    assert_serving(fleet, "hk-serve", speculative=speculating)


def test_foreign_traffic_during_a_level_sets_its_round_aside_and_says_why(fleet):
    record = [e["record"] for e in fleet.report("hk-serve")["hosts"] if e["row"]["host"] == "hk-serve"][0]
    aside = (record.get("verdict") or {}).get("set_aside") or []
    assert aside, record.get("verdict")
    reasons = " ".join(" ".join(a["reasons"]) for a in aside)
    assert "foreign traffic (up to" in reasons and "requests besides the benchmark's" in reasons, aside
    assert aside[0]["arm"] == "baseline", aside  # the generator started with the evaluation


def test_a_failing_before_host_hook_leaves_the_host_serving_as_it_was(fleet):
    rc, out, dummy = fleet.failed
    assert rc != 0 and recap(out)["hk-fail"]["failed"] > 0, out[-3000:]
    assert "the load balancer did not answer" in out
    assert "Benchmark the baseline" not in out
    # the same vLLM process from the same unit: nothing restarted
    assert fleet.sh("hk-fail", "systemctl show -p MainPID --value vllm").stdout.strip() == fleet.fail_pid
    assert fleet.unit("hk-fail") == fleet.fail_unit
    assert_serving(fleet, "hk-fail", speculative=False)
    state = fleet.state("hk-fail")
    assert state["status"] == "failed" and "the load balancer did not answer" in state["error"], state
    lines = calls(fleet, "hk-fail")
    # the hook logged its call, then failed; no restart was announced, and the undrain hook still ran
    assert [line.split()[0] for line in lines] == ["before_host", "after_host"], lines
    assert lines[1].startswith("after_host failed "), lines
