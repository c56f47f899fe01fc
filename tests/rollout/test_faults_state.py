"""Faults of the state directory and of the server after it was kept.

One fleet converges first (every host kept or reverted: its last good config).
Then each host but fs-oom gets one fault and is rolled out again with
rollout_force:

* fs-rofs: the state directory is mounted read-only;
* fs-full: the state directory is a full filesystem;
* fs-newer: the state file comes from a newer collection (schema_version 2);
* fs-corrupt: the state file is not valid UTF-8.

The first three must fail in the lock or the state read, naming the path and
the fix, before anything changes: same unit, same server process, same state
file.  The corrupt file is not moved by the read-only check; the rollout moves
it aside (unique name) when it writes the new state.  After the fault is
cleared, a re-run works and keeps the history.  fs-oom's server is killed
(SIGKILL, what the kernel OOM killer sends) after its verdict: systemd starts
the same config again and a re-run leaves the converged host alone.
"""
import json
import time

import pytest

from harness import STATE, assert_serving, assert_state, board, recap

# ~25 min with test_faults_lock/test_faults_state together: make integration-all, not CI (make test).
pytestmark = pytest.mark.slow

PREFIX = "specdec-fs-"
BOARDS = [board(name, "thor-01") for name in ("fs-rofs", "fs-full", "fs-newer", "fs-corrupt", "fs-oom")]
FAULTED = ["fs-rofs", "fs-full", "fs-newer", "fs-corrupt"]
STATE_DIR = "/var/lib/jetson-specdec"
NEWER = {"schema_version": 2, "status": "kept", "config_hash": "ab" * 32, "history": ["from a newer collection"]}


def pid(fleet, host):
    return fleet.sh(host, "systemctl show -p MainPID --value vllm").stdout.strip()


def snapshot(fleet, host):
    return {"unit": fleet.unit(host), "pid": pid(fleet, host),
            "state": fleet.sh(host, "cat %s 2>/dev/null | base64" % STATE).stdout}


def inject(fleet):
    # read-only: a read-only bind mount of the directory over itself
    fleet.sh("fs-rofs", "mount --bind {d} {d} && mount -o remount,bind,ro {d}".format(d=STATE_DIR), check=True)
    # full: a small tmpfs holding the state, filled to the last block
    fleet.sh("fs-full", "cp -a {d} /tmp/state-copy && mount -t tmpfs -o size=256k,mode=0750 tmpfs {d} && "
                        "cp -a /tmp/state-copy/. {d}/ && "
                        "(dd if=/dev/zero of={d}/.filler bs=4k 2>/dev/null; true)".format(d=STATE_DIR), check=True)
    fleet.sh("fs-newer", "cat > %s <<'EOF'\n%s\nEOF" % (STATE, json.dumps(NEWER)), check=True)
    fleet.sh("fs-corrupt", "printf '\\377\\376{\"schema_version\": 1}' > %s" % STATE, check=True)


def clear(fleet):
    fleet.sh("fs-rofs", "umount %s" % STATE_DIR, check=True)
    fleet.sh("fs-full", "umount %s" % STATE_DIR, check=True)
    fleet.sh("fs-newer", "rm -f %s" % STATE, check=True)  # what the operator does after reading the message


# Short benchmarks: these tests are about the state directory, not the numbers.
QUICK = {"rollout_bench_num_prompts": 6, "rollout_bench_warmup_prompts": 1, "rollout_bench_output_len": 32,
         "rollout_repeat_on_noise": False}


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS, hostvars=QUICK)
    rc, out, dummy = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="converge")
    assert rc == 0, out[-4000:]
    fleet.converged = dict((h, fleet.state(h)) for h in fleet.hosts)
    inject(fleet)
    fleet.before = dict((h, snapshot(fleet, h)) for h in FAULTED)
    fleet.faulted = fleet.run("playbooks/rollout.yml", "--limit", ",".join(FAULTED + ["localhost"]),
                              rollout_serial=["100%"], rollout_run_id="faulted", rollout_force=True)
    return fleet


def kept(fleet, host):
    return fleet.converged[host]["status"] == "kept"


def test_converged_first(fleet):
    for host in fleet.hosts:
        assert fleet.converged[host]["status"] in ("kept", "reverted"), fleet.converged[host]
        # fs-corrupt was rolled out again by the faulted run (its own test checks it against its new verdict,
        # which one noisy round can make differ from the first)
        if host != "fs-corrupt":
            assert_serving(fleet, host, speculative=kept(fleet, host))


@pytest.mark.parametrize("host,needle", [
    ("fs-rofs", "mounted read-only"),
    ("fs-full", "filesystem is full"),
    ("fs-newer", "schema_version 2 is newer than this collection"),
])
def test_fault_fails_the_host_before_any_change(fleet, host, needle):
    rc, out, dummy = fleet.faulted
    assert recap(out)[host]["failed"] == 1, out[-4000:]
    assert needle in out, out[-4000:]
    after = snapshot(fleet, host)
    assert after == fleet.before[host], host
    assert fleet.active(host) == "active"
    assert not fleet.lock_held(host)


def test_newer_state_is_left_exactly_as_it_was(fleet):
    raw = fleet.sh("fs-newer", "cat %s" % STATE).stdout
    assert json.loads(raw) == NEWER
    assert fleet.sh("fs-newer", "ls %s | grep -c corrupt" % STATE_DIR).stdout.strip() == "0"


def test_corrupt_state_is_moved_aside_by_the_write_not_the_check(fleet):
    rc, out, dummy = fleet.faulted
    assert recap(out)["fs-corrupt"]["failed"] == 0, out[-4000:]
    assert "not valid UTF-8" in out
    asides = fleet.sh("fs-corrupt", "ls %s | grep 'state.json.corrupt-'" % STATE_DIR).stdout.split()
    assert len(asides) == 1, asides
    kept = fleet.sh("fs-corrupt", "od -An -c %s/%s | head -1" % (STATE_DIR, asides[0])).stdout
    assert "377" in kept  # the unreadable bytes are still there for the operator
    state = fleet.state("fs-corrupt")
    assert state["status"] in ("kept", "reverted"), state
    assert_serving(fleet, "fs-corrupt", speculative=state["status"] == "kept")


def test_state_and_lock_are_not_world_readable(fleet):
    modes = fleet.sh("fs-corrupt", "stat -c '%%a %%n' %s %s %s/rollout.lock.guard" % (STATE_DIR, STATE, STATE_DIR))
    found = dict(reversed(line.split()) for line in modes.stdout.splitlines())
    assert found[STATE] == "640" and found[STATE_DIR] in ("750", "700", "755"), found
    assert found[STATE_DIR + "/rollout.lock.guard"] == "600", found


def test_oom_kill_after_keep_restarts_the_kept_config(fleet):
    host = "fs-oom"
    unit = fleet.unit(host)
    first = pid(fleet, host)
    fleet.sh(host, "systemctl kill -s KILL vllm", check=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        now = pid(fleet, host)
        if fleet.active(host) == "active" and now not in ("0", first) and fleet.models(host):
            break
        time.sleep(1)
    else:
        pytest.fail("vllm did not come back after SIGKILL: %s" % fleet.sh(host, "systemctl status vllm").stdout)
    assert fleet.unit(host) == unit
    assert_serving(fleet, host, speculative=kept(fleet, host))
    assert fleet.state(host) == fleet.converged[host]


def test_after_the_faults_are_cleared_a_rerun_works_and_keeps_history(fleet):
    clear(fleet)
    rc, out, dummy = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="cleared")
    rec = recap(out)
    for host in fleet.hosts:
        assert rec[host]["failed"] == 0, (host, out[-4000:])
    for host in ("fs-rofs", "fs-full", "fs-oom"):
        status = fleet.converged[host]["status"]
        assert_state(fleet, host, status)
        state = fleet.state(host)
        # converged before the fault: nothing was lost, nothing re-run
        assert state["created_at"] == fleet.converged[host]["created_at"], state
        assert state["updated_at"] == fleet.converged[host]["updated_at"], state
        assert_serving(fleet, host, speculative=kept(fleet, host))
    state = fleet.state("fs-newer")
    assert state["status"] in ("kept", "reverted"), state
    assert not fleet.lock_held("fs-newer")
