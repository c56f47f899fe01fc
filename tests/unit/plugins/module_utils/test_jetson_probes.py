# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import probes as pr


@pytest.mark.parametrize("output, expected", [
    ("NV Power Mode: MAXN\n0\n", {"name": "MAXN", "id": 0}),
    ("NVPM WARN: fan mode is not set!\nNV Power Mode: MAXN_SUPER\n2\n", {"name": "MAXN_SUPER", "id": 2}),
    ("NV Power Mode[1]: 120W\n", {"name": "120W", "id": 1}),
    ("NV Power Mode: 15W\n", {"name": "15W", "id": None}),
])
def test_nvpmodel_query(output, expected):
    assert pr.parse_nvpmodel_query(output) == expected


def test_nvpmodel_query_garbage():
    assert pr.parse_nvpmodel_query("NVPM ERROR: failed") is None
    assert pr.parse_nvpmodel_query(None) is None


def test_power_mode_from_state_files():
    conf = "< POWER_MODEL ID=0 NAME=15W >\nCPU_ONLINE CORE_0 1\n< POWER_MODEL ID=2 NAME=MAXN_SUPER >\n< PM_CONFIG DEFAULT=0 >\n"
    assert pr.power_mode_from_files("pmode:0002\n", conf) == {"name": "MAXN_SUPER", "id": 2}
    assert pr.power_mode_from_files("pmode:0007\n", conf) is None
    assert pr.power_mode_from_files(None, conf) is None


def test_maxn():
    assert pr.is_maxn("MAXN") and pr.is_maxn("MAXN_SUPER")
    assert not pr.is_maxn("120W") and not pr.is_maxn("MAXNX") and not pr.is_maxn(None)


def test_nvidia_smi_orin_stub_is_ignored():
    assert pr.parse_nvidia_smi_name("NVIDIA Thor\n") == "NVIDIA Thor"
    assert pr.parse_nvidia_smi_name("Orin (nvgpu)\n") is None
    assert pr.parse_nvidia_smi_name("") is None


def test_docker_info_and_images():
    info = "Server:\n Runtimes: io.containerd.runc.v2 nvidia runc\n Default Runtime: runc\n"
    assert pr.parse_docker_info(info) == (["io.containerd.runc.v2", "nvidia", "runc"], "runc")
    images = "vllm/vllm-openai:latest\nubuntu:24.04\nghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin\n"
    assert pr.parse_docker_images(images) == ["vllm/vllm-openai:latest", "ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin"]


def test_vllm_version_last_line():
    assert pr.parse_vllm_version("INFO 01-01 some log\n0.20.1\n") == "0.20.1"
    assert pr.parse_vllm_version("Traceback (most recent call last):\n") is None


def test_daemon_json_nvidia():
    assert pr.docker_daemon_has_nvidia('{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}')
    assert not pr.docker_daemon_has_nvidia('{"runtimes": {}}')
    assert not pr.docker_daemon_has_nvidia("not json")


def test_image_labels():
    assert pr.parse_image_labels('{"maintainer": "vllm", "l4t": "r36.4"}\n') == {"maintainer": "vllm", "l4t": "r36.4"}
    assert pr.parse_image_labels("null\n") == {}
    assert pr.parse_image_labels("Error: No such image") is None


def test_runtime_version_probes():
    cmds = pr.runtime_version_probes("/opt/vllm/bin/vllm", "vllm/vllm-openai:latest")
    assert [what for what, dummy in cmds] == ["native", "image_labels", "image_version"]
    assert cmds[0][1] == ["/opt/vllm/bin/vllm", "--version"]
    assert cmds[2][1][-1] == pr.IMAGE_VERSION_SCRIPT and "--network" in cmds[2][1]
    assert pr.runtime_version_probes() == []
