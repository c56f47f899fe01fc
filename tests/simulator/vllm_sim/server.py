"""OpenAI-compatible HTTP front end (http.server), answering as vLLM's api_server does.

Streaming responses are Server-Sent Events: `data: {json}\\n\\n` per engine step, an
optional usage chunk with `"choices": []`, then `data: [DONE]\\n\\n`.
"""
import hashlib
import json
import math
import os
import queue
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import board_sysfs, logs
from .engine import Engine, Request
from .metrics import Metrics
from .profile import version_tuple


def prompt_seed(prompt):
    """A stable number from a prompt (text, token ids or chat messages): the seed of its answer."""
    raw = json.dumps(prompt, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return int(hashlib.sha256(raw).hexdigest()[:8], 16)


def garble_start(seed, garble):
    """Where the fault ``garble`` (true, or a share of prompts in [0, 1]) makes this prompt's answer
    wrong (a position 1 to 3, after the first draft would be accepted), or None for a prompt it spares."""
    if garble is None or garble is False:
        return None
    rate = 1.0 if garble is True else float(garble)
    if (seed % 1000) >= rate * 1000:
        return None
    return 1 + (seed // 1000) % 3


def prompt_text(prompt):
    """The text of a prompt (a string, chat messages or token ids) that prompt_acceptance rules match."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        parts = []
        for item in prompt:
            if isinstance(item, dict):
                content = item.get("content")
                parts.append(content if isinstance(content, str) else json.dumps(content))
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(parts)
    return ""


def count_text_tokens(text):
    """Deterministic stand-in tokenizer: about four characters per token."""
    return max(1, int(math.ceil(len(text) / 4.0)))


class ApiError(Exception):
    def __init__(self, status, message, etype="BadRequestError", param=None):
        Exception.__init__(self, message)
        self.status, self.message, self.etype, self.param = status, message, etype, param


class SimServer(object):
    def __init__(self, profile, target, spec, plan, served_name, model_path, max_model_len,
                 max_num_seqs, api_key, faults, seed=None):
        self.profile = profile
        self.spec = spec
        self.served_name = served_name
        self.model_path = model_path
        self.max_model_len = max_model_len
        self.api_key = api_key
        self.faults = faults
        self.version = profile.vllm_version
        self.created = int(time.time())
        self.sim_header = "%s; time_scale=%s" % (profile.name, profile.time_scale)
        self.metrics = Metrics(served_name, spec.k if spec else None, max_model_len,
                               legacy_tpot=version_tuple(self.version) < (0, 12, 0),
                               cache_info={"block_size": plan.block_size,
                                           "num_gpu_blocks": plan.num_blocks,
                                           "gpu_memory_utilization": "simulated"})
        self.engine = Engine(profile, target, spec, max_num_seqs=max_num_seqs,
                             num_blocks=plan.num_blocks, block_size=plan.block_size,
                             metrics=self.metrics, seed=seed,
                             noise=dict(getattr(profile, "noise", None) or {},
                                        **({"thermal": faults["thermal_throttle"]}
                                           if faults.get("thermal_throttle") else {})))
        # The fault thermal_throttle shows in the board's clock and temperature files; the
        # profile's noise (a slowdown nobody explains) does not.
        self.board_sysfs = board_sysfs.attach(profile, self.engine.noise, bool(faults.get("thermal_throttle")))
        self.engine.power = board_sysfs.attach_power(profile)
        stall = faults.get("stall_mid_stream")
        if stall:
            self.engine.stall = (int(stall.get("after_requests", 0)),
                                 int(stall.get("after_tokens", 1)))
        self.completed = 0
        self.lock = threading.Lock()
        self.httpd = None
        self.req_seq = 0

    # ---- lifecycle ----------------------------------------------------------------------
    def bind(self, host, port):
        self.httpd = _Server((host, port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.sim = self

    def serve_forever(self):
        threading.Thread(target=self.engine.run_forever, name="engine", daemon=True).start()
        threading.Thread(target=self._stats_logger, name="stats", daemon=True).start()
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.engine.stop()
            self.httpd.server_close()

    def shutdown(self):
        self.engine.stop()
        if self.httpd:
            self.httpd.shutdown()

    def _stats_logger(self):
        """vLLM's periodic 'Engine 000: ...' and 'SpecDecoding metrics: ...' log lines."""
        last_gen, last_drafts, last_acc, last_draft_tokens = 0.0, 0.0, 0.0, 0.0
        while not self.engine.stopped:
            time.sleep(10)
            by = self.metrics.by_name
            base = self.metrics.base
            gen = by["vllm:generation_tokens"].series[base]
            if gen == last_gen:
                continue
            logs.info("loggers.py:127", "Engine 000: Avg generation throughput: %.1f tokens/s, "
                      "Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%"
                      % ((gen - last_gen) / 10.0, len(self.engine.running),
                         len(self.engine.waiting), 100 * self.engine.kv_usage()))
            last_gen = gen
            if self.spec is not None:
                drafts = by["vllm:spec_decode_num_drafts"].series[base]
                acc = by["vllm:spec_decode_num_accepted_tokens"].series[base]
                dtok = by["vllm:spec_decode_num_draft_tokens"].series[base]
                d, a, t = drafts - last_drafts, acc - last_acc, dtok - last_draft_tokens
                if d:
                    logs.info("metrics.py:96", "SpecDecoding metrics: Mean acceptance length: "
                              "%.2f, Accepted: %d tokens, Drafted: %d tokens, Avg Draft "
                              "acceptance rate: %.1f%%" % (1 + a / d, a, t, 100 * a / max(t, 1)))
                last_drafts, last_acc, last_draft_tokens = drafts, acc, dtok

    def request_done(self):
        """Called after a response is fully written; drives `crash_after_requests`."""
        with self.lock:
            self.completed += 1
            limit = self.faults.get("crash_after_requests")
            if limit is not None and self.completed >= int(limit):
                logs.error("core.py:789", "EngineCore encountered a fatal error.",
                           proc="EngineCore_DP0")
                logs.raw("RuntimeError: CUDA error: unspecified launch failure (simulated fault "
                         "crash_after_requests=%s)" % limit)
                logs.error("async_llm.py:480", "AsyncLLM output_handler failed.")
                logs.raw("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
                         "issue. See stack trace (above) for the root cause.")
                os._exit(1)

    def next_id(self, prefix):
        with self.lock:
            self.req_seq += 1
            return self.req_seq, "%s-%s" % (prefix, uuid.uuid4().hex)

    def model_card(self):
        return {"object": "list", "data": [{
            "id": self.served_name, "object": "model", "created": self.created,
            "owned_by": "vllm", "root": self.model_path, "parent": None,
            "max_model_len": self.max_model_len,
            "permission": [{
                "id": "modelperm-" + uuid.uuid4().hex, "object": "model_permission",
                "created": self.created, "allow_create_engine": False, "allow_sampling": True,
                "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
                "allow_fine_tuning": False, "organization": "*", "group": None,
                "is_blocking": False}]}]}


class _Server(ThreadingHTTPServer):
    """uvicorn-like socket behaviour: a deep accept backlog, no Nagle delay on chunks."""

    request_queue_size = 256
    daemon_threads = True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    def log_message(self, fmt, *args):  # uvicorn's access log line
        logs.raw('INFO:     %s - "%s %s HTTP/1.1" %s' % (
            self.client_address[0], self.command, self.path, args[1] if len(args) > 1 else ""))

    def setup(self):
        BaseHTTPRequestHandler.setup(self)
        # One SSE chunk per engine step must leave at once, as uvicorn sends it.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def sim(self):
        return self.server.sim

    # ---- plumbing -----------------------------------------------------------------------
    def _send(self, status, body=b"", ctype="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Jetson-Simulated", self.sim.sim_header)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _error(self, err):
        if version_tuple(self.sim.version) >= (0, 11, 0):
            body = {"error": {"message": err.message, "type": err.etype, "param": err.param,
                              "code": err.status}}
        else:
            body = {"object": "error", "message": err.message, "type": err.etype,
                    "param": err.param, "code": err.status}
        self._send(err.status, body)

    def _authorized(self):
        key = self.sim.api_key
        if not key or not self.path.startswith("/v1"):
            return True
        if self.headers.get("Authorization", "") == "Bearer " + key:
            return True
        self._send(401, {"error": "Unauthorized"})
        return False

    # ---- GET ----------------------------------------------------------------------------
    def do_GET(self):
        path = self.path.split("?")[0]
        if not self._authorized():
            return
        if path == "/health":
            self._send(200, b"")
        elif path == "/version":
            self._send(200, {"version": self.sim.version})
        elif path == "/v1/models":
            self._send(200, self.sim.model_card())
        elif path == "/metrics":
            eng, m = self.sim.engine, self.sim.metrics
            with eng.cv:
                m.set_gauge("vllm:num_requests_running", len(eng.running))
                m.set_gauge("vllm:num_requests_waiting", len(eng.waiting))
                m.set_gauge("vllm:kv_cache_usage_perc", eng.kv_usage())
            self._send(200, m.render(), "text/plain; version=0.0.4; charset=utf-8")
        else:
            self._send(404, {"detail": "Not Found"})

    # ---- POST ---------------------------------------------------------------------------
    def do_POST(self):
        path = self.path.split("?")[0]
        if not self._authorized():
            return
        if path not in ("/v1/completions", "/v1/chat/completions"):
            self._send(404, {"detail": "Not Found"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body must be an object")
        except ValueError as exc:
            self._error(ApiError(400, "Invalid JSON body: %s" % exc))
            return
        chat = path == "/v1/chat/completions"
        try:
            prompts = self._prompts(body, chat)
            self._generate(body, chat, prompts, self._prompt_seeds(body, chat, len(prompts)),
                           self._prompt_texts(body, chat, len(prompts)))
        except ApiError as err:
            self._error(err)

    def _prompts(self, body, chat):
        model = body.get("model", self.sim.served_name)
        if model not in (self.sim.served_name,):
            raise ApiError(404, "The model `%s` does not exist." % model, "NotFoundError", "model")
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                raise ApiError(400, "messages must be a non-empty list")
            total = 0
            for msg in messages:
                content = msg.get("content") if isinstance(msg, dict) else None
                if isinstance(content, list):  # content parts
                    content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
                total += 4 + count_text_tokens(content or "")  # chat template overhead
            return [total]
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            return [count_text_tokens(prompt)]
        if isinstance(prompt, list) and prompt:
            if all(isinstance(t, int) for t in prompt):
                return [len(prompt)]
            if all(isinstance(p, str) for p in prompt):
                return [count_text_tokens(p) for p in prompt]
            if all(isinstance(p, list) and p and all(isinstance(t, int) for t in p)
                   for p in prompt):
                return [len(p) for p in prompt]
        raise ApiError(400, "prompt must be a string, a list of token ids, or a list of strings")

    @staticmethod
    def _prompt_seeds(body, chat, count):
        """The answer seed of each prompt of the request (a list of prompts answers each alike alone)."""
        if chat:
            return [prompt_seed(body.get("messages"))]
        prompt = body.get("prompt")
        if isinstance(prompt, list) and prompt and not all(isinstance(t, int) for t in prompt):
            return [prompt_seed(p) for p in prompt]
        return [prompt_seed(prompt)] * count

    @staticmethod
    def _prompt_texts(body, chat, count):
        """The text of each prompt of the request (what the profile's prompt_acceptance matches)."""
        if chat:
            return [prompt_text(body.get("messages"))]
        prompt = body.get("prompt")
        if isinstance(prompt, list) and prompt and not all(isinstance(t, int) for t in prompt):
            return [prompt_text(p) for p in prompt]
        return [prompt_text(prompt)] * count

    def _generate(self, body, chat, prompts, seeds=None, texts=None):
        sim = self.sim
        max_tokens = body.get("max_completion_tokens") if chat else None
        if max_tokens is None:
            max_tokens = body.get("max_tokens")
        longest = max(prompts)
        if max_tokens is None:
            max_tokens = sim.max_model_len - longest
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ApiError(400, "max_tokens must be at least 1, got %s." % max_tokens)
        if longest + max_tokens > sim.max_model_len:
            raise ApiError(400, "This model's maximum context length is %d tokens. However, you "
                           "requested %d tokens (%d in the messages, %d in the completion). "
                           "Please reduce the length of the messages or completion."
                           % (sim.max_model_len, longest + max_tokens, longest, max_tokens))
        ignore_eos = bool(body.get("ignore_eos", False))
        eos_after = None if ignore_eos else int(sim.profile.natural_output_tokens)
        seq, rid = sim.next_id("chatcmpl" if chat else "cmpl")
        events = queue.Queue()
        reqs = []
        for idx, ptoks in enumerate(prompts):
            req = Request(seq * 16 + idx, ptoks, max_tokens, eos_after,
                          sink=lambda r, text, n, fin, i=idx: events.put((i, text, n, fin)))
            if seeds:
                req.token_seed = seeds[idx]
                # only a speculating server garbles (a lossy speculative config)
                if sim.spec is not None:
                    req.garble_from = garble_start(seeds[idx], sim.faults.get("garble"))
            if texts:
                # acceptance follows the prompts, as it does on real vLLM (prompt_acceptance in the profile)
                req.prompt_accept_scale = sim.profile.prompt_acceptance_scale(texts[idx])
            reqs.append(req)
        for req in reqs:
            sim.engine.add(req)
        created = int(time.time())
        stream = bool(body.get("stream", False))
        opts = body.get("stream_options") or {}
        try:
            if stream:
                self._stream(chat, rid, created, reqs, events, bool(opts.get("include_usage")))
            else:
                self._whole(chat, rid, created, reqs, events)
        except (BrokenPipeError, ConnectionResetError):
            for req in reqs:
                sim.engine.abort(req)
            return
        sim.request_done()

    def _wait_events(self, reqs, events):
        """Yield engine events until every choice has finished (blocks while stalled)."""
        pending = len(reqs)
        while pending:
            try:
                item = events.get(timeout=1.0)
            except queue.Empty:
                if self.sim.engine.stopped:
                    return
                continue
            if item[3] is not None:
                pending -= 1
            yield item

    def _usage(self, reqs):
        prompt = sum(r.prompt_tokens for r in reqs)
        completion = sum(r.generated for r in reqs)
        return {"prompt_tokens": prompt, "total_tokens": prompt + completion,
                "completion_tokens": completion}

    def _whole(self, chat, rid, created, reqs, events):
        texts = [""] * len(reqs)
        for idx, text, _n, _fin in self._wait_events(reqs, events):
            texts[idx] += text
        choices = []
        for idx, req in enumerate(reqs):
            if chat:
                choices.append({"index": idx, "message": {"role": "assistant",
                                                          "content": texts[idx],
                                                          "tool_calls": []},
                                "logprobs": None, "finish_reason": req.finish_reason,
                                "stop_reason": None})
            else:
                choices.append({"index": idx, "text": texts[idx], "logprobs": None,
                                "finish_reason": req.finish_reason, "stop_reason": None,
                                "prompt_logprobs": None})
        self._send(200, {"id": rid, "object": "chat.completion" if chat else "text_completion",
                         "created": created, "model": self.sim.served_name,
                         "choices": choices, "usage": self._usage(reqs)})

    def _chunk(self, payload):
        data = ("data: %s\n\n" % json.dumps(payload, separators=(",", ":"))).encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(self, chat, rid, created, reqs, events, include_usage):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Jetson-Simulated", self.sim.sim_header)
        self.end_headers()
        obj = "chat.completion.chunk" if chat else "text_completion"
        head = {"id": rid, "object": obj, "created": created, "model": self.sim.served_name}
        if chat:  # vLLM opens every chat stream with the assistant role
            for idx in range(len(reqs)):
                self._chunk(dict(head, choices=[{"index": idx, "delta": {
                    "role": "assistant", "content": ""}, "logprobs": None,
                    "finish_reason": None}]))
        for idx, text, _n, fin in self._wait_events(reqs, events):
            if chat:
                choice = {"index": idx, "delta": {"content": text}, "logprobs": None,
                          "finish_reason": fin}
                if fin is not None:
                    choice["stop_reason"] = None
                self._chunk(dict(head, choices=[choice]))
            else:
                self._chunk(dict(head, choices=[{"index": idx, "text": text, "logprobs": None,
                                                 "finish_reason": fin, "stop_reason": None}],
                                 usage=None))
        if include_usage:
            self._chunk(dict(head, choices=[], usage=self._usage(reqs)))
        data = b"data: [DONE]\n\n"
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        self.wfile.flush()
