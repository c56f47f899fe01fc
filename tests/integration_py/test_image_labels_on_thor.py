# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""An Orin image whose tag names no L4T is told by its labels, read on the host (issue 33 item 2).

Real parts: the Docker engine of the test bed and jetson_facts' image probes (`docker image
inspect`, the `docker run --rm --network none` version read). The image is a test-bed image with
one label added (`l4t: r36.4.0`, as the NVIDIA-AI-IOT builds carry it), tagged like the Jetson
build's moving tag; a Thor's files are the facts root. The plan from those facts refuses it.
"""
import shutil
import subprocess
import uuid

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.rules import plan_launch
from ansible_collections.jetson.specdec.plugins.modules import jetson_facts
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.test_jetson_facts import root_of
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

DOCKER = shutil.which("docker")


def _daemon_answers():
    return DOCKER is not None and subprocess.run([DOCKER, "info"], capture_output=True, check=False).returncode == 0


pytestmark = pytest.mark.skipif(not _daemon_answers(), reason="needs a running Docker engine (make testbed)")


@pytest.fixture(scope="module")
def labelled_image():
    out = subprocess.run([DOCKER, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True,
                         text=True, check=True).stdout.split()
    bases = [i for i in out if i.startswith("jetson-specdec/") and not i.endswith(":<none>")]
    if not bases:
        pytest.skip("no test-bed image on this machine (make testbed builds them)")
    tag = "specdec-test.invalid/nvidia-ai-iot/vllm:latest-%s" % uuid.uuid4().hex[:8]
    subprocess.run([DOCKER, "build", "-q", "-t", tag, "--label", "l4t=r36.4.0", "-"], input="FROM %s\n" % bases[0],
                   text=True, capture_output=True, check=True, timeout=300)
    yield tag
    subprocess.run([DOCKER, "image", "rm", "-f", tag], capture_output=True, check=False, timeout=120)


def test_a_jetson_image_labelled_r36_is_refused_on_thor(labelled_image):
    # the facts as jetson_facts reads them on a Thor with the image on the host (root "/" would be this
    # machine: the Thor fixture's files stand in, and the image probes go to the real Docker engine)
    real_gather = jetson_facts.gather
    from unittest import mock
    with mock.patch.object(jetson_facts, "gather",
                           lambda root, runner: real_gather(root_of("thor-t5000-devkit-r39.2"), runner)):
        args = {"root": "/", "vllm_image": labelled_image, "vllm_probe_timeout": 120}
        failed, result = run_module(jetson_facts.main, args)
    assert not failed, result
    facts = result["ansible_facts"]["jetson"]
    image = facts["runtime"]["image"]
    assert image["present"] is True and image["labels"].get("l4t") == "r36.4.0", image
    assert facts["family"] == "thor"
    plan = plan_launch({
        "family": "thor", "l4t_major": 39, "l4t_minor": 2, "runtime": "container", "image": labelled_image,
        "image_facts": image, "vllm_version": "0.20.1", "model": "meta-llama/Llama-3.1-8B-Instruct",
        "speculation": False, "gpu_memory_utilization": 0.8, "gpu_memory_utilization_max": 0.9,
        "container_runtime": "", "docker_daemon": "running"})
    rules = [r["rule"] for r in plan["refusals"]]
    assert rules == ["runtime.orin_image_on_thor"], plan["refusals"]
    assert "l4t=r36.4.0" in plan["refusals"][0]["message"]
    # the same image without the label says nothing: not called an Orin build from its tag alone
    assert "runtime.orin_image_on_thor" not in [r["rule"] for r in plan_launch(dict(
        {"family": "thor", "runtime": "container", "image": labelled_image, "speculation": False,
         "gpu_memory_utilization": 0.8, "gpu_memory_utilization_max": 0.9},
        image_facts=dict(image, labels={})))["refusals"]]
