# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""vllm_wait through AnsibleModule against a loopback server: ready, and a timeout that really waits; with
systemd's answers faked and a closed loopback port: a crash loop, and a unit that does not exist."""
from unittest import mock

from ansible.module_utils import basic

from ansible_collections.jetson.specdec.plugins.modules import vllm_wait
from ansible_collections.jetson.specdec.tests.integration_py.fake_vllm import FakeVLLM
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.test_vllm_wait import _fake_run_command
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module


def test_ready_server():
    with FakeVLLM(version="0.20.1") as srv:
        failed, result = run_module(vllm_wait.main, {"url": srv.url, "timeout": 5, "interval": 1})
    assert not failed and result["models"] == ["tiny"] and result["version"] == "0.20.1"
    assert result["changed"] is False


def test_timeout_without_a_service():
    failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "timeout": 2, "interval": 1})
    assert failed and result["cause"] == "health_timeout"
    assert "within 2 s" in result["msg"]


def test_a_wait_writes_its_progress_after_every_probe(tmp_path):
    import json
    progress = tmp_path / "start-progress.json"
    failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "timeout": 2, "interval": 1,
                                                 "progress_path": str(progress)})
    assert failed and result["cause"] == "health_timeout"
    snap = json.loads(progress.read_text())
    assert snap["kind"] == "start" and snap["timeout"] == 2 and snap["last"].startswith("/health answered")
    assert snap["updated"] >= snap["started"]


def test_crash_loop_fails_fast_with_the_cause():
    states = ["ActiveState=activating\nNRestarts=0\n", "ActiveState=activating\nSubState=auto-restart\nNRestarts=3\nExecMainStatus=1\n"]
    with mock.patch.object(basic.AnsibleModule, "run_command", _fake_run_command(states)), \
            mock.patch.object(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name):
        failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "service": "vllm",
                                                     "timeout": 60, "interval": 1})
    assert failed
    assert result["cause"] == "out_of_memory"
    assert "crash loop" in result["msg"] and "Free memory on device" in result["msg"]
    assert result["elapsed"] < 30


def test_a_missing_unit_is_nothing_to_wait_for_only_when_asked():
    """The rollout's look at the running service before it changes anything: a host without the unit
    (never deployed) is not unhealthy. Without unit_missing_ok the wait fails as before."""
    missing = ["LoadState=not-found\nActiveState=inactive\nSubState=dead\nNRestarts=0\n"]
    with mock.patch.object(basic.AnsibleModule, "run_command", _fake_run_command(list(missing))), \
            mock.patch.object(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name):
        failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "service": "vllm",
                                                     "timeout": 30, "interval": 1, "unit_missing_ok": True})
        assert not failed and result["unit_missing"] is True and "models" not in result
        failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "service": "vllm",
                                                     "timeout": 30, "interval": 1})
        assert failed and "not running" in result["msg"]
    loaded = ["LoadState=loaded\nActiveState=inactive\nSubState=dead\nNRestarts=0\n"]
    with mock.patch.object(basic.AnsibleModule, "run_command", _fake_run_command(loaded)), \
            mock.patch.object(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name):
        failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "service": "vllm",
                                                     "timeout": 30, "interval": 1, "unit_missing_ok": True})
    assert failed and "not running" in result["msg"]  # a unit that exists and is down is unhealthy
