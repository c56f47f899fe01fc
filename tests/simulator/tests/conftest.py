"""Fixtures for the simulator tests: profiles on disk and servers on loopback."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

SIM_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, SIM_ROOT)

VLLM = os.path.join(SIM_ROOT, "bin", "vllm")
PROFILES = os.path.join(SIM_ROOT, "profiles")
LLAMA_W4 = "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"
EAGLE_HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
EAGLE_K3 = json.dumps({"method": "eagle3", "model": EAGLE_HEAD, "num_speculative_tokens": 3})


def board(name):
    with open(os.path.join(PROFILES, name + ".json")) as handle:
        return json.load(handle)


@pytest.fixture
def profile_file(tmp_path):
    """Write a board profile (fast: tiny time scale, no load time, no noise) with overrides.

    The contract tests count exact tokens and acceptance of one request; the board's noise
    (per-request acceptance spread) is tested in test_noise.py and would only make them flaky."""
    def make(base="agx_orin_64gb", **overrides):
        data = board(base)
        data.update({"time_scale": 0.01, "startup_s": 0.0, "noise": {}})
        data.update(overrides)
        path = tmp_path / ("%s.json" % base)
        path.write_text(json.dumps(data))
        return str(path)
    return make


def run_vllm(args, profile_path, timeout=20, env=None):
    """Run the launcher to completion (failure paths); returns CompletedProcess."""
    full_env = dict(os.environ, JETSON_SIM_PROFILE=profile_path)
    full_env.pop("JETSON_SIM_TIME_SCALE", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, VLLM] + list(args), env=full_env, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def wait_healthy(base, proc, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if urllib.request.urlopen(base + "/health", timeout=1).status == 200:
                return True
        except OSError:
            time.sleep(0.05)
    return False


class Server(object):
    def __init__(self, proc, base, log_path):
        self.proc, self.base, self.log_path = proc, base, log_path

    def log(self):
        with open(self.log_path) as handle:
            return handle.read()


@pytest.fixture
def start_server(tmp_path):
    """Start `vllm serve` on a free loopback port; every server is stopped at teardown."""
    started = []

    def start(profile_path, model=LLAMA_W4, extra=(), wait=True):
        port = free_port()
        log_path = str(tmp_path / ("server-%d.log" % port))
        env = dict(os.environ, JETSON_SIM_PROFILE=profile_path)
        env.pop("JETSON_SIM_TIME_SCALE", None)
        log = open(log_path, "w")
        proc = subprocess.Popen([sys.executable, VLLM, "serve", model, "--host", "127.0.0.1",
                                 "--port", str(port), "--max-model-len", "4096"] + list(extra),
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        server = Server(proc, "http://127.0.0.1:%d" % port, log_path)
        started.append(server)
        if wait:
            assert wait_healthy(server.base, proc), server.log()
        return server

    yield start
    for server in started:
        if server.proc.poll() is None:
            server.proc.terminate()
            try:
                server.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.proc.kill()
                server.proc.wait(timeout=5)
