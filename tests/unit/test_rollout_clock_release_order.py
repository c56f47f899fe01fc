# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""When the rollout puts the clocks back (issue 34 item 9), read from the role's tasks.

A release after the unlock can undo a second run's hold in the middle of its benchmark, and a failed unlock
skipped it; a hold record left by an interrupted run was never released on a host that needed no rollout. The
decision is in YAML (host.yml's always section, check.yml's pass over converged hosts, revert.yml): these tests
read it there, so a reordering or a lost condition fails here in a second instead of in a 4-minute fleet test.
"""
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RELEASE, LOCK = "jetson.specdec.jetson_clock_hold", "jetson.specdec.rollout_state"


def load(*path):
    with open(os.path.join(ROOT, *path)) as handle:
        return yaml.safe_load(handle)


def actions(tasks):
    """[(module, its args, when)] of a task list, blocks flattened in order."""
    out = []
    for task in tasks or []:
        if "block" in task:
            out += actions(task["block"]) + actions(task.get("rescue")) + actions(task.get("always"))
            continue
        module = next((k for k in task if k.startswith(("jetson.", "ansible."))), None)
        when = task.get("when")
        args = task.get(module) or {}
        if not isinstance(args, dict):  # a free-form argument (ansible.builtin.meta: end_host)
            args = {"_raw": args}
        out.append((module, args, " and ".join(when) if isinstance(when, list) else str(when or "")))
    return out


def rollout_block():
    return [t for t in load("roles", "rollout", "tasks", "host.yml") if "block" in t][0]


def test_the_rollout_releases_clocks_before_its_lock_in_always():
    steps = actions(rollout_block()["always"])
    kinds = [(m, a.get("state")) for m, a, w in steps]
    # then only the operator's after_host hook (the host is unlocked and serves its final config)
    assert kinds == [(RELEASE, "released"), (LOCK, "unlock"), ("ansible.builtin.include_tasks", None)], kinds
    release_when = steps[0][2]
    # not gated on the unlock's result, nor on this run's own hold only: a record left on the host is released too
    assert "unlock" not in release_when
    assert "rollout_lock.clock_hold" in release_when and "rollout_bench_hold_clocks" in release_when
    # a run that lost its lock releases neither: the clocks and the lock are the new holder's
    assert "rollout_lock_lost" in release_when and "rollout_lock_lost" in steps[1][2]


def test_a_converged_host_with_a_hold_record_is_released_under_the_lock():
    check = load("roles", "rollout", "tasks", "check.yml")[0]["block"]
    include = [t for t in check if "clock_hold" in str(t.get("when"))
               and "release_clocks.yml" in str((t.get("ansible.builtin.include_tasks") or {}).get("file"))]
    assert len(include) == 1, "check.yml lost the release of a hold left on a converged host"
    # a real run releases (release_clocks.yml) only on a converged host; check mode only previews (clock_preview.yml)
    assert include[0]["ansible.builtin.include_tasks"]["file"] == (
        "{{ 'clock_preview.yml' if ansible_check_mode else 'release_clocks.yml' }}")
    real = include[0]["when"].split("or (not ansible_check_mode")[1]
    assert "not rollout_stored.needs_rollout" in real and "clock_hold" in real
    assert "jetson.specdec.jetson_clock_hold" in load("roles", "rollout", "tasks", "clock_preview.yml")[0]
    block = load("roles", "rollout", "tasks", "release_clocks.yml")[0]
    kinds = [(m, a.get("state")) for m, a, w in actions(block["block"]) + actions(block["always"])]
    assert kinds == [(LOCK, "lock"), (RELEASE, "released"), (LOCK, "unlock")], kinds


def test_revert_releases_a_hold_before_its_unlock():
    # playbooks/revert.yml runs the rollout role's revert entry point
    play = load("playbooks", "revert.yml")[0]["tasks"]
    assert any((t.get("ansible.builtin.include_role") or {}).get("tasks_from") == "revert" for t in play), play
    tasks = load("roles", "rollout", "tasks", "revert.yml")
    steps = [(m, a.get("state"), w) for m, a, w in actions(tasks)]
    release = [i for i, s in enumerate(steps) if s[0] == RELEASE]
    unlock = [i for i, s in enumerate(steps) if s[:2] == (LOCK, "unlock")]
    assert release and unlock and release[0] < unlock[0]
    assert "rollout_revert_lock.clock_hold" in steps[release[0]][2]
