"""Faults injected from the profile, and their scoping to speculative starts."""
import json
import socket
import time
import urllib.request

from conftest import EAGLE_K3, LLAMA_W4, run_vllm
import pytest

pytestmark = pytest.mark.simulator  # starts the stand-in on loopback


def complete(base, n_tokens=4, timeout=10):
    body = json.dumps({"model": LLAMA_W4, "prompt": "x", "max_tokens": n_tokens,
                       "ignore_eos": True, "stream": True}).encode()
    req = urllib.request.Request(base + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=timeout).read().decode()


def test_crash_after_requests(profile_file, start_server):
    server = start_server(profile_file(faults={"crash_after_requests": 2}))
    assert complete(server.base).endswith("data: [DONE]\n\n")
    assert complete(server.base).endswith("data: [DONE]\n\n")
    assert server.proc.wait(timeout=10) == 1
    assert "EngineDeadError" in server.log()


def test_hang_at_startup_never_opens_the_port(profile_file, start_server):
    server = start_server(profile_file(faults={"hang_at_startup": True}), wait=False)
    time.sleep(1.0)
    assert server.proc.poll() is None
    port = int(server.base.rsplit(":", 1)[1])
    sock = socket.socket()
    try:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    finally:
        sock.close()


def test_startup_delay_is_wall_seconds(profile_file, start_server):
    began = time.monotonic()
    start_server(profile_file(faults={"startup_delay_s": 1.0}))
    assert time.monotonic() - began >= 1.0


def test_stall_mid_stream_keeps_socket_open(profile_file, start_server):
    server = start_server(profile_file(
        faults={"stall_mid_stream": {"after_requests": 1, "after_tokens": 5}}))
    complete(server.base)
    body = json.dumps({"model": LLAMA_W4, "prompt": "x", "max_tokens": 50, "ignore_eos": True,
                       "stream": True}).encode()
    req = urllib.request.Request(server.base + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    resp = urllib.request.urlopen(req, timeout=1.5)
    seen = []
    try:
        for line in resp:
            if line.startswith(b"data: "):
                seen.append(line)
        assert False, "stream should have stalled"
    except socket.timeout:
        pass
    assert 1 <= len(seen) < 50
    assert server.proc.poll() is None


def test_reject_and_scope_to_speculative_starts(profile_file, start_server):
    path = profile_file(faults={"when": "speculative",
                                "reject_speculative_config": "speculation disabled on this image"})
    result = run_vllm(["serve", LLAMA_W4, "--max-model-len", "4096",
                       "--speculative-config", EAGLE_K3], path)
    assert result.returncode == 1
    assert "ValueError: speculation disabled on this image" in result.stderr
    start_server(path)  # the baseline of the same host stays healthy


def test_oom_when_speculative(profile_file):
    result = run_vllm(["serve", LLAMA_W4, "--max-model-len", "4096", "--speculative-config",
                       EAGLE_K3], profile_file(faults={"oom_when_speculative": True}))
    assert result.returncode == 1
    assert "torch.OutOfMemoryError: CUDA out of memory." in result.stderr


def test_gated_repo_fails_as_the_hub_client_does(profile_file):
    from vllm_sim.cli import gated_repo_lines
    result = run_vllm(["serve", LLAMA_W4, "--max-model-len", "4096", "--speculative-config", EAGLE_K3],
                      profile_file(faults={"gated_repo": True, "when": "speculative"}))
    assert result.returncode == 1
    assert "huggingface_hub.errors.GatedRepoError: 401 Client Error." in result.stderr
    assert "Cannot access gated repo for url " in result.stderr
    model = json.loads(EAGLE_K3)["model"]
    assert "Access to model %s is restricted." % model in result.stderr
    assert gated_repo_lines("acme/x")[-2].endswith("/acme/x/resolve/main/config.json.")
