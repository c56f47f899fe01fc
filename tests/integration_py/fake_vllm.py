# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The one in-process stand-in for vLLM's OpenAI server in the integration tests.

Loopback only, stdlib only, one thread per connection.  Serves /health,
/version, /v1/models and /metrics, and streams completions: one SSE chunk per
``step_s`` carrying ``tokens_per_chunk`` tokens, so ground truth is known:
TPOT = step_s / tokens_per_chunk, ITL = step_s, TTFT ~ prefill_s.  ``fault``
picks one misbehaviour for the streaming endpoints; ``api_key`` makes /v1/*
answer 401 without ``Authorization: Bearer <api_key>``.  The full simulator
(tests/simulator) is for memory, acceptance and board behaviour; this is for
exact client-side timing and faults.
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = ("none", "http_500", "close_mid", "stall", "malformed", "no_usage",
          "reject_token_ids", "error_event", "no_done", "short_output")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, status, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if self.server.cfg.get("simulated"):
            self.send_header("X-Jetson-Simulated", self.server.cfg["simulated"])
        self.end_headers()
        self.wfile.write(data)

    def _unauthorized(self):
        key = self.server.cfg.get("api_key")
        if key and self.path.startswith("/v1/") and self.headers.get("Authorization") != "Bearer " + key:
            self._send(401, '{"error":"Unauthorized"}')
            return True
        return False

    def do_GET(self):
        cfg = self.server.cfg
        if self._unauthorized():
            return
        if self.path == "/health":
            self._send(200, "")
        elif self.path == "/v1/models":
            self._send(200, json.dumps({"object": "list", "data": [
                {"id": "tiny", "object": "model", "owned_by": "vllm",
                 "max_model_len": cfg.get("max_model_len", 4096)}]}))
        elif self.path == "/version":
            self._send(200, json.dumps({"version": cfg.get("version", "0.0-fake")}))
        elif self.path == "/metrics":
            self._send(200, self.server.metrics_text(), "text/plain; version=0.0.4")
        else:
            self._send(404, "{}")

    def _chunk(self, payload):
        data = payload.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_POST(self):
        srv = self.server
        cfg = srv.cfg
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if self._unauthorized():
            return
        srv.bodies.append(body)
        srv.auth.append(self.headers.get("Authorization"))
        with srv.lock:
            srv.requests += 1
            nreq = srv.requests
        fault = cfg.get("fault", "none")
        if cfg.get("fault_after", 0) >= nreq:
            fault = "none"
        if fault == "http_500":
            return self._send(500, '{"error":"boom"}')
        if fault == "reject_token_ids" and isinstance(body.get("prompt"), list):
            return self._send(400, '{"error":"token ids not supported"}')
        chat = self.path.endswith("/chat/completions")
        n_out = int(body.get("max_tokens") or 16)
        if fault == "short_output":  # stops early, as if ignore_eos were not honoured
            n_out = max(1, n_out - 1)
        k = cfg.get("tokens_per_chunk", 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        if cfg.get("simulated"):
            self.send_header("X-Jetson-Simulated", cfg["simulated"])
        self.end_headers()
        time.sleep(cfg.get("prefill_s", 0.0))
        sent = 0
        step = 0
        while sent < n_out:
            if step:
                time.sleep(cfg.get("step_s", 0.0))
            n = min(k, n_out - sent)
            sent += n
            step += 1
            if fault == "close_mid" and sent > n_out // 2:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if fault == "stall" and sent > n_out // 2:
                srv.stop_evt.wait(30)
                return
            if fault == "malformed" and sent > n_out // 2:
                self._chunk("data: {not json\n\n")
                continue
            if fault == "error_event" and sent > n_out // 2:
                self._chunk('data: {"object":"error","message":"engine died"}\n\n')
                break
            text = "x" * n
            choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
            self._chunk("data: %s\n\n" % json.dumps({"choices": [choice]}))
            if cfg.get("keepalive_comments"):
                self._chunk(": ping\n\n")
            with srv.lock:
                srv.drafts += 1
                srv.draft_tokens += cfg.get("k_spec", 0)
                srv.accepted += n - 1
        if fault != "no_usage":
            plen = len(body["prompt"]) if isinstance(body.get("prompt"), list) else \
                len((body.get("prompt") or body["messages"][0]["content"]).split()) * cfg.get("tokens_per_word", 1)
            self._chunk("data: %s\n\n" % json.dumps({"choices": [], "usage": {
                "prompt_tokens": plen, "completion_tokens": sent, "total_tokens": plen + sent}}))
        if fault != "no_done":
            self._chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class FakeVLLM(object):
    """Context manager: ``with FakeVLLM(step_s=0.01) as srv: srv.url``."""

    def __init__(self, **cfg):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.cfg = cfg
        self.httpd.lock = threading.Lock()
        self.httpd.stop_evt = threading.Event()
        self.httpd.requests = 0
        self.httpd.bodies = []
        self.httpd.auth = []
        self.httpd.drafts = self.httpd.draft_tokens = self.httpd.accepted = 0
        self.httpd.metrics_text = self._metrics
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True

    def _metrics(self):
        h = self.httpd
        if not h.cfg.get("k_spec"):
            return "# HELP vllm:num_requests_running x\nvllm:num_requests_running{model_name=\"tiny\"} 0.0\n"
        lab = 'engine="0",model_name="tiny"'
        return ("vllm:spec_decode_num_drafts_total{%s} %d\n"
                "vllm:spec_decode_num_draft_tokens_total{%s} %d\n"
                "vllm:spec_decode_num_accepted_tokens_total{%s} %d\n"
                % (lab, h.drafts, lab, h.draft_tokens, lab, h.accepted))

    @property
    def requests(self):
        return self.httpd.requests

    @property
    def bodies(self):
        return self.httpd.bodies

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.stop_evt.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
