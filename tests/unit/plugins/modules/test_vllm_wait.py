"""vllm_wait through AnsibleModule: ready, crash loop with cause, timeout."""
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from unittest import mock

import pytest
from ansible.module_utils import basic

from ansible_collections.jetson.specdec.plugins.modules import vllm_wait
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module


class _Ready(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        bodies = {"/health": b"", "/v1/models": json.dumps({"data": [{"id": "tiny"}]}).encode(),
                  "/version": b'{"version": "0.20.1"}'}
        body = bodies.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args):
        pass


@pytest.fixture()
def ready_url():
    httpd = HTTPServer(("127.0.0.1", 0), _Ready)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_ready_server(ready_url):
    failed, result = run_module(vllm_wait.main, {"url": ready_url, "timeout": 5, "interval": 1})
    assert not failed and result["models"] == ["tiny"] and result["version"] == "0.20.1"
    assert result["changed"] is False


JOURNAL = ("Started vllm.service\n"
           "ValueError: Free memory on device (5.84/7.44 GiB) on startup is less than desired GPU memory utilization\n"
           "vllm.service: Main process exited, code=exited, status=1/FAILURE\n")


def _fake_run_command(states):
    def run(self, cmd, **kwargs):
        if "show" in cmd:
            return 0, states.pop(0) if len(states) > 1 else states[0], ""
        if "journalctl" in cmd[0]:
            return 0, JOURNAL, ""
        return 1, "", "unexpected"
    return run


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


def test_timeout_without_a_service():
    failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "timeout": 2, "interval": 1})
    assert failed and result["cause"] == "health_timeout"
    assert "within 2 s" in result["msg"]


def test_bad_url_is_refused():
    failed, result = run_module(vllm_wait.main, {"url": "127.0.0.1:8000"})
    assert failed and "http://HOST:PORT" in result["msg"]
