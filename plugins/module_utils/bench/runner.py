# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The vllm_bench run: discovery, probe, warmup, concurrency levels, result.

Standard library only.  A level is a fixed pool of ``concurrency`` threads
pulling from a list of ``num_prompts`` requests (like ``vllm bench serve
--max-concurrency``).  One global deadline bounds everything; requests not
started before it are recorded as failed with reason ``deadline``.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json
import random
import ssl
import sys
import threading
import time

from ansible_collections.jetson.specdec.plugins.module_utils.bench import client as bc
from ansible_collections.jetson.specdec.plugins.module_utils.bench import datasets as bench_datasets
from ansible_collections.jetson.specdec.plugins.module_utils.bench import prometheus as bp
from ansible_collections.jetson.specdec.plugins.module_utils.bench import prompts as bench_prompts
from ansible_collections.jetson.specdec.plugins.module_utils.bench.stats import request_evidence, summarize_level
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import power

perf_counter = time.perf_counter
SIM_HEADER = "x-jetson-simulated"
# Wake-up latency of a thread whose recv() returned is bounded by the GIL
# switch interval (5 ms by default): far too coarse for per-chunk timing.
SWITCH_INTERVAL = 0.0002

CATEGORY_PROMPTS = 4  # requests per category in the acceptance-by-category pass

DEFAULTS = {
    "url": "http://127.0.0.1:8000", "model": None, "api_key": None,
    "endpoint": "completions", "concurrency": [1, 8], "num_prompts": 50,
    "warmup_prompts": 10, "input_len": 2048, "output_len": 128, "seed": 0, "prompt_set": 0,
    "request_timeout": 300.0, "max_duration": 3600.0, "max_failed_ratio": 0.1,
    "prompt_token_ids_range": [10, 500], "power_mode": None, "output_range_ratio": 0.0,
    "ca_path": None, "validate_certs": True,
    "dataset": None,  # a parsed prompt file (bench/datasets.py) instead of synthetic prompts
    # A callable returning one reading of the board's conditions (jetson/conditions.py), taken
    # before the round and after each level; None: not sampled.
    "sampler": None,
    # A jetson/power.py PowerMeter, started before each level's first request and stopped after
    # its last: the level's average power and joules per output token; None: not metered.
    "power_meter": None,
    # Poll the server's queue gauges during each level (TrafficWatch): foreign traffic is reported.
    "watch_traffic": False,
    # A bench/progress.py Progress told of every step and finished request; None: not reported.
    "progress": None,
    # The greedy answers ({prompts, max_tokens, passes}) for the equivalence check
    # (bench/equivalence.py), collected after the levels on the same server; None: not collected.
    "answers": None,
}
ANSWER_WORDS = 48  # words of a synthetic answer prompt (the same for every arm: no calibration)
ANSWER_PROMPT_CHARS = 200  # of each prompt kept in the result (the report's examples clip further)


def _reserve(max_duration):
    """Time kept back from max_duration to assemble and return the result."""
    return min(2.0, 0.05 * max_duration)


def discover(target, timeout):
    """Read /v1/models (required), /version (optional) and the sim header."""
    models_url = target.url + "/v1/models"
    try:
        status, headers, body = bc.get(target, "/v1/models", timeout)
    except Exception as exc:  # any transport failure: name the URL
        hint = ""
        if isinstance(exc, ssl.SSLCertVerificationError):
            hint = (" Set ca_path to the CA bundle that signed the server's certificate, or validate_certs=false "
                    "to skip the check.")
        raise bc.BenchError("cannot reach the vLLM server at %s: %s.%s" % (
            models_url, str(exc) or type(exc).__name__, hint))
    if status != 200:
        raise bc.BenchError("%s answered HTTP %d: %s" % (models_url, status, body[:200]))
    try:
        data = json.loads(body).get("data") or []
    except (ValueError, AttributeError):
        raise bc.BenchError("%s did not return a JSON model list" % models_url)
    info = {"models": data, "simulated": headers.get(SIM_HEADER), "version": None}
    try:
        st, _h, vbody = bc.get(target, "/version", min(timeout, 5.0))
        if st == 200:
            info["version"] = json.loads(vbody).get("version")
    except Exception:  # /version is optional (older or non-vLLM servers)
        pass
    return info


def scrape_spec(target, timeout, model):
    """Spec-decode counters now, or None (no counters, or /metrics failed)."""
    if timeout <= 0:
        return None
    try:
        status, _h, body = bc.get(target, "/metrics", min(timeout, 10.0))
    except Exception:
        return None
    if status != 200:
        return None
    return bp.spec_decode_snapshot(bp.parse_text(body), model)


def request_seed(seed, prompt_set=0):
    """The base of the measured requests' seeds: ``seed`` picks the workload, ``prompt_set`` which of its sets
    of prompts (and output lengths) a run draws.  Set 0 is the set a plain ``seed`` always drew.  The rollout
    measures the i-th baseline round and the i-th candidate round on set i: each pair of rounds meets other
    prompts of the workload, and the two arms of a pair meet the same ones (docs/verdict.md)."""
    return (int(seed) + int(prompt_set) * 100003) * 1000003


class TrafficWatch(object):
    """Watches the server's own queue gauges while a level runs: requests besides the benchmark's.

    The benchmark assumes an idle server. vLLM's ``vllm:num_requests_running`` + ``num_requests_waiting``
    above the level's concurrency (the most requests the benchmark itself can have in flight) is traffic
    from someone else: that level measured a shared server, and the verdict sets its round aside."""

    def __init__(self, target, model, concurrency, deadline, interval=0.5):
        self.target, self.model, self.concurrency = target, model, int(concurrency)
        self.deadline, self.interval = deadline, float(interval)
        self.peak, self.polls, self.seen = 0, 0, False
        self._stop, self._thread = threading.Event(), None

    def poll(self):
        left = self.deadline - perf_counter()
        if left <= 0:
            return
        try:
            status, _h, body = bc.get(self.target, "/metrics", min(left, 2.0))
        except Exception:  # the watch is evidence about the level, never a reason to fail it
            return
        queue = bp.queue_snapshot(bp.parse_text(body), self.model) if status == 200 else None
        if queue is None:
            return
        self.polls += 1
        self.seen = True
        self.peak = max(self.peak, queue[0] + queue[1])

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.poll()

    def start(self):
        self._thread = threading.Thread(target=self._loop, name="traffic-watch")
        self._thread.daemon = True
        self._thread.start()

    def stop(self):
        """{peak_requests, foreign_requests, polls}, or None when the server exposes no queue gauges."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if not self.seen:
            return None
        return {"peak_requests": self.peak, "foreign_requests": max(0, self.peak - self.concurrency),
                "polls": self.polls}


def run_pool(target, endpoint, payloads, concurrency, request_timeout, deadline,
             client_cls=bc.StreamClient, on_done=None):
    """Send ``payloads`` with ``concurrency`` workers; return (records, duration).

    ``on_done`` (optional) is called with no argument after each request ends, from the worker."""
    n = len(payloads)
    records = [None] * n
    lock = threading.Lock()
    state = {"next": 0}

    workers = max(1, min(concurrency, n))
    # Connect first, then release all streams at once, as vLLM's asyncio
    # client does: threads started one by one, each with its own handshake,
    # gave the first stream a head start of about 3 ms (measured), and a
    # server that is idle prefills whatever arrives first alone.
    start_line = threading.Barrier(workers)

    def worker():
        client = client_cls(target, endpoint)
        try:
            client.preconnect(deadline)
            try:
                start_line.wait(max(0.001, deadline - perf_counter()))
            except threading.BrokenBarrierError:
                pass  # a worker that never got ready must not hold the others
            while True:
                with lock:
                    i = state["next"]
                    if i >= n:
                        return
                    state["next"] = i + 1
                if perf_counter() >= deadline:
                    records[i] = {"ok": False, "reason": "deadline"}
                    continue
                try:
                    records[i] = client.stream(payloads[i], request_timeout, deadline)
                except Exception as exc:  # a bug must not hang or kill the run
                    records[i] = {"ok": False, "reason": "client_error", "detail": repr(exc)[:300]}
                if on_done is not None:
                    on_done()
        finally:
            client.close()

    threads = [threading.Thread(target=worker, name="vllm-bench-%d" % k)
               for k in range(workers)]
    for t in threads:
        t.daemon = True  # a stuck socket must never keep the module alive
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - perf_counter()) + 1.0)
    for i in range(n):
        if records[i] is None:
            records[i] = {"ok": False, "reason": "deadline"}
    starts = [r["start"] for r in records if "start" in r]
    finishes = [r["finish"] for r in records if "finish" in r]
    duration = (max(finishes) - min(starts)) if starts and finishes else 0.0
    return records, duration


def _clamp_lengths(cfg, max_model_len, warnings):
    """(input_len, output_len) so that the longest request fits max_model_len."""
    inp, out = cfg["input_len"], cfg["output_len"]
    ratio = cfg["output_range_ratio"]
    longest = bench_prompts.output_len_bounds(out, ratio)[1]
    if max_model_len and inp + longest > max_model_len:
        if longest >= max_model_len:
            out = max(1, int(max_model_len // 2 / (1 + ratio)))
            longest = bench_prompts.output_len_bounds(out, ratio)[1]
        inp = max(1, max_model_len - longest)
        warnings.append("input_len + output_len (%d + %d, output range ratio %g) exceeds the server's "
                        "max_model_len %d; using input_len=%d output_len=%d"
                        % (cfg["input_len"], cfg["output_len"], ratio, max_model_len, inp, out))
    return inp, out


class Benchmark(object):
    """Holds one run's settings and state; ``run()`` returns (result, failure)."""

    def __init__(self, cfg, client_cls=bc.StreamClient):
        self.cfg = dict(DEFAULTS)
        self.cfg.update(dict((k, v) for k, v in cfg.items() if v is not None))
        self.client_cls = client_cls
        self.warnings = []
        self.conditions = []
        self.prompt_kind = "token_ids"
        self.words = None
        self.seed_counter = 0
        self.dataset_used = 0
        self.progress = self.cfg["progress"]
        # A fresh salt per run: see bench_prompts.salt_prompts (prefix cache).
        self.salt = random.SystemRandom().getrandbits(31)

    def _payloads(self, count):
        """(request bodies, their output lengths) for ``count`` fresh requests.

        Each call draws from its own seed, so no two requests of a run share
        a prompt (no prefix-cache hits); the output lengths come from the
        same seed, so a seed decides the whole workload."""
        self.seed_counter += 1
        seed = (request_seed(self.cfg["seed"], self.cfg["prompt_set"]) + self.seed_counter) & 0x7FFFFFFF
        if self.cfg["dataset"]:
            return self._dataset_payloads(count, seed)
        if self.prompt_kind == "token_ids":
            prompts = bench_prompts.token_id_prompts(count, self.input_len, seed,
                                                     self.cfg["prompt_token_ids_range"])
        else:
            prompts = bench_prompts.text_prompts(count, self.words, seed)
        prompts = bench_prompts.salt_prompts(prompts, self.salt * 1000003 + seed,
                                             self.cfg["prompt_token_ids_range"])
        lengths = self._output_lengths(count, seed)
        return ([bc.build_payload(self.cfg["endpoint"], self.model, p, n)
                 for p, n in zip(prompts, lengths)], lengths)

    def _dataset_payloads(self, count, seed):
        """The operator's prompts as written (no salt: vllm bench serve sends them unchanged),
        each with its own output length when the file gives one."""
        return self._item_payloads(bench_datasets.sample_prompts(self.cfg["dataset"], count, seed))

    def _item_payloads(self, items):
        lengths = [bench_datasets.request_output_len(item, self.output_len) for item in items]
        self.dataset_used += len(items)
        return ([bc.build_payload(self.cfg["endpoint"], self.model, item["prompt"], n)
                 for item, n in zip(items, lengths)], lengths)

    def _output_lengths(self, count, seed):
        """Output length of each of ``count`` requests (a seam: the quality
        harness gives both clients one workload through it)."""
        return bench_prompts.output_lengths(count, self.output_len,
                                            self.cfg["output_range_ratio"], seed)

    def _probe(self):
        """One discarded request: checks token-id prompts, calibrates text."""
        rec = self._one()
        if self.prompt_kind == "token_ids" and not rec["ok"] and \
                (rec.get("reason") or "").startswith("http_4"):
            self.warnings.append("the server rejected token-id prompts (%s); using text prompts "
                                 "of about %d tokens instead" % (rec["reason"], self.input_len))
            self.prompt_kind = "text"
            rec = self._one()
        if self.prompt_kind == "text" and rec["ok"] and rec.get("prompt_tokens"):
            self.words = bench_prompts.scale_text_words(self.words, self.input_len,
                                                        int(rec["prompt_tokens"]))
        return rec

    def _one(self):
        client = self.client_cls(self.target, self.cfg["endpoint"])
        try:
            return client.stream(self._payloads(1)[0][0], self.cfg["request_timeout"], self.deadline)
        finally:
            client.close()
            self._done()

    def _step(self, step, total, concurrency=None, level=None, extra_total=0):
        if self.progress is not None:
            self.progress.step(step, total, concurrency, level, extra_total)

    def _done(self):
        if self.progress is not None:
            self.progress.request_done()

    def run(self):
        cfg = self.cfg
        t0 = perf_counter()
        self.deadline = t0 + cfg["max_duration"] - _reserve(cfg["max_duration"])
        self.target = bc.Target(cfg["url"], cfg.get("api_key"), cfg.get("ca_path"),
                                cfg.get("validate_certs", True))
        info = discover(self.target, max(0.5, min(cfg["request_timeout"], 10.0,
                                                  self.deadline - perf_counter())))
        models = info["models"]
        if not models and not cfg.get("model"):
            raise bc.BenchError("%s/v1/models lists no model" % self.target.url)
        self.model = cfg.get("model") or models[0].get("id")
        entry = next((m for m in models if m.get("id") == self.model), models[0] if models else {})
        max_model_len = entry.get("max_model_len")
        self.input_len, self.output_len = _clamp_lengths(cfg, max_model_len, self.warnings)
        if cfg["endpoint"] == "chat":
            self.prompt_kind = "text"
        if cfg["dataset"]:
            try:
                bench_datasets.check_prompt_lengths(cfg["dataset"], max_model_len)
            except bench_datasets.DatasetError as exc:
                raise bc.BenchError(str(exc))
            self.prompt_kind = "dataset"
        self.words = self.input_len
        if info["simulated"]:
            self.warnings.append("the server is simulated (X-Jetson-Simulated: %s); numbers do not "
                                 "describe real hardware" % info["simulated"])
        pm = cfg.get("power_mode")
        if pm and not str(pm).upper().startswith("MAXN"):
            self.warnings.append("power mode is %s; MAXN/MAXN_* preferred for comparable results" % pm)

        self._sample("before")
        old_switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        try:
            self._step("probe", 1)
            probe = self._probe()
            runs, total_raw, all_records = self._levels()
            by_category = self._category_acceptance()
            answers = self._answers()
        finally:
            sys.setswitchinterval(old_switch)
            if self.progress is not None:
                self.progress.finish()
        result = {
            "runs": runs,
            "spec_decode": bp.finish_spec_decode(total_raw),
            "server": {"version": info["version"], "model": self.model,
                       "max_model_len": max_model_len},
            "simulated": info["simulated"],
            "config": {"input_len": self.input_len, "output_len": self.output_len,
                       "num_prompts": cfg["num_prompts"], "warmup_prompts": cfg["warmup_prompts"],
                       "output_range_ratio": cfg["output_range_ratio"],
                       "endpoint": cfg["endpoint"], "seed": cfg["seed"], "prompt_set": cfg["prompt_set"],
                       "concurrency": list(cfg["concurrency"]), "prompt_kind": self.prompt_kind},
            "warnings": self.warnings,
            # the whole step on the board (discovery, probe, warm-up, levels, answers): the verdict's time
            # budget counts this, not only the levels' own durations
            "wall_s": round(perf_counter() - t0, 3),
        }
        if cfg.get("sampler") is not None:
            result["conditions"] = self.conditions
        if answers is not None:
            result["answers"] = answers
        if cfg["dataset"]:
            result["workload"] = bench_datasets.describe(cfg["dataset"])
            result["workload"]["requests_sent"] = self.dataset_used
            if by_category:
                result["workload"]["acceptance_by_category"] = by_category
        else:
            result["workload"] = {"name": "synthetic", "format": self.prompt_kind,
                                  "prompt_token_ids_range": list(cfg["prompt_token_ids_range"])}
        if not probe["ok"]:
            self.warnings.append("the probe request failed (%s)" % probe.get("reason"))
        return result, self._judge(runs, all_records)

    def _sample(self, when):
        """One reading of the board's conditions, labelled; a failing sensor read is a warning."""
        sampler = self.cfg.get("sampler")
        if sampler is None:
            return
        try:
            reading = dict(sampler())
        except Exception as exc:  # conditions are evidence about the round, never a reason to fail it
            self.warnings.append("could not read the board's conditions %s: %s" % (when, exc))
            return
        reading["when"] = when
        self.conditions.append(reading)

    def _watch(self, conc):
        """A started TrafficWatch for this level (with one poll first: traffic already there), or None."""
        if not self.cfg.get("watch_traffic"):
            return None
        watch = TrafficWatch(self.target, self.model, conc, self.deadline)
        watch.poll()
        watch.start()
        return watch

    def _meter(self, what, conc):
        """Start or stop the level's power meter; a failing sensor is a warning, never a failed level."""
        meter = self.cfg.get("power_meter")
        if meter is None:
            return None
        try:
            return meter.start() if what == "start" else meter.stop()
        except Exception as exc:  # energy is evidence about the level, never a reason to fail it
            self.warnings.append("could not read the board's power rails at concurrency %d: %s" % (conc, exc))
            return None

    def _category_acceptance(self):
        """Acceptance per category of a file that has categories, or None.

        The server's counters are global, so each category gets its own short pass at
        concurrency 1 (not timed, not part of any level) with a scrape on each side."""
        groups = bench_datasets.by_category(self.cfg["dataset"]) if self.cfg["dataset"] else {}
        if not groups:
            return None
        out = {}
        for category in sorted(groups):
            before = scrape_spec(self.target, self.deadline - perf_counter(), self.model)
            if before is None:
                return None  # speculation off: there is no acceptance to split
            items = groups[category][:CATEGORY_PROMPTS]
            self._step("categories", len(items), 1, extra_total=len(items))
            records, dummy = run_pool(self.target, self.cfg["endpoint"], self._item_payloads(items)[0], 1,
                                      self.cfg["request_timeout"], self.deadline, self.client_cls, self._done)
            after = scrape_spec(self.target, self.deadline - perf_counter(), self.model)
            spec = bp.finish_spec_decode(bp.spec_decode_delta(before, after))
            if spec is not None:
                spec["requests"] = sum(1 for r in records if r.get("ok"))
            out[category] = spec
        return out

    def _answer_prompts(self, count):
        """The prompts of the equivalence check: the same on every arm and round (a fixed seed, no salt)."""
        seed = int(self.cfg["seed"]) & 0x7FFFFFFF
        if self.cfg["dataset"]:
            items = list(self.cfg["dataset"]["prompts"])
            random.Random(seed).shuffle(items)
            return [item["prompt"] for item in items[:count]]
        return bench_prompts.text_prompts(count, ANSWER_WORDS, seed)

    def _answer_pass(self, prompts, max_tokens):
        """One pass: the greedy answer of each prompt (temperature 0, the run's seed, no stream).

        The completions endpoint takes every prompt in one request (the server batches them);
        chat asks one prompt at a time. Raises bench_client.BenchError with the server's words."""
        seed = int(self.cfg["seed"])
        base = {"model": self.model, "temperature": 0, "seed": seed, "max_tokens": max_tokens, "stream": False}
        if self.cfg["endpoint"] == "chat":
            bodies = [dict(base, messages=[{"role": "user", "content": p}], max_completion_tokens=max_tokens)
                      for p in prompts]
            suffix = "/v1/chat/completions"
        else:
            bodies = [dict(base, prompt=list(prompts))]
            suffix = "/v1/completions"
        texts = []
        for body in bodies:
            left = min(self.cfg["request_timeout"], self.deadline - perf_counter())
            if left <= 0:
                raise bc.BenchError("no time left for the answers (max_duration)")
            try:
                status, text = bc.post_json(self.target, suffix, body, left)
            except Exception as exc:  # any transport failure: say which
                raise bc.BenchError("%s: %s" % (type(exc).__name__, str(exc)[:200]))
            if status != 200:
                raise bc.BenchError("HTTP %d: %s" % (status, text[:300]))
            try:
                choices = sorted(json.loads(text)["choices"], key=lambda c: c.get("index", 0))
                if self.cfg["endpoint"] == "chat":
                    texts.append(choices[0]["message"]["content"] or "")
                else:
                    texts.extend(c["text"] for c in choices)
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                raise bc.BenchError("the answer is not a completion: %s" % text[:300])
        if len(texts) != len(prompts):
            raise bc.BenchError("%d answers for %d prompts" % (len(texts), len(prompts)))
        return texts

    def _answers(self):
        """The greedy answers for the equivalence check, or None when not asked for.

        ``passes`` passes over the same prompts (the baseline's second pass is the control: the
        board's own noise). A pass that fails is recorded as the error (and a warning), never a
        failed benchmark: the equivalence check then says it could not compare."""
        spec = self.cfg.get("answers")
        if not spec:
            return None
        prompts = self._answer_prompts(int(spec.get("prompts") or 4))
        max_tokens = int(spec.get("max_tokens") or 32)
        digest = hashlib.sha256(json.dumps([prompts, max_tokens, self.cfg["endpoint"]]).encode("utf-8")).hexdigest()
        out = {"prompts": [p[:ANSWER_PROMPT_CHARS] for p in prompts], "prompts_sha256": digest,
               "max_tokens": max_tokens, "passes": [], "error": None}
        passes = int(spec.get("passes") or 1)
        self._step("answers", passes, extra_total=passes)  # one "request" per pass
        started = perf_counter()
        try:
            for dummy in range(passes):
                out["passes"].append(self._answer_pass(prompts, max_tokens))
                self._done()
        except bc.BenchError as exc:
            out["error"] = str(exc)
            self.warnings.append("the greedy answers for the equivalence check failed after %d passes: %s"
                                 % (len(out["passes"]), exc))
        out["seconds"] = round(perf_counter() - started, 2)
        return out

    def _levels(self):
        cfg = self.cfg
        runs, total_raw, all_records = [], None, []
        for index, conc in enumerate(cfg["concurrency"]):
            conc = int(conc)
            if cfg["warmup_prompts"] > 0:
                self._step("warmup", cfg["warmup_prompts"], conc, index + 1)
                run_pool(self.target, cfg["endpoint"], self._payloads(cfg["warmup_prompts"])[0], conc,
                         cfg["request_timeout"], self.deadline, self.client_cls, self._done)
            self._step("level", cfg["num_prompts"], conc, index + 1)
            payloads, lengths = self._payloads(cfg["num_prompts"])
            before = scrape_spec(self.target, self.deadline - perf_counter(), self.model)
            watch = self._watch(conc)
            t_level = perf_counter()
            self._meter("start", conc)
            records, duration = run_pool(self.target, cfg["endpoint"], payloads, conc,
                                         cfg["request_timeout"], self.deadline, self.client_cls, self._done)
            energy = self._meter("stop", conc)
            traffic = watch.stop() if watch is not None else None
            after = scrape_spec(self.target, self.deadline - perf_counter(), self.model)
            for rec, length in zip(records, lengths):
                rec["expected_output_tokens"] = length
            raw = bp.spec_decode_delta(before, after)
            total_raw = bp.add_raw(total_raw, raw)
            run = summarize_level(conc, records, duration)
            run["spec_decode"] = bp.finish_spec_decode(raw)
            run["requests"] = request_evidence(records, t_level)
            if cfg.get("power_meter") is not None:
                run["power"] = power.per_token(energy, run["output_tokens"])
            if watch is not None:
                run["traffic"] = traffic
                if traffic and traffic["foreign_requests"]:
                    self.warnings.append(
                        "foreign traffic at concurrency %d: up to %d requests ran or waited on the server, %d more than "
                        "the benchmark sends (drain the board before its rollout; the verdict sets this round aside)"
                        % (conc, traffic["peak_requests"], traffic["foreign_requests"]))
            self._sample("after concurrency %d" % conc)
            runs.append(run)
            all_records.extend(records)
        return runs, total_raw, all_records

    def _judge(self, runs, records):
        """Add warnings; return a failure message when too many requests failed."""
        ok = [r for r in records if r.get("ok")]
        if ok and any(not r.get("usage") for r in ok):
            self.warnings.append("the server sent no usage chunk for some requests; their output "
                                 "tokens were counted as chunks (undercounts under speculation)")
        short = [r for r in ok if r.get("usage")
                 and r["output_tokens"] < r.get("expected_output_tokens", self.output_len)]
        if short:
            self.warnings.append("%d requests returned fewer tokens than they asked for (max_tokens "
                                 "with ignore_eos; ignore_eos not honoured?)" % len(short))
        errors = {}
        for run in runs:
            for reason, count in run["errors"].items():
                errors[reason] = errors.get(reason, 0) + count
        failed = sum(errors.values())
        total = len(records)
        if not failed:
            return None
        ratio = float(failed) / total if total else 1.0
        text = ", ".join("%s: %d" % (k, errors[k]) for k in sorted(errors, key=lambda k: -errors[k]))
        self.warnings.append("%d of %d requests failed (%s)" % (failed, total, text))
        if ratio > self.cfg["max_failed_ratio"]:
            return ("%d of %d requests failed (%.1f%% > max_failed_ratio %.1f%%) against %s: %s"
                    % (failed, total, 100 * ratio, 100 * self.cfg["max_failed_ratio"],
                       self.target.url, text))
        return None


def run_benchmark(cfg, client_cls=bc.StreamClient):
    """Entry point for the module: returns (result, failure message or None).

    Raises bench_client.BenchError for problems that prevent any measurement
    (unreachable server, no model)."""
    return Benchmark(cfg, client_cls).run()
