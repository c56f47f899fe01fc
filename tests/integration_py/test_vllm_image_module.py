# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""jetson.specdec.vllm_image with the real Docker engine (issue 18: an image pull failing).

Real parts: the Docker CLI and daemon of the test bed. The registries are on loopback: a port
nobody listens on, and a small server that speaks the Registry API v2 error format (a real
registry image cannot be had offline) answering MANIFEST_UNKNOWN or DENIED, so the daemon
prints its own errors. An image the test bed built stands for one already on the host.
"""
import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible_collections.jetson.specdec.plugins.modules import vllm_image
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

DOCKER = shutil.which("docker")


def _daemon_answers():
    return DOCKER is not None and subprocess.run([DOCKER, "info"], capture_output=True, check=False).returncode == 0


pytestmark = pytest.mark.skipif(not _daemon_answers(), reason="needs a running Docker engine (make testbed)")


class _Registry(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/v2/":
            code, body = 200, {}
        elif "/denied/" in self.path:
            code, body = 401, {"errors": [{"code": "DENIED", "message": "requested access to the resource is denied"}]}
        else:
            code, body = 404, {"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}]}
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        if code == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="loopback"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_HEAD = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def registry():
    server = HTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "127.0.0.1:%d" % server.server_port
    server.shutdown()


@pytest.fixture(scope="module")
def local_image():
    out = subprocess.run([DOCKER, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True,
                         text=True, check=True).stdout.split()
    images = [i for i in out if i.startswith("jetson-specdec/") and not i.endswith(":<none>")]
    if not images:
        pytest.skip("no test-bed image on this machine (make testbed builds them)")
    return images[0]


def image(**args):
    return run_module(vllm_image.main, dict({"docker_bin": DOCKER, "timeout": 120}, **args))


def test_an_image_on_the_host_is_left_alone(local_image):
    for policy in ("missing", "never"):
        failed, res = image(image=local_image, pull=policy)
        assert not failed and res["changed"] is False and res["pulled"] is False, res
        assert res["present"] is True and res["id"].startswith("sha256:")


def test_a_tag_the_registry_does_not_have_fails_naming_the_image_setting(registry):
    failed, res = image(image="%s/acme/vllm:v0.20.1" % registry)
    assert failed, res
    assert res["cause"] == "not_found_or_denied" and "manifest unknown" in res["docker_line"], res
    assert "vllm_server_container_image" in res["msg"] and "Nothing was changed" in res["msg"]


def test_a_registry_that_denies_access_says_docker_login(registry):
    failed, res = image(image="%s/denied/vllm:v0.20.1" % registry)
    assert failed and res["cause"] == "not_found_or_denied", res
    assert "docker login" in res["msg"]


def test_an_unreachable_registry_is_told_apart():
    failed, res = image(image="127.0.0.1:1/acme/vllm:v0.20.1")
    assert failed and res["cause"] == "unreachable", res
    assert "connection refused" in res["docker_line"] and "vllm_server_container_pull: never" in res["msg"]


def test_never_with_the_image_absent_is_refused_without_a_pull(registry):
    failed, res = image(image="%s/acme/vllm:v0.20.1" % registry, pull="never")
    assert failed and "vllm_server_container_pull is never" in res["msg"] and "cause" not in res, res


def test_check_mode_says_it_would_pull_and_does_not(registry):
    failed, res = image(image="%s/acme/vllm:v0.20.1" % registry, _ansible_check_mode=True)
    assert not failed and res["changed"] is True and res["pulled"] is False and res["present"] is False, res


@pytest.mark.parametrize("bad", ["--help", "-q", "vllm/vllm-openai v0.20.1", ""])
def test_a_name_docker_would_read_as_an_option_is_refused(bad):
    failed, res = image(image=bad)
    assert failed and "is not an image reference" in res["msg"], res


def test_a_daemon_that_does_not_answer_fails_before_anything(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", "unix://%s" % (tmp_path / "no-daemon.sock"))
    failed, res = image(image="vllm/vllm-openai:v0.20.1")
    assert failed and "Docker did not answer" in res["msg"] and "Cannot connect to the Docker daemon" in res["msg"], res
