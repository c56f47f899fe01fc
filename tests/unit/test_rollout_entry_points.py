# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The rollout role's entry points (issue 32): playbooks/rollout.yml's batches run `host` (the part after the check,
which the check play already ran); `main` is the check followed by the same `host`, for a playbook that calls the
role itself. The fleet tests run the playbook, so `main`'s wiring is read here; both entry points are validated
against the same options."""
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load(*path):
    with open(os.path.join(ROOT, *path)) as handle:
        return yaml.safe_load(handle)


def test_main_is_the_check_then_host():
    check, host = load("roles", "rollout", "tasks", "main.yml")
    assert check["ansible.builtin.include_tasks"] == "check.yml"
    # checked once per run: the playbook's check play sets rollout_checked_run, a direct call has not
    assert check["when"] == "rollout_checked_run | default('') != rollout_run_id"
    assert host["ansible.builtin.import_tasks"] == "host.yml"


def test_the_playbooks_batches_run_host_and_the_check_play_runs_check():
    plays = load("playbooks", "rollout.yml")
    roles = [(task.get("ansible.builtin.include_role") or {}) for play in plays for task in play.get("tasks", [])]
    entries = [(r.get("name"), r.get("tasks_from")) for r in roles if r.get("name") == "jetson.specdec.rollout"]
    # without the extension: the name of the argument spec Ansible validates the call against
    assert ("jetson.specdec.rollout", "host") in entries
    assert ("jetson.specdec.rollout", "check.yml") in entries
    assert ("jetson.specdec.rollout", None) not in entries  # main would check every queued host a second time


def test_host_takes_the_same_options_as_main():
    specs = load("roles", "rollout", "meta", "argument_specs.yml")["argument_specs"]
    assert specs["host"]["options"] == specs["main"]["options"]
    assert len(specs["main"]["options"]) > 50
