# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Fault: the Docker daemon is down on a host that serves vLLM in a container (issue 18).

Real parts: the real Docker CLI, pointed (DOCKER_HOST) at a socket no daemon listens on, answers
`docker info` with its own "Cannot connect to the Docker daemon" and a non-zero exit. jetson_facts
reports runtime.docker_daemon "not running" and quotes the error; the launch plan built from those
facts refuses the container runtime, for the baseline as well, before anything on the host changes.
"""
import os
import shutil
import subprocess

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.rules import plan_launch
from ansible_collections.jetson.specdec.plugins.modules import jetson_facts
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "boards", "thor-t5000-devkit-r39.2", "root")
DOCKER = shutil.which("docker")
pytestmark = pytest.mark.skipif(DOCKER is None, reason="needs the Docker CLI (make testbed installs it)")


def board_with_docker(tmp_path):
    """The Thor fixture tree with the host's real docker CLI in it (probe_under_root runs only what is inside)."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURE, str(root))
    (root / "usr" / "bin").mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.realpath(DOCKER), str(root / "usr" / "bin" / "docker"))
    return str(root)


def facts_of(root):
    failed, result = run_module(jetson_facts.main, {"root": root, "probe_under_root": True, "probe_timeout": 20})
    assert not failed, result
    return result["ansible_facts"]["jetson"]


def container_plan(facts, speculation):
    runtime = facts["runtime"]
    return plan_launch(dict(
        family=facts["family"], l4t_major=facts["l4t"]["major"], l4t_minor=facts["l4t"]["minor"],
        installed_vllm_version="", vllm_version="", runtime="container", image="vllm/vllm-openai:v0.20.1",
        container_runtime="nvidia", nvidia_runtime_present=True, docker_daemon=runtime["docker_daemon"],
        model="Qwen/Qwen3-8B", speculation=speculation, force=False, method="auto", spec_model="", k=None,
        draft_tensor_parallel_size=1, spec_extra={}, expected_concurrency=1, max_spec_concurrency=2,
        gpu_memory_utilization=0.80, gpu_memory_utilization_max=0.90, utilization_drop=0.05,
        catalog={"Qwen/Qwen3-8B": {"family": "qwen3", "weight_bytes": 16381470720, "vocab_size": 151936,
                                   "eagle3_heads": [], "draft_models": [{"model": "Qwen/Qwen3-0.6B",
                                                                         "weight_bytes": 1192099840,
                                                                         "vocab_size": 151936}]}}))


def test_a_stopped_daemon_is_reported_and_the_container_launch_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix://%s" % (tmp_path / "no-daemon.sock"))
    facts = facts_of(board_with_docker(tmp_path))
    assert facts["runtime"]["docker_daemon"] == "not running", facts["runtime"]
    assert "docker" in facts["probes_run"]
    assert any("`docker info` exited with" in w and "Cannot connect to the Docker daemon" in w
               for w in facts["warnings"]), facts["warnings"]
    for speculation in (False, True):
        plan = container_plan(facts, speculation)
        assert [r["rule"] for r in plan["refusals"]] == ["runtime.docker_not_running"], plan["refusals"]


def test_a_daemon_that_answers_is_running(tmp_path):
    if subprocess.run([DOCKER, "info"], capture_output=True, check=False).returncode:
        pytest.skip("no Docker daemon answers on this machine")
    facts = facts_of(board_with_docker(tmp_path))
    assert facts["runtime"]["docker_daemon"] == "running"
    assert "runtime.docker_not_running" not in [r["rule"] for r in container_plan(facts, False)["refusals"]]
