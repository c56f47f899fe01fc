"""Helpers of tests/ee/run_ee.sh (the AWX path: an execution environment built with
ansible-builder, the rollout run in it with ansible-runner).

  ee_tools.py definition OUT.yml BASE_TAG COLLECTIONS_DIR   the repository's execution-environment.yml
                                                            for the test bed's Debian base
  ee_tools.py fleet OUT.json                                a small simulated fleet from the demo's boards
  ee_tools.py private-data DIR INVENTORY_DIR IDENT          ansible-runner's private data directory
  ee_tools.py events ARTIFACT_DIR REPORT_DIR HOST...        each host's result from the job events, checked
                                                            against the fleet report in the artifacts
"""
import glob
import json
import os
import shutil
import sys

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# pip settings passed to the image build as build arguments (never written into the repo).
PIP_BUILD_ARGS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT",
                  "PIP_RETRIES", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
FLEET_BOARDS = ("thor-01", "agx-02", "nx-01")   # keep, kept with the batch-size schedule (third arm), off by policy


def definition(out, base_tag, collections_dir):
    """The repository's EE definition with what a Debian base needs; everything else unchanged."""
    with open(os.path.join(REPO, "execution-environment.yml")) as handle:
        ee = yaml.safe_load(handle)
    ee["images"]["base_image"]["name"] = base_tag
    options = ee.setdefault("options", {})
    # ansible-builder's scripts call dnf/microdnf; Debian's python3 lacks ensurepip (the base has pip).
    options["package_manager_path"] = "/usr/local/bin/ee-pkgmgr"
    options["skip_pip_install"] = True
    for entry in ee.get("additional_build_files", []):
        if entry["src"] == "build/ee":
            entry["src"] = collections_dir
    # Build arguments reach RUN steps only where a stage declares them; ARGs are not kept in the image.
    steps = ee.setdefault("additional_build_steps", {})
    declare = ["ARG %s" % name for name in PIP_BUILD_ARGS]
    for stage in ("prepend_base", "prepend_builder", "prepend_final"):
        steps[stage] = declare + list(steps.get(stage, []))
    with open(out, "w") as handle:
        yaml.safe_dump(ee, handle, sort_keys=False)
    print(" ".join("--build-arg=%s=%s" % (n, os.environ[n]) for n in PIP_BUILD_ARGS if os.environ.get(n)))


def fleet(out):
    with open(os.path.join(REPO, "tests", "demo", "fleet.json")) as handle:
        demo = json.load(handle)
    demo["prefix"] = "specdec-ee-"
    demo["boards"] = [b for b in demo["boards"] if b["name"] in FLEET_BOARDS]
    with open(out, "w") as handle:
        json.dump(demo, handle, indent=2)


def private_data(pdd, inventory_dir, ident):
    """inventory (group_vars copied, not linked: the container sees only this directory), project, env."""
    shutil.copytree(inventory_dir, os.path.join(pdd, "inventory"), symlinks=False)
    os.makedirs(os.path.join(pdd, "project"), exist_ok=True)
    with open(os.path.join(pdd, "project", "rollout.yml"), "w") as handle:
        handle.write("---\n- name: The collection's rollout, as an AWX job template would run it\n"
                     "  ansible.builtin.import_playbook: jetson.specdec.rollout\n")
    os.makedirs(os.path.join(pdd, "env"), exist_ok=True)
    with open(os.path.join(pdd, "env", "extravars"), "w") as handle:
        json.dump({"rollout_report_dir": "/runner/artifacts/%s/reports" % ident}, handle)
    with open(os.path.join(pdd, "env", "envvars"), "w") as handle:
        json.dump({"ANSIBLE_CALLBACKS_ENABLED": "jetson.specdec.specdec_summary", "ANSIBLE_PIPELINING": "true",
                   "ANSIBLE_FORKS": "16"}, handle)


def events(artifact_dir, report_root, hosts):
    """Print each host's tasks by outcome and its last failure; the fleet report; exit 1 when one is missing."""
    per_host, stats = {}, None
    for path in sorted(glob.glob(os.path.join(artifact_dir, "job_events", "*.json")),
                       key=lambda p: int(os.path.basename(p).split("-")[0])):
        with open(path) as handle:
            event = json.load(handle)
        name, data = event.get("event", ""), event.get("event_data", {})
        if name == "playbook_on_stats":
            stats = data
        host = data.get("host")
        if host and name.startswith("runner_on_"):
            outcome = name[len("runner_on_"):]
            entry = per_host.setdefault(host, {})
            entry[outcome] = entry.get(outcome, 0) + 1
            # The host's outcome as the rollout wrote it into its state file (rollout_state module).
            state = ((data.get("res") or {}).get("rollout_state") or {}) if outcome == "ok" else {}
            if isinstance(state, dict) and state.get("status"):
                entry["state"] = state["status"]
            if outcome in ("failed", "unreachable") and not data.get("ignore_errors"):
                entry["last_failure"] = "%s: %s" % (data.get("task"), (data.get("res") or {}).get("msg"))
    problems = []
    for host in hosts:
        entry = per_host.get(host)
        print("event  %-10s %s" % (host, json.dumps(entry, sort_keys=True)))
        if not entry:
            problems.append("no job event for %s" % host)
    print("stats  %s" % json.dumps({k: stats.get(k) for k in ("ok", "changed", "failures", "dark", "skipped")}
                                   if stats else None, sort_keys=True))
    reports = sorted(glob.glob(os.path.join(report_root, "*", "report.json")))
    if not reports:
        problems.append("no report.json under %s" % report_root)
    else:
        with open(reports[-1]) as handle:
            report = json.load(handle)
        print("report %s" % os.path.relpath(reports[-1], artifact_dir))
        for entry in report.get("hosts", []):
            row = entry.get("row", {})
            print("report %-10s status=%s decision=%s" % (row.get("host"), row.get("status"), row.get("decision")))
        statuses = dict((e.get("row", {}).get("host"), e.get("row", {}).get("status")) for e in report.get("hosts", []))
        for host in hosts:
            if host not in statuses:
                problems.append("%s is missing from the report" % host)
            elif (per_host.get(host) or {}).get("state") != statuses[host]:
                problems.append("%s: the events say %r, the report %r"
                                % (host, (per_host.get(host) or {}).get("state"), statuses[host]))
    for problem in problems:
        print("PROBLEM %s" % problem)
    return 1 if problems else 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "definition" and len(argv) == 5:
        return definition(*argv[2:]) or 0
    if len(argv) == 3 and argv[1] == "fleet":
        return fleet(argv[2]) or 0
    if len(argv) == 5 and argv[1] == "private-data":
        return private_data(*argv[2:]) or 0
    if len(argv) >= 4 and argv[1] == "events":
        return events(argv[2], argv[3], argv[4:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
