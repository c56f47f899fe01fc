# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The plays that gather facts before vllm_server ask the CLI the unit runs (issue 33 item 1).

roles/rollout/tasks/check.yml, playbooks/deploy.yml and roles/rollout/tasks/revert.yml read the facts before the role's defaults
exist, so they repeat vllm_server_native_bin's default: it must be the role's, or the role's
preflight reads the facts again (and on a simulated board from another root).
"""
import os
import re

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _facts_tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _facts_tasks(item)
    elif isinstance(node, dict):
        if "jetson.specdec.jetson_facts" in node:
            yield node["jetson.specdec.jetson_facts"]
        for value in node.values():
            if isinstance(value, (list, dict)):
                yield from _facts_tasks(value)


def _load(rel):
    with open(os.path.join(REPO, rel)) as handle:
        return yaml.safe_load(handle)


def test_plays_that_gather_facts_first_ask_the_configured_cli_with_the_roles_default():
    default = _load("roles/vllm_server/defaults/main/main.yml")["vllm_server_native_bin"]
    for rel in ("roles/rollout/tasks/check.yml", "playbooks/deploy.yml", "roles/rollout/tasks/revert.yml"):
        tasks = list(_facts_tasks(_load(rel)))
        assert tasks, rel
        for args in tasks:
            expression = args.get("vllm_bin", "")
            assert "vllm_server_native_bin" in expression, (rel, args)
            assert re.search(r"default\('([^']+)'\)", expression).group(1) == default, (rel, expression)


def test_the_preflight_reads_again_facts_that_asked_another_cli():
    tasks = _load("roles/vllm_server/tasks/preflight.yml")
    gather = [t for t in tasks if "jetson.specdec.jetson_facts" in t][0]
    assert "vllm_bin" in gather["when"] and "vllm_server_native_bin" in gather["when"], gather["when"]
    # only facts that ran the host's commands are read again (a fixture root has no version to replace)
    assert "docker_daemon" in gather["when"], gather["when"]
