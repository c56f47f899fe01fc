# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Every fixture tree under tests/fixtures/boards must yield its expected.json."""
import errno
import json
import os
import shutil

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import files as jetson_files
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.detect import gather

BOARDS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "boards"))
NAMES = sorted(name for name in os.listdir(BOARDS) if os.path.isfile(os.path.join(BOARDS, name, "expected.json")))
CONTRACT_KEYS = {
    "is_jetson", "family", "variant", "variant_source", "super", "model", "compatible", "module_part", "soc",
    "cuda_arch", "memory_bandwidth_gbps", "memory_total_bytes", "memory_available_bytes", "l4t", "jetpack",
    "cuda_version", "power_mode", "maxn", "os", "kernel", "runtime", "warnings",
}


def lookup(facts, dotted):
    value = facts
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def load(name):
    with open(os.path.join(BOARDS, name, "expected.json")) as handle:
        return json.load(handle)


def test_fixture_set_covers_the_issue():
    families = set(load(name)["expect"]["family"] for name in NAMES)
    assert {"thor", "agx_orin", "orin_nx", "orin_nano", "agx_xavier", "unknown"} <= families
    assert len(NAMES) >= 14


@pytest.mark.parametrize("name", NAMES)
def test_fixture_matches_expected(name):
    expected = load(name)
    facts = gather(os.path.join(BOARDS, name, "root"))
    assert CONTRACT_KEYS <= set(facts)
    for key, want in expected["expect"].items():
        assert lookup(facts, key) == want, "%s: %s" % (name, key)
    for fragment in expected["warnings_match"]:
        assert any(fragment in warning for warning in facts["warnings"]), (fragment, facts["warnings"])
    assert all(isinstance(w, str) and w.endswith((".", ")")) for w in facts["warnings"])
    if facts["l4t"] is not None:
        assert isinstance(facts["l4t"]["major"], int)
    if facts["jetpack"] is not None:
        assert all(piece.isdigit() for piece in facts["jetpack"].split("."))


@pytest.fixture
def orin_copy(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(os.path.join(BOARDS, "agx-orin-64gb-devkit-r36.4.4", "root"), str(root))
    return root


def test_unreadable_file_is_a_warning_not_a_traceback(orin_copy, monkeypatch):
    real_open = open

    def deny(path, *args, **kwargs):
        if str(path).endswith("nv_tegra_release"):
            raise IOError(errno.EACCES, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(jetson_files, "open", deny, raising=False)
    facts = gather(str(orin_copy))
    assert facts["l4t"] is None and facts["jetpack"] is None
    assert facts["family"] == "agx_orin"
    assert any("permission denied" in w for w in facts["warnings"])


def test_devicetree_falls_back_to_sys_firmware(orin_copy):
    src = orin_copy / "proc" / "device-tree"
    dst = orin_copy / "sys" / "firmware" / "devicetree" / "base"
    dst.parent.mkdir(parents=True)
    shutil.move(str(src), str(dst))
    facts = gather(str(orin_copy))
    assert (facts["family"], facts["variant"]) == ("agx_orin", "agx_orin_64gb")


def test_symlink_out_of_root_is_not_followed(orin_copy, tmp_path):
    outside = tmp_path / "outside_model"
    outside.write_bytes(b"NVIDIA Jetson AGX Thor Developer Kit\x00")
    model = orin_copy / "proc" / "device-tree" / "model"
    model.unlink()
    model.symlink_to(outside)
    facts = gather(str(orin_copy))
    assert facts["model"] is None and facts["family"] == "agx_orin"
    assert any("outside the root" in w for w in facts["warnings"])


def test_empty_root_is_not_a_jetson(tmp_path):
    facts = gather(str(tmp_path))
    assert facts["is_jetson"] is False and facts["family"] == "unknown"
    assert facts["memory_total_bytes"] is None


def fake_runner(table):
    calls = []

    def run(name, args):
        calls.append(name)
        return table.get(name)
    run.calls = calls
    return run


def test_probes_feed_power_mode_runtime_and_vllm(orin_copy):
    runner = fake_runner({
        "nvpmodel": (0, "NV Power Mode: 30W\n2\n", ""),
        "docker": (0, "Server:\n Runtimes: io.containerd.runc.v2 nvidia runc\n", ""),
        "vllm": (0, "0.20.1\n", ""),
    })
    facts = gather(str(orin_copy), runner)
    assert facts["power_mode"] == {"name": "30W", "id": 2} and facts["maxn"] is False
    assert facts["runtime"]["docker"] is True and facts["runtime"]["nvidia_runtime"] is True
    assert facts["runtime"]["vllm_version"] == "0.20.1"
    assert "nvidia-smi" not in runner.calls  # Orin's nvidia-smi is a stub: never asked
    assert any("not MAXN" in w for w in facts["warnings"])


def test_failing_probe_is_a_warning_and_files_still_answer(orin_copy):
    runner = fake_runner({"nvpmodel": (124, "", ""), "docker": (1, "", "Cannot connect to the Docker daemon")})
    facts = gather(str(orin_copy), runner)
    assert facts["power_mode"] == {"name": "MAXN", "id": 0}  # from nvpmodel's own status file
    assert any("timed out" in w for w in facts["warnings"])
    assert any("Cannot connect" in w for w in facts["warnings"])
    assert facts["runtime"]["nvidia_runtime"] is True  # daemon.json in the tree


@pytest.mark.parametrize("docker,state", [
    ((0, "Server:\n Runtimes: nvidia runc\n", ""), "running"),
    ((1, "Client: Docker Engine\n",
      "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"),
     "not running"),
    ((124, "", ""), "not running"),  # a hung daemon: `docker info` timed out
    (None, "absent"),  # no docker CLI
])
def test_the_docker_daemon_state_is_reported(orin_copy, docker, state):
    table = {"nvpmodel": (0, "NV Power Mode: MAXN\n0\n", "")}
    if docker is not None:
        table["docker"] = docker
    facts = gather(str(orin_copy), fake_runner(table))
    assert facts["runtime"]["docker_daemon"] == state
    assert gather(str(orin_copy))["runtime"]["docker_daemon"] is None  # no probes: unknown, not absent


def test_missing_optional_commands_are_quiet(orin_copy):
    facts = gather(str(orin_copy), fake_runner({"nvpmodel": (0, "NV Power Mode: MAXN\n0\n", "")}))
    assert not any("docker" in w or "vllm" in w for w in facts["warnings"])


def test_thor_without_boot_control_asks_nvidia_smi(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(os.path.join(BOARDS, "thor-t4000-r38.4", "root"), str(root))
    (root / "etc" / "nv_boot_control.conf").unlink()
    (root / "proc" / "device-tree" / "compatible").write_bytes(b"nvidia,tegra264\x00")
    runner = fake_runner({"nvidia-smi": (0, "NVIDIA Jetson T4000\n", "")})
    facts = gather(str(root), runner)
    assert (facts["variant"], facts["variant_source"]) == ("thor_t4000", "nvidia_smi")


def test_dpkg_query_probe_is_last_l4t_fallback(orin_copy):
    (orin_copy / "etc" / "nv_tegra_release").unlink()
    runner = fake_runner({"dpkg-query": (0, "36.4.7-20250918154033", "")})
    facts = gather(str(orin_copy), runner)
    assert facts["l4t"]["release"] == "36.4.7" and facts["l4t"]["source"] == "dpkg"
    assert facts["jetpack"] == "6.2.1"
