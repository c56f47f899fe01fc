#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Measure jetson_facts detection time per host (no probes).

Runs the detection over every fixture tree N times and prints mean and p95 in
ms per host, then one in-process run of the module's main() with
probe_commands false. The target is < 200 ms per host.

    .venv/bin/python tests/bench/facts_speed.py [--runs 50]
"""
import argparse
import json
import os
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BOARDS = os.path.join(REPO, "tests", "fixtures", "boards")
TARGET_MS = 200.0


def import_collection():
    base = tempfile.mkdtemp(prefix="specdec-bench-")
    os.makedirs(os.path.join(base, "ansible_collections", "jetson"))
    os.symlink(REPO, os.path.join(base, "ansible_collections", "jetson", "specdec"))
    sys.path.insert(0, base)


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def bench_detection(runs):
    from ansible_collections.jetson.specdec.plugins.module_utils.jetson.detect import gather
    roots = sorted(os.path.join(BOARDS, n, "root") for n in os.listdir(BOARDS)
                   if os.path.isdir(os.path.join(BOARDS, n, "root")))
    samples = []
    for dummy in range(runs):
        for root in roots:
            start = time.perf_counter()
            gather(root)
            samples.append((time.perf_counter() - start) * 1000.0)
    return len(roots), samples


def bench_module_main():
    """One full AnsibleModule round trip (argument parsing, detection, exit_json)."""
    from ansible_collections.jetson.specdec.plugins.modules import jetson_facts
    from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module
    root = os.path.join(BOARDS, "thor-t5000-devkit-r39.2", "root")
    start = time.perf_counter()
    failed, result = run_module(jetson_facts.main, {"root": root, "probe_commands": False})
    elapsed = (time.perf_counter() - start) * 1000.0
    return failed, result["ansible_facts"]["jetson"]["family"] if not failed else None, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    import_collection()
    hosts, samples = bench_detection(args.runs)
    mean = sum(samples) / len(samples)
    p95 = percentile(samples, 0.95)
    failed, family, main_ms = bench_module_main()
    report = {
        "fixtures": hosts,
        "runs": args.runs,
        "detection_ms_per_host_mean": round(mean, 3),
        "detection_ms_per_host_p95": round(p95, 3),
        "detection_ms_per_host_max": round(max(samples), 3),
        "module_main_ms": round(main_ms, 3),
        "module_main_family": family,
        "target_ms": TARGET_MS,
        "within_target": (not failed) and p95 < TARGET_MS and main_ms < TARGET_MS,
    }
    print(json.dumps(report, indent=2))
    return 0 if report["within_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
