"""Small simulated fleets for the rollout tests and measurements.

A Fleet brings up systemd containers of the test bed with tests/testbed/fleet.py
(one per board, docker connection), runs playbooks against them with
subprocess and reads what the rollout left on each host with `docker exec`.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
STATE = "/var/lib/jetson-specdec/state.json"
LOCK = "/var/lib/jetson-specdec/rollout.lock"
PROM = "/var/lib/node_exporter/textfile_collector/jetson_specdec.prom"
UNIT = "/etc/systemd/system/vllm.service"
TRIAL = "/run/systemd/system/vllm.service.d/50-jetson-specdec-trial.conf"

# What the demo gives every host (tests/demo/fleet.json "hostvars").
with open(os.path.join(REPO, "tests", "demo", "fleet.json")) as _handle:
    DEMO = json.load(_handle)
DEMO_HOSTVARS = DEMO["hostvars"]
DEMO_BOARDS = dict((b["name"], b) for b in DEMO["boards"])


def board_image():
    image = os.environ.get("JETSON_SPECDEC_BOARD_IMAGE")
    if not image:
        out = subprocess.run(["bash", "tests/testbed/testbed.sh", "board-image"], cwd=REPO, check=True,
                             capture_output=True, text=True, timeout=1800).stdout
        image = out.strip().splitlines()[-1]
        os.environ["JETSON_SPECDEC_BOARD_IMAGE"] = image
    return image


def board(name, like, faults=None, hostvars=None, **overrides):
    """A board named `name` built like the demo board `like` (fixture, profile, overrides)."""
    base = DEMO_BOARDS[like]
    profile_overrides = dict(base.get("profile_overrides", {}))
    profile_overrides.pop("faults", None)
    profile_overrides.update(overrides)
    if faults is not None:
        profile_overrides["faults"] = faults
    return {"name": name, "fixture": base["fixture"], "profile": base["profile"],
            "profile_overrides": profile_overrides, "hostvars": hostvars or {}}


class Fleet(object):
    def __init__(self, prefix, boards, hostvars=None, workdir=None):
        self.prefix = prefix
        self.boards = boards
        self.workdir = workdir or tempfile.mkdtemp(prefix="specdec-rollout-")
        self.inventory = os.path.join(self.workdir, "inventory")
        self.reports = os.path.join(self.workdir, "reports")
        self.spec = {"prefix": prefix, "image_env": "JETSON_SPECDEC_BOARD_IMAGE",
                     "hostvars": dict(DEMO_HOSTVARS, **(hostvars or {})), "boards": boards}
        self.spec_path = os.path.join(self.workdir, "fleet.json")
        with open(self.spec_path, "w") as handle:
            json.dump(self.spec, handle, indent=2)

    # ------------------------------------------------------------------ lifecycle
    def up(self):
        board_image()
        subprocess.run([os.path.join(VENV_BIN, "python"), "tests/testbed/fleet.py", "up", self.spec_path,
                        self.inventory], cwd=REPO, check=True, capture_output=True, text=True, timeout=900)
        link = os.path.join(self.inventory, "group_vars")
        if not os.path.islink(link):
            os.symlink(os.path.join(REPO, "inventories", "example", "group_vars"), link)
        return self

    def set_group_vars(self, group, **values):
        """Set variables in this fleet's group_vars/<group>.yml, as an operator edits the inventory (the
        shared example group_vars are copied into the fleet's inventory first, never changed)."""
        link = os.path.join(self.inventory, "group_vars")
        if os.path.islink(link):
            target = os.readlink(link)
            os.unlink(link)
            shutil.copytree(target, link)
        path = os.path.join(link, group + ".yml")
        with open(path, "a") as handle:
            handle.write("\n" + "".join("%s: %s\n" % (k, json.dumps(v)) for k, v in sorted(values.items())))

    def down(self):
        subprocess.run([os.path.join(VENV_BIN, "python"), "tests/testbed/fleet.py", "down", self.spec_path],
                       cwd=REPO, check=False, capture_output=True, text=True, timeout=300)

    def container(self, host):
        return self.prefix + host

    @property
    def hosts(self):
        return [b["name"] for b in self.boards]

    # ------------------------------------------------------------------ playbooks
    def env(self):
        env = dict(os.environ)
        env.update(ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"),
                   ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_FORCE_COLOR="0", PATH=VENV_BIN + os.pathsep + env.get("PATH", ""))
        return env

    def command(self, playbook="playbooks/rollout.yml", *args, **extra_vars):
        cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", self.inventory, playbook,
               "-e", "rollout_report_dir=%s" % self.reports]
        if extra_vars:
            cmd += ["-e", json.dumps(extra_vars)]
        return cmd + list(args)

    def run(self, playbook="playbooks/rollout.yml", *args, **extra_vars):
        """Run a playbook; returns (returncode, output, seconds). The output also goes to workdir/run-*.log."""
        start = time.time()
        log = os.path.join(self.workdir, "run-%d.log" % int(start * 1000))
        with open(log, "w") as handle:
            handle.write(" ".join(self.command(playbook, *args, **extra_vars)) + "\n")
            handle.flush()
            proc = subprocess.run(self.command(playbook, *args, **extra_vars), cwd=REPO, env=self.env(),
                                  stdout=handle, stderr=subprocess.STDOUT, text=True, timeout=1800, check=False)
        with open(log) as handle:
            output = handle.read()
        return proc.returncode, output, time.time() - start

    def start(self, playbook="playbooks/rollout.yml", *args, **extra_vars):
        """Start a playbook in its own process group (to kill it like a dying controller)."""
        log = open(os.path.join(self.workdir, "started-%d.log" % int(time.time() * 1000)), "w")
        return subprocess.Popen(self.command(playbook, *args, **extra_vars), cwd=REPO, env=self.env(),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    @staticmethod
    def kill(proc):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)

    # ------------------------------------------------------------------ host checks
    def sh(self, host, script, check=False):
        return subprocess.run(["docker", "exec", self.container(host), "sh", "-c", script], check=check,
                              capture_output=True, text=True, timeout=120)

    def state(self, host):
        out = self.sh(host, "cat %s 2>/dev/null" % STATE).stdout
        return json.loads(out) if out.strip() else None

    def lock_held(self, host):
        return self.sh(host, "test -e %s" % LOCK).returncode == 0

    def unit(self, host):
        return self.sh(host, "cat %s 2>/dev/null" % UNIT).stdout

    def running_unit(self, host):
        """The unit systemd runs: the file under /etc plus its drop-ins (a trial under /run)."""
        return self.sh(host, "systemctl cat vllm 2>/dev/null").stdout

    def trial(self, host):
        """The trial drop-in under /run (empty when the host runs its unit's launch)."""
        return self.sh(host, "cat %s 2>/dev/null" % TRIAL).stdout

    def speculative(self, host):
        """Whether the launch systemd runs (the last ExecStart= of unit and drop-ins) speculates."""
        starts = [line for line in self.running_unit(host).splitlines() if line.startswith("ExecStart=")]
        return bool(starts) and "--speculative-config" in starts[-1]

    def reboot(self, host):
        """Restart the board's container: systemd boots again on a fresh /run (a tmpfs), like a power cycle."""
        subprocess.run(["docker", "restart", "-t", "5", self.container(host)], check=True, capture_output=True,
                       timeout=180)

    def active(self, host):
        return self.sh(host, "systemctl is-active vllm").stdout.strip()

    def models(self, host):
        """The served model ids from /v1/models on the host's loopback (None when it does not answer)."""
        script = ("import json,urllib.request\n"
                  "r=urllib.request.urlopen('http://127.0.0.1:8000/v1/models',timeout=10)\n"
                  "print(json.dumps([m['id'] for m in json.load(r)['data']]))\n")
        proc = subprocess.run(["docker", "exec", self.container(host), "python3", "-c", script],
                              capture_output=True, text=True, timeout=60, check=False)
        return json.loads(proc.stdout) if proc.returncode == 0 else None

    def prom(self, host):
        return self.sh(host, "cat %s 2>/dev/null" % PROM).stdout

    def report(self, run_id=None):
        runs = sorted(d for d in os.listdir(self.reports) if os.path.isdir(os.path.join(self.reports, d)))
        run = run_id or runs[-1]
        with open(os.path.join(self.reports, run, "report.json")) as handle:
            return json.load(handle)

    def report_rows(self, run_id=None):
        return dict((e["row"]["host"], e["row"]) for e in self.report(run_id)["hosts"])

    def stop(self, host):
        subprocess.run(["docker", "stop", "-t", "2", self.container(host)], check=True, capture_output=True,
                       timeout=120)


def recap(output):
    """{host: {ok, changed, unreachable, failed, ...}} from PLAY RECAP."""
    out = {}
    seen = False
    for line in output.splitlines():
        if line.startswith("PLAY RECAP"):
            seen = True
            continue
        if seen and ":" in line and "=" in line:
            host, dummy, rest = line.partition(":")
            out[host.strip()] = dict((k, int(v)) for k, v in (kv.split("=") for kv in rest.split()))
        elif seen and not line.strip() and out:
            break
    return out


def assert_serving(fleet, host, speculative):
    """The host runs its last good config from its unit (no trial left to a reboot) and answers /v1/models."""
    assert fleet.speculative(host) is speculative, fleet.running_unit(host)
    assert fleet.trial(host) == "", "a trial drop-in is left on %s: %s" % (host, fleet.trial(host))
    assert ("--speculative-config" in fleet.unit(host)) is speculative, fleet.unit(host)
    # what systemd runs is what is on disk (no unit or drop-in changed without a daemon-reload)
    assert fleet.sh(host, "systemctl show -p NeedDaemonReload --value vllm").stdout.strip() == "no"
    assert fleet.active(host) == "active"
    assert fleet.models(host), "/v1/models does not answer on %s" % host


# What each settled decision does under the rollout's default rollout_marginal_action (revert).
SETTLED_ACTION = {"keep": "keep", "marginal": "revert", "revert": "revert", "inconclusive": "revert"}


def assert_settled(state):
    """Whichever way the verdict went, it is a settled decision and the action and the host's status
    follow from it. Returns the verdict."""
    verdict = state["verdict"]
    assert verdict["decision"] in SETTLED_ACTION, verdict
    assert verdict["action"] == SETTLED_ACTION[verdict["decision"]], verdict
    assert state["status"] == ("kept" if verdict["action"] == "keep" else "reverted"), (state["status"], verdict)
    return verdict


def measured_arms(state):
    """The arms of the rounds, after checking that each measured what it says (every candidate round a
    speculating server, every baseline round one without) and that both arms were measured."""
    rounds = state["benchmarks"]["rounds"]
    assert all(r["speculating"] is (r["arm"] == "candidate") for r in rounds), rounds
    assert set(r["arm"] for r in rounds) == {"baseline", "candidate"}, rounds
    return [r["arm"] for r in rounds]


def assert_state(fleet, host, status, decision=None):
    state = fleet.state(host)
    assert state is not None, "no state file on %s" % host
    assert state["status"] == status, state
    assert state["config_hash"], state
    if decision:
        assert (state["verdict"] or {}).get("decision") == decision, state["verdict"]
    assert not fleet.lock_held(host), "the rollout lock is still held on %s" % host
    prom = fleet.prom(host)
    assert prom, "no textfile metrics on %s" % host
    assert status in prom, prom
    return state
