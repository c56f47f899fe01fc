# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import os
from unittest import mock

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.modules import jetson_facts
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

BOARDS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "boards"))


def root_of(name):
    return os.path.join(BOARDS, name, "root")


def test_fixture_root_runs_no_command_by_default():
    with mock.patch.object(AnsibleModule, "run_command") as run_command:
        failed, result = run_module(jetson_facts.main, {"root": root_of("thor-t5000-devkit-r39.2")})
    assert not failed and result["changed"] is False
    run_command.assert_not_called()
    facts = result["ansible_facts"]["jetson"]
    assert (facts["family"], facts["variant"], facts["jetpack"]) == ("thor", "thor_t5000", "7.2")
    assert facts["probes_run"] == []


def test_check_mode_returns_same_facts():
    args = {"root": root_of("orin-nano-8gb-devkit-r35.3.1")}
    dummy, normal = run_module(jetson_facts.main, args)
    dummy, checked = run_module(jetson_facts.main, dict(args, _ansible_check_mode=True))
    assert checked["ansible_facts"] == normal["ansible_facts"]
    assert normal["ansible_facts"]["jetson"]["model"] == "NVIDIA Orin Nano Developer Kit"


def test_probe_under_root_uses_only_executables_inside_root(tmp_path):
    import shutil
    root = tmp_path / "root"
    shutil.copytree(root_of("agx-orin-64gb-devkit-r36.4.4"), str(root))
    sbin = root / "usr" / "sbin"
    sbin.mkdir(parents=True)
    stub = sbin / "nvpmodel"
    stub.write_text("#!/bin/sh\necho 'NV Power Mode: 50W'\necho 3\n")
    stub.chmod(0o755)
    calls = []

    def fake_run(self, args, **kwargs):
        calls.append(list(args))
        assert kwargs.get("environ_update", {}).get("LC_ALL") == "C"
        return 0, "NV Power Mode: 50W\n3\n", ""

    with mock.patch.object(AnsibleModule, "run_command", fake_run):
        failed, result = run_module(jetson_facts.main, {"root": str(root), "probe_under_root": True})
    assert not failed
    assert any(str(stub) in call for call in calls)
    assert all(not (c.startswith("/usr/") and c.endswith(("nvpmodel", "docker", "vllm"))) for call in calls for c in call)
    facts = result["ansible_facts"]["jetson"]
    assert facts["power_mode"] == {"name": "50W", "id": 3}
    assert facts["probes_run"] == ["nvpmodel"]


def test_host_root_probes_with_timeout_and_missing_commands_warn(tmp_path):
    # Pretend "/" is the board: file reads go to a fixture, commands are simulated.
    found = {"timeout": "/usr/bin/timeout", "nvpmodel": "/usr/sbin/nvpmodel"}
    seen = []

    def fake_bin(self, name, required=False, opt_dirs=None):
        return found.get(name)

    def fake_run(self, args, **kwargs):
        seen.append(list(args))
        return 1, "", "NVPM ERROR: failed to read PARAM"

    real_gather = jetson_facts.gather
    with mock.patch.object(AnsibleModule, "get_bin_path", fake_bin), \
            mock.patch.object(AnsibleModule, "run_command", fake_run), \
            mock.patch.object(jetson_facts, "gather",
                              lambda root, runner: real_gather(root_of("orin-nx-16gb-r36.4.3"), runner)):
        failed, result = run_module(jetson_facts.main, {"root": "/"})
    assert not failed
    assert seen and seen[0][:3] == ["/usr/bin/timeout", "5", "/usr/sbin/nvpmodel"]
    warnings = result["ansible_facts"]["jetson"]["warnings"]
    assert any("NVPM ERROR" in w for w in warnings)
    assert result["ansible_facts"]["jetson"]["family"] == "orin_nx"


def test_bad_root_fails_cleanly(tmp_path):
    failed, result = run_module(jetson_facts.main, {"root": str(tmp_path / "nope")})
    assert failed and "not a directory" in result["msg"]


def test_broken_fixture_returns_not_fails():
    failed, result = run_module(jetson_facts.main, {"root": root_of("broken-directory-as-file")})
    assert not failed
    assert result["ansible_facts"]["jetson"]["l4t"] is None


def _fake_host(tmp_path, answers):
    """A root with a configured vLLM CLI, and run_command answering by the probed program."""
    import shutil
    root = tmp_path / "root"
    shutil.copytree(root_of("thor-t5000-devkit-r39.2"), str(root))
    cli = root / "opt" / "vllm" / "bin" / "vllm"
    cli.parent.mkdir(parents=True)
    cli.write_text("#!/bin/sh\necho 0.21.0\n")
    cli.chmod(0o755)
    calls = []

    def fake_run(self, args, **kwargs):
        calls.append(list(args))
        for key, answer in answers.items():
            if key in " ".join(args):
                return answer
        return 127, "", "not found"
    return root, calls, fake_run


def test_the_configured_vllm_cli_and_image_are_probed_with_their_own_timeout(tmp_path):
    root, calls, fake_run = _fake_host(tmp_path, {
        "/opt/vllm/bin/vllm --version": (0, "INFO loading\n0.21.0\n", ""),
        "image inspect": (0, '{"org.opencontainers.image.title": "vllm"}\n', ""),
        "importlib.metadata": (0, "0.21.0\n", ""),
    })
    args = {"root": str(root), "probe_under_root": True, "vllm_bin": "/opt/vllm/bin/vllm",
            "vllm_image": "vllm/vllm-openai:latest", "vllm_probe_timeout": 45}
    with mock.patch.object(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name), \
            mock.patch.object(AnsibleModule, "run_command", fake_run):
        failed, result = run_module(jetson_facts.main, args)
    assert not failed, result
    runtime = result["ansible_facts"]["jetson"]["runtime"]
    assert runtime["vllm_version"] == "0.21.0" and runtime["vllm_bin"] == "/opt/vllm/bin/vllm"
    assert runtime["image"] == {"name": "vllm/vllm-openai:latest", "present": True,
                                "labels": {"org.opencontainers.image.title": "vllm"}, "vllm_version": "0.21.0"}
    probed = [c for c in calls if "45" in c]
    assert [c[2:4] for c in probed][:1] == [[str(root) + "/opt/vllm/bin/vllm", "--version"]]
    run = [c for c in probed if "run" in c][0]
    assert run[:2] == ["/usr/bin/timeout", "45"] and "--network" in run and "none" in run and "pull" not in run


def test_an_image_not_on_the_host_is_reported_absent_and_not_run(tmp_path):
    root, calls, fake_run = _fake_host(tmp_path, {"image inspect": (1, "", "Error: No such image")})
    args = {"root": str(root), "probe_under_root": True, "vllm_image": "vllm/vllm-openai:latest"}
    with mock.patch.object(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name), \
            mock.patch.object(AnsibleModule, "run_command", fake_run):
        failed, result = run_module(jetson_facts.main, args)
    assert not failed
    assert result["ansible_facts"]["jetson"]["runtime"]["image"]["present"] is False
    assert not any("run" in c and "--rm" in c for c in calls)


def test_a_silent_vllm_cli_is_a_warning_not_a_version(tmp_path):
    root, calls, fake_run = _fake_host(tmp_path, {"--version": (124, "", "")})
    args = {"root": str(root), "probe_under_root": True, "vllm_bin": "/opt/vllm/bin/vllm", "vllm_probe_timeout": 7}
    with mock.patch.object(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name), \
            mock.patch.object(AnsibleModule, "run_command", fake_run):
        failed, result = run_module(jetson_facts.main, args)
    facts = result["ansible_facts"]["jetson"]
    assert facts["runtime"]["vllm_version"] is None
    assert any("rc=124 within 7 s" in w for w in facts["warnings"])


def _two_vllms(tmp_path, configured_present=True):
    """A board with an old `vllm` on PATH (0.12.0) and the configured CLI (0.20.1) elsewhere."""
    root, calls, dummy = _fake_host(tmp_path, {})
    on_path = root / "usr" / "local" / "bin" / "vllm"
    on_path.parent.mkdir(parents=True, exist_ok=True)
    on_path.write_text("#!/bin/sh\necho 0.12.0\n")
    on_path.chmod(0o755)
    if not configured_present:
        (root / "opt" / "vllm" / "bin" / "vllm").unlink()

    def fake_run(self, args, **kwargs):
        calls.append(list(args))
        joined = " ".join(args)
        if str(on_path) in joined:
            return 0, "0.12.0\n", ""
        if "/opt/vllm/bin/vllm" in joined:
            return 0, "INFO 01-01 vllm import\n0.20.1\n", ""
        return 127, "", "not found"
    return root, calls, fake_run


def test_the_configured_cli_not_the_one_on_path_gives_the_version(tmp_path):
    # Issue 33 item 1: /usr/local/bin/vllm at 0.12.0 must not stand for /opt/vllm/bin/vllm at 0.20.1.
    root, calls, fake_run = _two_vllms(tmp_path)
    args = {"root": str(root), "probe_under_root": True, "vllm_bin": "/opt/vllm/bin/vllm"}
    with mock.patch.object(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name), \
            mock.patch.object(AnsibleModule, "run_command", fake_run):
        failed, result = run_module(jetson_facts.main, args)
    runtime = result["ansible_facts"]["jetson"]["runtime"]
    assert not failed and runtime["vllm_version"] == "0.20.1" and runtime["vllm_bin"] == "/opt/vllm/bin/vllm"
    # Without vllm_bin the same board reports PATH's install: the two really differ.
    with mock.patch.object(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name), \
            mock.patch.object(AnsibleModule, "run_command", fake_run):
        failed, result = run_module(jetson_facts.main, {"root": str(root), "probe_under_root": True})
    assert result["ansible_facts"]["jetson"]["runtime"]["vllm_version"] == "0.12.0"


def test_a_missing_configured_cli_is_unknown_not_the_path_version(tmp_path):
    root, calls, fake_run = _two_vllms(tmp_path, configured_present=False)
    args = {"root": str(root), "probe_under_root": True, "vllm_bin": "/opt/vllm/bin/vllm"}
    with mock.patch.object(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name), \
            mock.patch.object(AnsibleModule, "run_command", fake_run):
        failed, result = run_module(jetson_facts.main, args)
    facts = result["ansible_facts"]["jetson"]
    assert not failed and facts["runtime"]["vllm_version"] is None
    assert facts["runtime"]["vllm_bin"] == "/opt/vllm/bin/vllm"
    assert any("/opt/vllm/bin/vllm is not an executable" in w for w in facts["warnings"])
