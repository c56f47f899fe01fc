# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""vllm_wait's HTTP probe against the loopback stand-in."""
from ansible_collections.jetson.specdec.plugins.module_utils.vllm.health import http_get, served_models
from ansible_collections.jetson.specdec.tests.integration_py.fake_vllm import FakeVLLM


def test_http_get_with_and_without_the_key():
    with FakeVLLM(api_key="k") as srv:
        status, body = http_get(srv.url, "/v1/models", api_key="k")
        assert status == 200 and served_models(body) == ["tiny"]
        assert http_get(srv.url, "/v1/models")[0] == 401
        assert http_get(srv.url, "/health")[0] == 200


def test_http_get_to_a_closed_port_does_not_raise():
    status, text = http_get("http://127.0.0.1:9", "/health", timeout=1.0)
    assert status is None and text
