#!/usr/bin/env python3
"""Follow docs/getting-started.md start to finish on a simulated fleet (`make getting-started`, ~15 min).

Every shell line this script runs is first looked up on the page, so the page cannot drift from what
works: a line that is no longer there fails the script. The lines run as written, from a scratch
folder, except for where things go (the built collection, the installed collection and the example
inventory are paths in that folder) and for the vault password (a file instead of a prompt). What a
simulated board needs on top of the page (the docker connection instead of SSH, the sysroot of its
board files, the demo's shorter benchmark) goes into its host entry, nowhere else. No ansible.cfg of
the repository is used: the summary callback is turned on as section 1 says.

The fleet is the page's: thor-lab-01 (Thor), agx-line-01 and agx-line-02 (AGX Orin 64GB; the second
regresses at concurrency 8 like the demo's agx-02, on vLLM 0.20.1: no batch-size schedule, so it is reverted),
nx-cart-01 (Orin NX: speculation off by policy).

    .venv/bin/python tests/getting_started/follow.py [--keep]

Needs dockerd and the test-bed board image (tests/testbed/testbed.sh board-image); containers are
named specdec-gs-*.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "rollout"))

from harness import DEMO_HOSTVARS, REPO, VENV_BIN, Fleet, board, recap  # noqa: E402

PAGE = os.path.join(REPO, "docs", "getting-started.md")
BOARDS = [board("thor-lab-01", "thor-01"), board("agx-line-01", "agx-01"), board("agx-line-02", "agx-02", vllm_version="0.20.1"),
          board("nx-cart-01", "nx-01")]
GROUPS = {"thor": ["thor-lab-01"], "agx_orin": ["agx-line-01", "agx-line-02"], "orin_nx": ["nx-cart-01"]}
SYSROOT = "/opt/jetson-sim/root"
VAULT = "vault_vllm_api_key: \"gs-key-0123456789\"\nvault_hf_token: \"hf_gs_not_a_real_token\"\n"


class Follow(object):
    def __init__(self, work):
        self.work = work
        with open(PAGE) as handle:
            self.page = handle.read()
        self.env = dict(os.environ)
        for key in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_CALLBACKS_ENABLED"):
            self.env.pop(key, None)
        self.env.update(PATH=VENV_BIN + os.pathsep + self.env.get("PATH", ""), ANSIBLE_NOCOLOR="1",
                        ANSIBLE_FORCE_COLOR="0")
        self.log = open(os.path.join(work, "follow.log"), "w")

    def on_page(self, line):
        if line not in self.page:
            raise SystemExit("follow: docs/getting-started.md no longer says: %s" % line)

    def sh(self, line, where=None, vault=False, replace=None, env=None, tty=False):
        """Run one line of the page (checked to be on it) in the scratch folder; returns its output."""
        self.on_page(line)
        cmd = line
        for old, new in (replace or {}).items():
            cmd = cmd.replace(old, new)
        if vault:  # before the line's own comment, if it has one
            command, hash_, comment = cmd.partition(" #")
            tail = (" " + hash_.strip() + comment) if hash_ else ""
            cmd = command.rstrip() + " --vault-password-file vault-pass.txt" + tail
        if tty:
            cmd = "script -qec %s /dev/null" % shlex.quote(cmd)
        run_env = dict(self.env, **(env or {}))
        self.log.write("\n$ %s\n" % cmd)
        self.log.flush()
        proc = subprocess.run(cmd, shell=True, cwd=where or self.work, env=run_env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=1800, check=False)
        self.log.write(proc.stdout)
        self.log.flush()
        if proc.returncode != 0:
            raise SystemExit("follow: `%s` failed (rc %d):\n%s" % (cmd, proc.returncode, proc.stdout[-4000:]))
        return proc.stdout


def inventory(fleet_hosts):
    """Section 2's hosts.yml for the simulated boards: the same groups, each host's connection its container."""
    text = ["---", "# my-fleet/hosts.yml as docs/getting-started.md section 2 writes it; the host entries are",
            "# simulated boards (docker connection, sysroot of the board files, the demo's short benchmark).",
            "jetsons:", "  children:"]
    for group, names in GROUPS.items():
        text += ["    %s:" % group, "      hosts:"]
        for name in names:
            entry = dict(fleet_hosts[name], jetson_specdec_root=SYSROOT)
            text.append("        %s: %s" % (name, json.dumps(entry, sort_keys=True)))
    return "\n".join(text) + "\n"


def check(condition, what, out=""):
    if not condition:
        raise SystemExit("follow: %s\n%s" % (what, out[-4000:]))
    print("follow: ok - %s" % what)


def follow(work):
    f = Follow(work)
    collections = os.path.join(work, "collections")
    ansible_env = {"ANSIBLE_COLLECTIONS_PATH": collections}

    # 1. Build the collection from the checkout and install it; the summary callback by environment.
    f.sh("ansible-galaxy collection build --output-path dist/", where=REPO,
         replace={"dist/": os.path.join(work, "dist") + "/"})
    # --force: without it, a jetson.specdec already in ~/.ansible/collections (molecule and ansible-lint put one
    # there) is "already installed" and the new build is not (found by this script)
    f.sh("ansible-galaxy collection install --force dist/jetson-specdec-*.tar.gz -p ~/.ansible/collections",
         replace={"~/.ansible/collections": collections})
    check(os.path.isdir(os.path.join(collections, "ansible_collections", "jetson", "specdec", "playbooks")),
          "the built collection is installed where ANSIBLE_COLLECTIONS_PATH points")
    f.on_page("export ANSIBLE_CALLBACKS_ENABLED=jetson.specdec.specdec_summary")
    f.on_page("export ANSIBLE_COLLECTIONS_PATH=~/.ansible/collections")
    f.env.update(ANSIBLE_CALLBACKS_ENABLED="jetson.specdec.specdec_summary", **ansible_env)

    # 2. The example inventory, the page's groups, and the facts table.
    example = os.path.join(REPO, "inventories", "example")
    f.sh("cp -r inventories/example my-fleet", replace={"inventories/example": example})
    os.makedirs(os.path.join(work, "fleet"))
    fleet = Fleet("specdec-gs-", BOARDS, hostvars=DEMO_HOSTVARS, workdir=os.path.join(work, "fleet")).up()
    try:
        with open(os.path.join(fleet.inventory, "hosts.yml")) as handle:
            fleet_hosts = json.load(handle)["all"]["children"]["jetsons"]["hosts"]
        with open(os.path.join(work, "my-fleet", "hosts.yml"), "w") as handle:
            handle.write(inventory(fleet_hosts))
        out = f.sh("ansible-playbook -i my-fleet jetson.specdec.facts")
        for name in fleet_hosts:
            check(re.search(r"^\|? *%s\b" % re.escape(name), out, re.M) is not None,
                  "the facts table has a row for %s" % name, out)

        # 4. Secrets in a vault (ansible-vault create with an editor that writes the two secrets).
        os.makedirs(os.path.join(work, "my-fleet", "group_vars", "all"), exist_ok=True)
        f.on_page("mkdir -p my-fleet/group_vars/all")
        f.on_page("git mv my-fleet/group_vars/all.yml my-fleet/group_vars/all/main.yml   # or mv")
        shutil.move(os.path.join(work, "my-fleet", "group_vars", "all.yml"),
                    os.path.join(work, "my-fleet", "group_vars", "all", "main.yml"))
        with open(os.path.join(work, "vault-pass.txt"), "w") as handle:
            handle.write("getting-started\n")
        with open(os.path.join(work, "secrets.yml"), "w") as handle:
            handle.write(VAULT)
        # create opens an editor only on a terminal: `script` gives it one; the editor copies the secrets in
        f.sh("ansible-vault create my-fleet/group_vars/all/vault.yml", vault=True, tty=True,
             env={"EDITOR": "cp %s" % os.path.join(work, "secrets.yml")})
        with open(os.path.join(work, "my-fleet", "group_vars", "all", "vault.yml")) as handle:
            check(handle.read().startswith("$ANSIBLE_VAULT;"), "vault.yml is encrypted")
        for line in ('vllm_server_api_key: "{{ vault_vllm_api_key }}"', 'vllm_server_hf_token: "{{ vault_hf_token }}"'):
            f.on_page(line)
            with open(os.path.join(work, "my-fleet", "group_vars", "all", "main.yml"), "a") as handle:
                handle.write(line + "\n")

        # 5. Today's deployment, speculation off.
        out = f.sh("ansible-playbook -i my-fleet jetson.specdec.deploy -e vllm_server_speculation=false", vault=True)
        check(all(recap(out)[n]["failed"] == 0 for n in fleet_hosts), "deploy: no host failed", out)
        check(fleet.sh("thor-lab-01", "cat /etc/vllm/vllm.env").stdout.count("gs-key-0123456789") == 1,
              "the vault's API key reached the board's secrets file only")

        # 6. The first canary rollout: the plan, one board, then the canary batches.
        out = f.sh("ansible-playbook -i my-fleet jetson.specdec.rollout --check           # plan only: per host, "
                   "what it would start, or why it refuses", vault=True)
        check("DRY RUN (--check)" in out, "check mode prints the plan", out)
        check(all(fleet.state(n) is None for n in fleet_hosts), "check mode wrote no state on any board")
        out = f.sh("ansible-playbook -i my-fleet jetson.specdec.rollout -e jetson_specdec_hosts=thor-lab-01   "
                   "# one board first", vault=True)
        check(set(recap(out)) & set(fleet_hosts) == {"thor-lab-01"}, "one board first: only thor-lab-01 ran", out)
        check(fleet.state("thor-lab-01")["status"] in ("kept", "reverted"), "thor-lab-01 was judged")
        out = f.sh("ansible-playbook -i my-fleet jetson.specdec.rollout                    # canary batches: "
                   "1 host, 25 %, the rest", vault=True)
        states = dict((n, (fleet.state(n) or {}).get("status")) for n in fleet_hosts)
        check(states["nx-cart-01"] == "off", "the Orin NX is off by policy (its shipped group_vars)", str(states))
        check(all(states[n] in ("kept", "reverted") for n in ("thor-lab-01", "agx-line-01", "agx-line-02")),
              "every Thor and AGX Orin was judged: %s" % states)
        check("FAILED - RETRYING" not in out, "no retry noise")

        # 7. The report in the folder the run started from.
        runs = sorted(os.listdir(os.path.join(work, "jetson-specdec-reports")))
        last = os.path.join(work, "jetson-specdec-reports", runs[-1])
        check(all(os.path.exists(os.path.join(last, "report." + ext)) for ext in ("json", "md", "html")),
              "jetson-specdec-reports/<run id>/report.{json,md,html}")
        with open(os.path.join(last, "report.md")) as handle:
            report = handle.read()
        check(all(n in report for n in fleet_hosts) and "**Why**" in report, "the report says why for every host")

        # 8. A converged re-run changes nothing; revert puts a chosen host back to the baseline.
        f.on_page("Re-running on a converged fleet changes nothing and does not benchmark")
        out = f.sh("ansible-playbook -i my-fleet jetson.specdec.rollout                    # canary batches: "
                   "1 host, 25 %, the rest", vault=True)
        check(all(recap(out)[n]["changed"] == 0 for n in fleet_hosts), "the converged re-run changed nothing", out)
        f.sh("ansible-playbook -i my-fleet jetson.specdec.revert -l agx-line-02", vault=True)
        check(not fleet.speculative("agx-line-02") and fleet.active("agx-line-02") == "active",
              "revert -l agx-line-02: the baseline runs")
    finally:
        if os.environ.get("FOLLOW_KEEP") != "1":
            fleet.down()
    print("follow: docs/getting-started.md followed start to finish (log: %s)" % os.path.join(work, "follow.log"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder and the containers")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="specdec-getting-started-")
    if args.keep:
        os.environ["FOLLOW_KEEP"] = "1"
    try:
        follow(work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
