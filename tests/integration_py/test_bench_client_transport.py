# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The benchmark client through what fleets put in front of vLLM.

A reverse proxy may end a stream by closing the connection (``Connection:
close``, an HTTP/1.0 reply, a body without length) and may speak TLS with a
certificate from the fleet's own CA.  The server here is a raw loopback
socket server, so each framing is exactly what the test says.
"""
import json
import shutil
import socketserver
import ssl
import subprocess
import threading
import time

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench import client as bc
from ansible_collections.jetson.specdec.plugins.module_utils.bench import runner as br

MODELS = json.dumps({"object": "list", "data": [{"id": "tiny", "object": "model", "max_model_len": 4096}]})


def sse_events(n_chunks):
    for i in range(n_chunks):
        yield "data: %s\n\n" % json.dumps({"choices": [{"index": 0, "text": "t%d" % i}]})
    yield "data: %s\n\n" % json.dumps({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": n_chunks}})
    yield "data: [DONE]\n\n"


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        while self._one_request():
            pass

    def _one_request(self):
        line = self.rfile.readline()
        if not line:
            return False
        method = line.split()[0]
        path = line.split()[1].decode()
        length = 0
        while True:
            header = self.rfile.readline()
            if header in (b"\r\n", b"\n", b""):
                break
            name, unused, value = header.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if length:
            self.rfile.read(length)
        mode = self.server.mode
        self.server.requests.append((method, path))
        if method == b"GET":
            body = (MODELS if path == "/v1/models" else "{}").encode()
            self.wfile.write(b"HTTP/1.1 %d OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (200 if path == "/v1/models" else 404, len(body), body))
            return True
        events = list(sse_events(self.server.n_chunks))
        if mode == "http10":  # HTTP/1.0: no length, the body ends when the server closes
            self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        elif mode == "close":  # HTTP/1.1, no length, no chunking, Connection: close (nginx buffering off)
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        elif mode == "close_chunked":  # chunked, but the proxy will not keep the connection
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        else:  # keep-alive chunked, like vLLM itself
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
        chunked = mode in ("close_chunked", "keepalive")
        for event in events:
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            self.wfile.flush()
            time.sleep(self.server.step_s)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
        return mode == "keepalive"


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class Proxy(object):
    """Loopback server; ``tls`` wraps accepted sockets with the given cert and key."""

    def __init__(self, mode, n_chunks=5, step_s=0.01, tls=None):
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.mode = mode
        self.httpd.n_chunks = n_chunks
        self.httpd.step_s = step_s
        self.httpd.requests = []
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.url = "%s://127.0.0.1:%d" % (scheme, self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05})

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def requests(self):
        return self.httpd.requests


def stream_twice(target):
    """Two requests on one keep-alive client: the second must reconnect cleanly."""
    client = bc.StreamClient(target)
    body = bc.build_payload("completions", "tiny", [1, 2, 3], 5)
    try:
        return [client.stream(body, 5.0, time.perf_counter() + 20) for unused in range(2)]
    finally:
        client.close()


@pytest.mark.parametrize("mode", ["close", "http10", "close_chunked", "keepalive"])
def test_streams_that_end_by_closing_the_connection(mode):
    with Proxy(mode) as proxy:
        records = stream_twice(bc.Target(proxy.url))
    for rec in records:
        assert rec["ok"], rec
        assert rec["output_tokens"] == 5 and rec["usage"] and rec["chunks"] == 5
        assert len(rec["itl"]) == 4 and rec["ttft"] > 0
    assert [r[0] for r in proxy.requests] == [b"POST", b"POST"]


def test_a_full_benchmark_through_a_closing_proxy():
    with Proxy("close", n_chunks=4, step_s=0.002) as proxy:
        target = bc.Target(proxy.url)
        payloads = [bc.build_payload("completions", "tiny", [1, 2], 4) for unused in range(12)]
        records, duration = br.run_pool(target, "completions", payloads, 4, 5.0, time.perf_counter() + 30)
    assert len(records) == 12 and all(r["ok"] for r in records), [r for r in records if not r["ok"]][:2]
    assert duration > 0


def make_cert(folder, names):
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.check_call(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-proxy",
         "-addext", "subjectAltName=" + names, "-keyout", key, "-out", cert],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    return make_cert(tmp_path_factory.mktemp("tls"), "IP:127.0.0.1,DNS:localhost")


@pytest.mark.parametrize("mode", ["close", "keepalive"])
def test_tls_with_the_fleet_ca(self_signed, mode):
    with Proxy(mode, tls=self_signed) as proxy:
        target = bc.Target(proxy.url, ca_path=self_signed[0])
        records = stream_twice(target)
        info = br.discover(target, 5.0)
    assert all(r["ok"] for r in records), records
    assert info["models"][0]["id"] == "tiny"


def test_tls_refuses_an_unknown_certificate_and_says_how_to_fix_it(self_signed):
    with Proxy("close", tls=self_signed) as proxy:
        target = bc.Target(proxy.url)  # system CAs only
        rec = stream_twice(target)[0]
        with pytest.raises(bc.BenchError) as err:
            br.discover(target, 5.0)
    assert not rec["ok"] and rec["reason"] == "tls_verify_failed"
    assert "CERTIFICATE_VERIFY_FAILED" in str(err.value) or "certificate verify failed" in str(err.value)
    assert "ca_path" in str(err.value) and "validate_certs" in str(err.value)


def test_tls_without_verification_still_encrypts(self_signed):
    with Proxy("http10", tls=self_signed) as proxy:
        records = stream_twice(bc.Target(proxy.url, validate_certs=False))
    assert all(r["ok"] for r in records), records


def test_tls_name_mismatch_is_refused(tmp_path):
    # trusted CA, but the certificate names another host than the one in the URL
    other = make_cert(tmp_path, "DNS:proxy.example")
    with Proxy("close", tls=other) as proxy:
        rec = stream_twice(bc.Target(proxy.url, ca_path=other[0]))[0]
    assert not rec["ok"] and rec["reason"] == "tls_verify_failed"


def test_a_missing_ca_bundle_is_a_clear_error(tmp_path):
    with pytest.raises(bc.BenchError, match="ca_path"):
        bc.Target("https://127.0.0.1:1", ca_path=str(tmp_path / "nope.pem"))
    # plain http never loads a CA bundle
    assert bc.Target("http://127.0.0.1:1", ca_path=str(tmp_path / "nope.pem")).ssl_context is None
