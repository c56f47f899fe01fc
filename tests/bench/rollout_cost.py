#!/usr/bin/env python3
"""What the rollout costs the controller: Ansible tasks per host and CPU seconds.

Brings up the demo fleet (tests/demo/fleet.json: a keep, a revert, a ladder that
ends with speculation off and two boards off by policy), deploys the baseline, then runs
playbooks/rollout.yml once and counts, per host, the task results (a callback,
tests/bench/callbacks/task_count.py) and the CPU time of the ansible-playbook
process tree (getrusage of the children: the controller, not the boards). Then the
same playbook on the converged fleet.

    .venv/bin/python tests/bench/rollout_cost.py [--repo DIR] [--keep] [--hosts a,b] [--time-scale S] [--hostvars JSON]

--repo runs the playbooks of another checkout (for example a `git worktree` of an
older commit, to measure before a change); it needs DIR/.venv and
DIR/.cache/collections/ansible_collections/jetson/specdec -> DIR.
Needs dockerd and the test-bed board image; containers are named specdec-cost-*.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "rollout"))

from harness import DEMO, REPO, Fleet  # noqa: E402

ROLES = {"thor-01": "keep", "agx-01": "keep", "agx-02": "keep (third arm)", "agx32-01": "ladder",
         "nx-01": "off", "nano-01": "off"}


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(fleet, repo, playbook, counts_path, **extra_vars):
    env = fleet.env()
    env.update(ANSIBLE_COLLECTIONS_PATH=os.path.join(repo, ".cache", "collections"),
               ANSIBLE_CONFIG=os.path.join(repo, "ansible.cfg"),
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, "callbacks"),
               ANSIBLE_CALLBACKS_ENABLED="jetson.specdec.specdec_summary,task_count",
               SPECDEC_TASK_COUNT_FILE=counts_path)
    cmd = [os.path.join(repo, ".venv", "bin", "ansible-playbook"), "-i", fleet.inventory, playbook,
           "-e", "rollout_report_dir=%s" % fleet.reports, "-e", json.dumps(extra_vars)]
    log = os.path.join(fleet.workdir, os.path.basename(counts_path) + ".log")
    before = cpu_seconds()
    with open(log, "w") as handle:
        rc = subprocess.run(cmd, cwd=repo, env=env, stdout=handle, stderr=subprocess.STDOUT, timeout=3600,
                            check=False).returncode
    cpu = cpu_seconds() - before
    with open(counts_path) as handle:
        counts = json.load(handle)
    return rc, cpu, counts, log


def tasks(count):
    return sum(count.get(k, 0) for k in ("ok", "failed", "skipped", "unreachable"))


def measure(repo, keep=False, only=None, time_scale=None, hostvars=None):
    boards = [dict(b, hostvars={}) for b in DEMO["boards"] if not only or b["name"] in only]
    if time_scale is not None:  # board time (1.0) makes every benchmark and start as long as on the profile's board
        boards = [dict(b, profile_overrides=dict(b.get("profile_overrides") or {}, time_scale=time_scale)) for b in boards]
    fleet = Fleet("specdec-cost-", boards, hostvars=hostvars, workdir=tempfile.mkdtemp(prefix="specdec-cost-"))
    try:
        fleet.up()
        rc = fleet.run("playbooks/deploy.yml", vllm_server_speculation=False)[0]
        if rc:
            raise SystemExit("the baseline deploy failed; logs in %s" % fleet.workdir)
        out = {}
        for name, run_id in (("rollout", "cost-first"), ("rerun", "cost-second")):
            rc, cpu, counts, log = run(fleet, repo, "playbooks/rollout.yml",
                                       os.path.join(fleet.workdir, name + ".json"), rollout_run_id=run_id)
            rows = fleet.report_rows(run_id)
            out[name] = {"rc": rc, "cpu_s": cpu, "log": log,
                         "hosts": dict((h, {"tasks": tasks(counts.get(h, {})), "skipped": counts.get(h, {}).get("skipped", 0),
                                            "included": counts.get(h, {}).get("included", 0),
                                            "status": rows.get(h, {}).get("status")}) for h in fleet.hosts),
                         "controller_tasks": tasks(counts.get("localhost", {}))}
        return out
    finally:
        if not keep:
            fleet.down()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=REPO, help="checkout whose playbooks run (default: this one)")
    parser.add_argument("--keep", action="store_true", help="leave the containers running")
    parser.add_argument("--json", help="also write the numbers here")
    parser.add_argument("--hosts", help="comma-separated demo boards to bring up (default: all)")
    parser.add_argument("--time-scale", type=float, help="the stand-in's time_scale for every board (the demo's is 0.1)")
    parser.add_argument("--hostvars", type=json.loads, default={},
                        help='JSON merged over the demo\'s host variables, e.g. \'{"rollout_bench_num_prompts": 30}\'')
    args = parser.parse_args()
    only = args.hosts.split(",") if args.hosts else None
    result = measure(os.path.abspath(args.repo), args.keep, only, args.time_scale, args.hostvars)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)
    hosts = len(only) if only else len(DEMO["boards"])
    for name, run_ in sorted(result.items()):
        print("\n%s (rc %d): controller CPU %.1f s, %.2f s per host; controller-only tasks %d"
              % (name, run_["rc"], run_["cpu_s"], run_["cpu_s"] / hosts, run_["controller_tasks"]))
        print("| host | kind | status | tasks | of which skipped | task files included |")
        print("|---|---|---|---|---|---|")
        for host, row in sorted(run_["hosts"].items()):
            print("| %s | %s | %s | %d | %d | %d |" % (
                host, ROLES.get(host, "?"), row["status"], row["tasks"], row["skipped"], row["included"]))


if __name__ == "__main__":
    main()
