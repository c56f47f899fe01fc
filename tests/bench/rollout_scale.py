#!/usr/bin/env python3
"""Rollout wall time for 1, 4 and 8 simulated hosts, and the converged re-run.

Every host is the same board (the demo's thor-01: a keep, so each host does the
full work: baseline benchmark, candidate start, candidate benchmark, verdict).
The rollout runs with -e '{"rollout_serial": ["100%"]}' so the numbers measure the
parallel part; the default canary batches ([1, "25%", "100%"]) add about one
host's time per extra batch. Then the same playbook again on the converged fleet.

    .venv/bin/python tests/bench/rollout_scale.py [--sizes 1,4,8] [--keep]

Needs dockerd and the test-bed board image; containers are named specdec-sc-*
and removed at the end. Prints a table (markdown).
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rollout"))

from harness import Fleet, board, recap  # noqa: E402


def measure(size, keep=False):
    boards = [board("sc-%02d" % i, "thor-01") for i in range(1, size + 1)]
    fleet = Fleet("specdec-sc-", boards, workdir=tempfile.mkdtemp(prefix="specdec-scale-%d-" % size))
    try:
        fleet.up()
        rc, out, first = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="first")
        if rc != 0:
            raise SystemExit("rollout of %d host(s) failed (rc %d); log in %s" % (size, rc, fleet.workdir))
        statuses = sorted(set(fleet.state(h)["status"] for h in fleet.hosts))
        rc, out2, rerun = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="second")
        changed = sum(v["changed"] for h, v in recap(out2).items() if h != "localhost")
        rc3, _out3, canary_rerun = fleet.run("playbooks/rollout.yml", rollout_run_id="third")
        return {"hosts": size, "first_s": first, "rerun_s": rerun, "rerun_default_serial_s": canary_rerun,
                "ratio": rerun / first, "statuses": "/".join(statuses), "rerun_changed": changed}
    finally:
        if not keep:
            fleet.down()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4,8")
    parser.add_argument("--keep", action="store_true", help="leave the containers running")
    args = parser.parse_args()
    rows = [measure(int(n), args.keep) for n in args.sizes.split(",")]
    print("| hosts | rollout (serial 100%) | converged re-run | re-run / rollout | re-run, default batches | "
          "final status | re-run changed |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %d | %.0f s | %.1f s | %.1f%% | %.1f s | %s | %d |" % (
            r["hosts"], r["first_s"], r["rerun_s"], 100 * r["ratio"], r["rerun_default_serial_s"],
            r["statuses"], r["rerun_changed"]))


if __name__ == "__main__":
    main()
