"""Pull-mode test: one simulated board runs the collection on itself with ansible-pull.

    .venv/bin/python tests/pull_mode/run_pull_mode.py     (make pull-mode)

1. A bare git repository of the working tree (uncommitted files included) is the
   ansible-pull source; it is copied into the board container (no network).
2. The board container (test-bed board image, fixture sysroot, stand-in profile) gets
   the project's venv and its base interpreter bind-mounted read-only at the same
   paths, so ansible-pull runs inside it.
3. playbooks/pull_setup.yml installs the timer (docker connection); a second run is
   idempotent.
4. `systemctl start jetson-specdec-pull.service` (what the timer fires): the rollout
   runs, the state file and both textfiles are written with a verdict.
5. A second start changes nothing: same state, changed=0 in the pull log, no
   benchmark, no restart of vLLM. Both starts watch the kept board afterwards (rollout_watch_pull): the
   first with nobody using it (not enough traffic), the second while a client sends completions (steady).
6. An unsigned commit pushed to the branch is refused by `git verify-commit` against the board's
   pinned keyring (the source's commits are signed with a key made for this test; only its
   public half is in pull_mode_gpg_public_keys): the run fails before the playbook, the exit code
   reaches the textfile metric, and the state file and vLLM are untouched.
7. pull_setup with pull_mode_state=absent removes units, script, inventory and checkout.

JETSON_SPECDEC_BOARD_IMAGE overrides the board image; JETSON_SPECDEC_KEEP=1 keeps the
container and the work folder for debugging.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "testbed"))
import fleet  # noqa: E402  (the test bed's board preparation)

VENV = os.path.join(REPO, ".venv")
NAME = "specdec-pull-thor-01"
UNIT = "jetson-specdec-pull"
STATE = "/var/lib/jetson-specdec/state.json"
TEXTFILE_DIR = "/var/lib/node_exporter/textfile_collector"
PULL_LOG = "/var/log/jetson-specdec/pull.log"
BOARD = {"name": "thor-01", "fixture": "thor-t5000-devkit-r39.2", "profile": "thor_t5000",
         # compute headroom: speculation helps at concurrency 1 and holds at 8 (keep)
         "profile_overrides": {"decode_compute_s_per_token_per_bparam": 5e-05}}
# What tests/demo/fleet.json gives every simulated board, as board-local pull variables.
SIM_VARS = {
    "rollout_facts_root": "/opt/jetson-sim/root",
    "rollout_probe_under_root": True,
    "rollout_reclaim_running_service": False,
    "rollout_bench_num_prompts": 16,
    "rollout_bench_warmup_prompts": 2,
    "rollout_bench_input_len": 512,
    "rollout_bench_output_len": 64,
    "rollout_bench_max_duration": 300,
    "vllm_server_health_interval": 1,
    "vllm_server_health_timeout": 120,
    "vllm_server_crash_loop_restarts": 1,
    "vllm_server_restart_sec": 2,
    # a kept board watches itself after each fire (playbooks/pull.yml imports watch.yml): a short window and
    # thresholds a few requests of test traffic meet
    "rollout_watch_pull": True,
    "rollout_watch_window": 10,
    "rollout_watch_min_requests": 5,
    "rollout_watch_min_draft_tokens": 50,
}
# Users of the kept board while the second fire watches it: completions on the loopback for `seconds`.
TRAFFIC = """
import json, sys, time, urllib.request
base = "http://127.0.0.1:8000"
model = json.load(urllib.request.urlopen(base + "/v1/models", timeout=10))["data"][0]["id"]
end = time.time() + float(sys.argv[1])
while time.time() < end:
    body = json.dumps({"model": model, "prompt": "Speculative decoding on a Jetson board", "max_tokens": 32}).encode()
    req = urllib.request.Request(base + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=60).read()
    except Exception:  # the watch judges what the server served; a refused request only waits
        time.sleep(1)
"""


def step(text):
    print("\n=== %s" % text, flush=True)


def run(argv, timeout=600, check=True, **kwargs):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError("%s failed (rc %d)\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(argv), result.returncode, result.stdout[-6000:], result.stderr[-3000:]))
    return result


def board(*argv, timeout=600, check=True):
    return run(["docker", "exec", NAME] + list(argv), timeout=timeout, check=check)


def board_text(path):
    return board("cat", path).stdout


def recap(log):
    """{host: {ok, changed, failed, ...}} from the PLAY RECAP of an ansible-playbook log."""
    section = log.split("PLAY RECAP", 1)
    assert len(section) == 2, "no PLAY RECAP in the log:\n" + log[-3000:]
    rows = {}
    for line in section[1].splitlines():
        match = re.match(r"^(\S+)\s+:\s+(.*)$", line)
        if match:
            rows[match.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return rows


def metric(text, name):
    match = re.search(r"^%s(?:\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M)
    assert match, "metric %s missing in:\n%s" % (name, text)
    return float(match.group(1))


def make_signing_key(work):
    """A signing key made for this run (ed25519, no passphrase): (GNUPGHOME, fingerprint, armored public key)."""
    home = os.path.join(work, "gnupg")
    os.makedirs(home, mode=0o700)
    env = dict(os.environ, GNUPGHOME=home)
    run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key", "pull-mode test <pull-mode@localhost>",
         "ed25519", "sign", "1d"], env=env)
    listing = run(["gpg", "--batch", "--with-colons", "--list-secret-keys"], env=env).stdout
    fingerprint = [line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")][0]
    public = run(["gpg", "--batch", "--armor", "--export", fingerprint], env=env).stdout
    return home, fingerprint, public


def git_cmd(key=None):
    argv = ["git", "-c", "user.name=pull-mode test", "-c", "user.email=pull-mode@localhost"]
    if key:
        return argv + ["-c", "commit.gpgsign=true", "-c", "user.signingkey=%s" % key[1], "-c", "gpg.program=gpg"]
    return argv + ["-c", "commit.gpgsign=false"]


def make_source(work, key):
    """A bare repository of the working tree, uncommitted files included, in one commit signed with ``key``."""
    src = os.path.join(work, "src")
    os.makedirs(src)
    files = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO).stdout.split("\0")
    for rel in files:
        if not rel or rel.startswith(".cache/") or not os.path.isfile(os.path.join(REPO, rel)):
            continue
        dest = os.path.join(src, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.join(REPO, rel), dest, follow_symlinks=False)
    git = git_cmd(key)
    env = dict(os.environ, GNUPGHOME=key[0])
    run(git + ["init", "-q", "-b", "main", src])
    run(git + ["add", "-A"], cwd=src)
    run(git + ["commit", "-q", "-m", "working tree for the pull-mode test"], cwd=src, env=env)
    assert "Good signature" in run(["git", "verify-commit", "HEAD"], cwd=src, env=env).stderr
    bare = os.path.join(work, "specdec.git")
    run(["git", "clone", "-q", "--bare", src, bare])
    return bare


def push_unsigned_commit(work):
    """A new commit on main that nobody signed, in the bare repository."""
    src = os.path.join(work, "src")
    with open(os.path.join(src, "UNSIGNED.txt"), "w") as handle:
        handle.write("a change nobody signed\n")
    run(git_cmd() + ["add", "UNSIGNED.txt"], cwd=src)
    run(git_cmd() + ["commit", "-q", "-m", "unsigned change"], cwd=src)
    run(["git", "push", "-q", os.path.join(work, "specdec.git"), "main"], cwd=src)
    return run(["git", "rev-parse", "HEAD"], cwd=src).stdout.strip()


UNSIGNED_PLAYBOOK = """---
- name: A playbook nobody signed
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Leave a mark
      ansible.builtin.file:
        path: /tmp/unsigned-ran
        state: touch
        mode: "0644"
"""
# Hostile pull_mode_extra_args (issue 34): each spelling bypasses the signature check, the URL rule or the
# checkout command of a real ansible-pull; the role must refuse every one before it writes anything.
HOSTILE_EXTRA_ARGS = [
    ["--force"],
    ["-vf"],
    ["--forc"],
    ['--checkout=main" -m ansible.builtin.command -a "touch /tmp/pwned'],
    ["--url=file:///srv/git/unsigned.git"],
    ["-Ccmain"],
]


def push_unsigned_playbook(work):
    """An unsigned commit on main that adds playbooks/unsigned.yml (it touches /tmp/unsigned-ran)."""
    src = os.path.join(work, "src")
    with open(os.path.join(src, "playbooks", "unsigned.yml"), "w") as handle:
        handle.write(UNSIGNED_PLAYBOOK)
    run(git_cmd() + ["add", "playbooks/unsigned.yml"], cwd=src)
    run(git_cmd() + ["commit", "-q", "-m", "unsigned playbook"], cwd=src)
    run(["git", "push", "-q", os.path.join(work, "specdec.git"), "main"], cwd=src)


def keyring_fingerprints():
    """Primary-key fingerprints in the board's pinned keyring."""
    out = board("gpg", "--batch", "--no-autostart", "--homedir", "/etc/jetson-specdec/gnupg", "--with-colons",
                "--list-keys").stdout
    prints, after_pub = [], False
    for line in out.splitlines():
        fields = line.split(":")
        if fields[0] == "pub":
            after_pub = True
        elif fields[0] == "fpr" and after_pub:
            prints.append(fields[9])
            after_pub = False
    return sorted(prints)


def installed_files():
    """sha256 of what pull_setup writes on the board (script, units, inventory)."""
    paths = ["/usr/local/sbin/jetson-specdec-pull", "/etc/systemd/system/%s.service" % UNIT,
             "/etc/systemd/system/%s.timer" % UNIT, "/etc/jetson-specdec/pull-inventory/hosts.yml"]
    return board("sha256sum", *paths).stdout


def start_board(image):
    base_prefix = run([os.path.join(VENV, "bin", "python"), "-c", "import sys; print(sys.base_prefix)"]).stdout.strip()
    venv = os.path.realpath(VENV)
    mounts = ["-v", "%s:%s:ro" % (venv, venv), "-v", "%s:%s:ro" % (base_prefix, base_prefix)]
    if venv != VENV:
        mounts += ["-v", "%s:%s:ro" % (venv, VENV)]
    run(["docker", "rm", "-f", NAME], check=False)
    run(["docker", "run", "-d", "--name", NAME, "--hostname", BOARD["name"]] + fleet.RUN_FLAGS + mounts
        + [image, "/lib/systemd/systemd"])
    fleet.prepare(NAME, BOARD)


def write_inventory(work, public_key):
    hostvars = {
        "ansible_connection": "community.docker.docker", "ansible_host": NAME,
        "ansible_python_interpreter": "/usr/bin/python3",
        "pull_mode_repo_url": "file:///srv/git/specdec.git",
        # A mirror on the board's disk (the board has no network).
        "pull_mode_allow_file_url": True,
        # The default: only commits signed by these keys run (git verify-commit on the board).
        "pull_mode_verify_commit": True,
        "pull_mode_gpg_public_keys": public_key,
        "pull_mode_branch": "main",
        "pull_mode_ansible_pull_bin": os.path.join(VENV, "bin", "ansible-pull"),
        "pull_mode_vars": SIM_VARS,
    }
    path = os.path.join(work, "hosts.yml")
    with open(path, "w") as handle:
        json.dump({"all": {"hosts": {"pull-thor-01": hostvars}}}, handle, indent=2)
    return path


def setup_playbook(inventory, *extra, check=True):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"),
               ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = run([os.path.join(VENV, "bin", "ansible-playbook"), "-i", inventory,
                  os.path.join(REPO, "playbooks", "pull_setup.yml")] + list(extra), env=env, cwd=REPO, check=check)
    if not check:
        return result
    return recap(result.stdout)["pull-thor-01"]


def fire(expect_failure=False):
    """Start the service the timer fires; returns (seconds, pull log)."""
    start = time.time()
    result = board("systemctl", "start", UNIT + ".service", timeout=1500, check=False)
    took = time.time() - start
    log = board("cat", PULL_LOG, check=False).stdout
    if expect_failure:
        assert result.returncode != 0, "%s.service succeeded:\n%s" % (UNIT, log[-4000:])
    elif result.returncode != 0:
        journal = board("journalctl", "-u", UNIT + ".service", "--no-pager", "-n", "80", check=False).stdout
        raise AssertionError("%s.service failed (rc %d): %s\npull log tail:\n%s\njournal:\n%s"
                             % (UNIT, result.returncode, result.stderr, log[-6000:], journal))
    return took, log


def service_started_at(name):
    return board("systemctl", "show", "-p", "ActiveEnterTimestampMonotonic", "-p", "MainPID", name).stdout


def main():
    image = os.environ.get("JETSON_SPECDEC_BOARD_IMAGE") or run(
        ["bash", os.path.join(REPO, "tests", "testbed", "testbed.sh"), "board-image"], timeout=1800).stdout.strip().splitlines()[-1]
    work = tempfile.mkdtemp(prefix="specdec-pull-")
    keep = os.environ.get("JETSON_SPECDEC_KEEP") == "1"
    try:
        step("Source: a bare git repository of the working tree, its commit signed with a key made for the test")
        key = make_signing_key(work)
        bare = make_source(work, key)

        step("Board %s (%s) with the project's venv mounted read-only" % (NAME, image))
        start_board(image)
        board("mkdir", "-p", "/srv/git")
        run(["docker", "cp", bare, "%s:/srv/git/specdec.git" % NAME])

        step("playbooks/pull_setup.yml installs the timer")
        inventory = write_inventory(work, key[2])
        first = setup_playbook(inventory)
        assert first["failed"] == 0 and first["changed"] > 0, first
        assert board("systemctl", "is-enabled", UNIT + ".timer").stdout.strip() == "enabled"
        assert board("systemctl", "is-active", UNIT + ".timer").stdout.strip() == "active"
        timer = board("systemctl", "show", UNIT + ".timer", "-p", "RandomizedDelayUSec", "-p", "TimersCalendar",
                      "-p", "TimersMonotonic", "-p", "Persistent").stdout
        assert re.search(r"^RandomizedDelayUSec=1h$", timer, re.M), timer
        assert "OnCalendar" in timer and "OnBootUSec" in timer and "Persistent=yes" in timer, timer
        unit = board("systemctl", "cat", UNIT + ".service").stdout
        assert "ANSIBLE_COLLECTIONS_PATH=/var/lib/jetson-specdec/pull" in unit, unit
        script = board_text("/usr/local/sbin/jetson-specdec-pull")
        for expected in ("--url file:///srv/git/specdec.git", "--checkout main", "--limit localhost",
                         "--directory /var/lib/jetson-specdec/pull/ansible_collections/jetson/specdec",
                         "--inventory /etc/jetson-specdec/pull-inventory", "playbooks/pull.yml", "--verify-commit"):
            assert expected in script.replace(" \\\n    ", " "), (expected, script)
        again = setup_playbook(inventory)
        assert again["changed"] == 0 and again["failed"] == 0, "pull_setup is not idempotent: %s" % again
        print("timer installed and enabled; second pull_setup run: changed=0")

        step("First fire: ansible-pull checks out the collection and runs the rollout")
        took, log = fire()
        rows = recap(log)
        assert set(rows) == {"localhost"}, rows
        assert rows["localhost"]["failed"] == 0 and rows["localhost"]["changed"] > 0, rows
        assert "Benchmark the baseline" in log and "Benchmark the candidate" in log, log[-4000:]
        state = json.loads(board_text(STATE))
        assert state["status"] in ("kept", "reverted"), state["status"]
        assert state["verdict"]["decision"] in ("keep", "marginal", "revert"), state["verdict"]
        assert state["info"]["family"] == "thor", state["info"]
        assert state["verdict"]["action"] == "keep", "thor-01 with compute headroom should keep: %s" % state["verdict"]
        textfile = board_text(TEXTFILE_DIR + "/jetson_specdec.prom")
        assert "jetson_specdec_" in textfile and "verdict" in textfile, textfile
        pull_metrics = board_text(TEXTFILE_DIR + "/jetson_specdec_pull.prom")
        assert metric(pull_metrics, "jetson_specdec_pull_last_exit_code") == 0, pull_metrics
        assert metric(pull_metrics, "jetson_specdec_pull_last_changed_tasks") == rows["localhost"]["changed"]
        # the watch ran after the keep (rollout_watch_pull) on the board's own endpoint: nobody used it yet
        assert "Watch kept hosts against the evidence they were kept on" in log, log[-4000:]
        assert "localhost: not_enough_traffic." in log, log[-4000:]
        watch_metrics = board_text(TEXTFILE_DIR + "/jetson_specdec_watch.prom")
        assert "jetson_specdec_watch" in watch_metrics, watch_metrics
        reports = board("ls", "/var/lib/jetson-specdec/reports").stdout.split()
        assert len(reports) == 1, reports
        assert "thor" in board_text("/var/lib/jetson-specdec/reports/%s/report.md" % reports[0])
        print("rollout in %.0f s: status %s, verdict %s; state file and textfiles written"
              % (took, state["status"], state["verdict"]["decision"]))

        step("Second fire, users sending requests: a converged board is left alone and watches itself steady")
        state_before = board_text(STATE)
        vllm_before = service_started_at("vllm.service")
        run(["docker", "exec", "-d", NAME, "python3", "-c", TRAFFIC, "300"])
        took, log = fire()
        board("pkill", "-f", "Speculative decoding on a Jetson board", check=False)
        assert "localhost: steady." in log, log[-4000:]
        rows = recap(log)
        assert rows["localhost"]["changed"] == 0 and rows["localhost"]["failed"] == 0, rows
        assert "Benchmark the" not in log, "the second fire benchmarked again"
        assert re.search(r"localhost \| SUCCESS", log), "the checkout step changed: " + log[:2000]
        assert board_text(STATE) == state_before, "the state file changed on the second fire"
        assert service_started_at("vllm.service") == vllm_before, "vLLM was restarted on the second fire"
        pull_metrics = board_text(TEXTFILE_DIR + "/jetson_specdec_pull.prom")
        assert metric(pull_metrics, "jetson_specdec_pull_last_changed_tasks") == 0, pull_metrics
        print("second fire in %.0f s: changed=0, no benchmark, state and vLLM untouched" % took)

        step("An unsigned commit on the branch is refused before anything runs")
        unsigned = push_unsigned_commit(work)
        board("rm", "-rf", "/srv/git/specdec.git")
        run(["docker", "cp", os.path.join(work, "specdec.git"), "%s:/srv/git/specdec.git" % NAME])
        took, log = fire(expect_failure=True)
        assert "Failed to verify GPG signature of commit/tag \"main\"" in log, log[-4000:]
        assert "PLAY RECAP" not in log, "the playbook ran on an unsigned commit"
        assert board_text(STATE) == state_before, "the state file changed on an unsigned commit"
        assert service_started_at("vllm.service") == vllm_before, "vLLM was restarted on an unsigned commit"
        pull_metrics = board_text(TEXTFILE_DIR + "/jetson_specdec_pull.prom")
        assert metric(pull_metrics, "jetson_specdec_pull_last_exit_code") != 0, pull_metrics
        assert metric(pull_metrics, "jetson_specdec_pull_last_changed_tasks") == -1, pull_metrics
        print("unsigned commit %s refused in %.0f s: exit code in the metric, state and vLLM untouched"
              % (unsigned[:12], took))

        step("pull_mode_state=absent removes the timer (the state file stays)")
        removed = setup_playbook(inventory, "-e", "pull_mode_state=absent")
        assert removed["failed"] == 0 and removed["changed"] > 0, removed
        for path in ("/etc/systemd/system/%s.timer" % UNIT, "/etc/systemd/system/%s.service" % UNIT,
                     "/usr/local/sbin/jetson-specdec-pull", "/etc/jetson-specdec/pull-inventory",
                     "/var/lib/jetson-specdec/pull"):
            assert board("test", "-e", path, check=False).returncode != 0, "%s is still there" % path
        assert board_text(STATE) == state_before, "removing pull mode touched the state file"
        print("timer, service, script, inventory and checkout removed")
        print("\npull mode: PASS")
    finally:
        if keep:
            print("kept container %s and %s" % (NAME, work))
        else:
            run(["docker", "rm", "-f", NAME], check=False)
            shutil.rmtree(work, ignore_errors=True)


def hostile_extra_args_main():
    """Hostile pull_mode_extra_args on a real ansible-pull (issue 34): refused, and no unsigned commit runs.

    1. The branch's head is an unsigned commit that adds playbooks/unsigned.yml; pull_setup installs the timer.
    2. The hostile arguments are real attacks on this ansible-pull: run by hand with the role's command line,
       --force runs the unsigned playbook and the quoted --checkout runs a command of its own.
    3. pull_setup with each hostile spelling in pull_mode_extra_args fails with input.pull_extra_args and
       leaves the script, the units and the inventory as they were.
    4. The service (what the timer fires) still refuses the unsigned commit: nothing ran.
    5. A unit of the administrator's (fleet-agent.service) is not replaced: input.pull_unit_name.
    6. The signer changes from key A to key B: the board's keyring holds B only (gpg --import only adds).
    """
    image = os.environ.get("JETSON_SPECDEC_BOARD_IMAGE") or run(
        ["bash", os.path.join(REPO, "tests", "testbed", "testbed.sh"), "board-image"], timeout=1800).stdout.strip().splitlines()[-1]
    work = tempfile.mkdtemp(prefix="specdec-pull-hostile-")
    keep = os.environ.get("JETSON_SPECDEC_KEEP") == "1"
    try:
        step("Source: a signed commit, then an unsigned one on top that adds playbooks/unsigned.yml")
        key = make_signing_key(work)
        make_source(work, key)
        push_unsigned_playbook(work)
        start_board(image)
        board("mkdir", "-p", "/srv/git")
        run(["docker", "cp", os.path.join(work, "specdec.git"), "%s:/srv/git/specdec.git" % NAME])
        inventory = write_inventory(work, key[2])
        first = setup_playbook(inventory)
        assert first["failed"] == 0 and first["changed"] > 0, first
        again = setup_playbook(inventory)
        assert again["changed"] == 0 and again["failed"] == 0, "pull_setup is not idempotent: %s" % again
        assert keyring_fingerprints() == [key[1]], keyring_fingerprints()
        before = installed_files()

        step("The hostile arguments are real attacks on this ansible-pull (run by hand, not through the role)")
        by_hand = [os.path.join(VENV, "bin", "ansible-pull"), "--url", "file:///srv/git/specdec.git", "--checkout", "main",
                   "--directory", "/root/attack/ansible_collections/jetson/specdec", "--inventory",
                   "/etc/jetson-specdec/pull-inventory", "--limit", "localhost", "--verify-commit"]
        env = ["-e", "GNUPGHOME=/etc/jetson-specdec/gnupg", "-e", "HOME=/root", "-w", "/tmp"]
        forced = run(["docker", "exec"] + env + [NAME] + by_hand + ["--force", "playbooks/unsigned.yml"], check=False)
        assert "Failed to verify GPG signature" in forced.stdout + forced.stderr, forced.stdout[-3000:]
        assert board("test", "-e", "/tmp/unsigned-ran", check=False).returncode == 0, \
            "--force did not run the unsigned playbook:\n" + forced.stdout[-3000:]
        injected = run(["docker", "exec"] + env + [NAME] + by_hand + [HOSTILE_EXTRA_ARGS[3][0], "playbooks/pull.yml"],
                       check=False)
        assert board("test", "-e", "/tmp/pwned", check=False).returncode == 0, \
            "the quoted --checkout ran no command:\n" + injected.stdout[-3000:]
        board("rm", "-rf", "/tmp/unsigned-ran", "/tmp/pwned", "/root/attack")
        print("by hand: --force ran the unsigned playbook (rc %d), the quoted --checkout ran touch /tmp/pwned"
              % forced.returncode)

        step("pull_setup refuses every hostile spelling and leaves the board as it was")
        for extra in HOSTILE_EXTRA_ARGS:
            args = os.path.join(work, "extra.json")
            with open(args, "w") as handle:
                json.dump({"pull_mode_extra_args": extra}, handle)
            result = setup_playbook(inventory, "-e", "@" + args, check=False)
            assert result.returncode != 0, "pull_setup accepted pull_mode_extra_args=%s" % extra
            assert "input.pull_extra_args" in result.stdout, (extra, result.stdout[-3000:])
            assert installed_files() == before, "pull_setup changed the board for %s" % extra
        print("refused: %s" % ", ".join(" ".join(e) for e in HOSTILE_EXTRA_ARGS))

        step("The timer's service still refuses the unsigned commit")
        took, log = fire(expect_failure=True)
        assert "Failed to verify GPG signature" in log, log[-4000:]
        assert "PLAY RECAP" not in log, "a playbook ran on the unsigned commit"
        for mark in ("/tmp/unsigned-ran", "/tmp/pwned"):
            assert board("test", "-e", mark, check=False).returncode != 0, "%s exists" % mark
        pull_metrics = board_text(TEXTFILE_DIR + "/jetson_specdec_pull.prom")
        assert metric(pull_metrics, "jetson_specdec_pull_last_exit_code") != 0, pull_metrics
        print("service run refused in %.0f s, nothing ran" % took)

        step("A unit of the administrator's is not replaced")
        admin_unit = "[Unit]\nDescription=fleet agent of the site\n[Service]\nExecStart=/bin/true\n"
        board("sh", "-c", "printf '%s' \"$1\" > /etc/systemd/system/fleet-agent.service" % "%s", "sh", admin_unit)
        result = setup_playbook(inventory, "-e", "pull_mode_unit_name=fleet-agent", check=False)
        assert result.returncode != 0 and "input.pull_unit_name" in result.stdout, result.stdout[-3000:]
        assert board_text("/etc/systemd/system/fleet-agent.service") == admin_unit
        assert board("test", "-e", "/etc/systemd/system/fleet-agent.timer", check=False).returncode != 0
        print("pull_mode_unit_name=fleet-agent refused; the administrator's unit is unchanged")

        step("The signer changes from key A to key B: the keyring holds B only")
        key_b = make_signing_key(os.path.join(work, "b"))
        rotated = os.path.join(work, "rotated.json")
        with open(rotated, "w") as handle:
            json.dump({"pull_mode_gpg_public_keys": key_b[2]}, handle)
        changed = setup_playbook(inventory, "-e", "@" + rotated)
        assert changed["failed"] == 0 and changed["changed"] > 0, changed
        assert keyring_fingerprints() == [key_b[1]], keyring_fingerprints()
        print("keyring after the switch: %s (key A %s gone)" % (key_b[1][:16], key[1][:16]))
        print("\nhostile pull_mode_extra_args: PASS")
    finally:
        if keep:
            print("kept container %s and %s" % (NAME, work))
        else:
            run(["docker", "rm", "-f", NAME], check=False)
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["hostile"]:
        hostile_extra_args_main()
    else:
        main()
