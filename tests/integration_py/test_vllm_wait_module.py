# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""vllm_wait through AnsibleModule against a loopback server: ready, and a timeout that really waits."""
from ansible_collections.jetson.specdec.plugins.modules import vllm_wait
from ansible_collections.jetson.specdec.tests.integration_py.fake_vllm import FakeVLLM
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
