"""Continuous-batching engine driven by a roofline timing model.

One engine step (all running requests together):
  verify  = max(target_weight_bytes / (bandwidth * efficiency),
                tokens_in_step * target_compute_s_per_token) + step_overhead
  draft   = k * (max(draft_weight_bytes / (bw * eff), n_seqs * draft_compute) + draft_overhead)
  prefill = prompt_tokens * prefill_s_per_token   (added when a new request joins)
tokens_in_step counts every position the target verifies (1 per sequence without
speculation, k+1 with it). At concurrency 1 the k+1 positions stay memory-bound, so
the single-stream speedup is Leviathan's (1 - a^(k+1)) / ((1 - a)(1 + k c)); with many
sequences the verified tokens make the step compute-bound and speculation can lose.
"""
import random
import threading
import time

from .noise import Noise

WORDS = ("the", "board", "runs", "a", "model", "on", "unified", "memory", "and", "tokens",
         "flow", "through", "its", "GPU", "while", "drafts", "are", "checked", "in", "one",
         "pass", "so", "latency", "drops", "when", "bandwidth", "is", "the", "limit", ".")


class TimingModel(object):
    def __init__(self, profile, target, spec):
        bw = float(profile.memory_bandwidth_bytes_per_s) * float(profile.bandwidth_efficiency)
        self.target_mem_s = target.weight_bytes / bw
        self.target_cpt = self._compute(profile, target)
        self.prefill_per_token = target.params_b * float(profile.prefill_s_per_token_per_bparam)
        self.overhead = float(profile.step_overhead_s)
        self.spec = spec
        self.k = spec.k if spec else 0
        self.draft_mem_s = 0.0
        self.draft_cpt = 0.0
        self.draft_overhead = float(profile.draft_step_overhead_s)
        self.ngram_s = float(profile.ngram_propose_s)
        # A batch-size schedule's own cost (vLLM issue #49548: PIECEWISE cudagraphs, no decode padding; TPOT
        # +6..22 % even at k = 0): this fraction of every decode step's verify time while a schedule is configured.
        self.schedule_overhead = float(profile.speculative_schedule_overhead) if spec is not None and spec.schedule else 0.0
        if spec is not None and spec.draft is not None:
            self.draft_mem_s = spec.draft.weight_bytes / bw
            self.draft_cpt = self._compute(profile, spec.draft)
            self.prefill_per_token += spec.draft.params_b * float(
                profile.prefill_s_per_token_per_bparam)

    @staticmethod
    def _compute(profile, model):
        if model.compute_s_per_token is not None:
            return float(model.compute_s_per_token)
        return model.params_b * float(profile.decode_compute_s_per_token_per_bparam)

    def verify_s(self, tokens):
        return max(self.target_mem_s, tokens * self.target_cpt) + self.overhead

    def draft_s(self, n_seqs, k=None):
        k = self.k if k is None else k
        if self.spec is None:
            return 0.0
        if self.spec.draft is None:  # ngram: a CPU lookup, no model pass
            return self.ngram_s if k else 0.0
        # At k = 0 (a schedule's) vLLM's drafter still runs one forward to keep its KV cache in step (0.32
        # llm_base_proposer.py: "No draft tokens requested (e.g. Dynamic SD decided K=0)"): that cost is part of
        # the profile's speculative_schedule_overhead, with the schedule's other costs.
        return k * (max(self.draft_mem_s, n_seqs * self.draft_cpt) + self.draft_overhead)

    def k_at(self, batch_size):
        """The k of a step scheduling ``batch_size`` requests (prefills included, as vLLM's scheduler counts)."""
        return self.spec.k_at(batch_size) if self.spec is not None else 0

    def decode_step_s(self, n_seqs, k=None):
        k = self.k if k is None else k
        verify = self.verify_s(n_seqs * (k + 1))
        return verify * (1.0 + self.schedule_overhead) + self.draft_s(n_seqs, k)

    def prefill_step_s(self, prompt_tokens, with_decode):
        compute = prompt_tokens * self.prefill_per_token
        if with_decode:
            return compute  # weights are already streamed by the decode pass
        return max(self.target_mem_s, compute) + self.overhead

    def baseline_tpot_s(self):
        """Model-time TPOT of one stream without speculation."""
        return self.target_mem_s + self.overhead

    def leviathan_c(self):
        return self.draft_s(1) / self.k / self.verify_s(1) if self.k else 0.0


class Request(object):
    def __init__(self, rid, prompt_tokens, max_tokens, eos_after=None, sink=None):
        self.rid = rid
        self.prompt_tokens = int(prompt_tokens)
        self.max_tokens = int(max_tokens)
        self.eos_after = eos_after  # tokens after which the "model" emits EOS (None: ignore_eos)
        self.sink = sink  # callable(request, text, n_tokens, finish_reason) from the engine thread
        self.arrival = None
        self.scheduled = None
        self.first_token = None
        self.last_token = None
        self.finished_at = None
        self.generated = 0
        self.prefilled = False
        self.blocks = 0
        self.finish_reason = None
        self.aborted = False
        self.chunks = []  # (time, n_tokens)
        self.token_seed = rid  # the server sets it from the prompt: the same prompt, the same answer
        self.garble_from = None  # fault `garble`: the answer's tokens from this position on are wrong
        self.accept_scale = 1.0  # per-request acceptance variation (noise.Noise)
        self.prompt_accept_scale = 1.0  # what the prompt does to acceptance (profile prompt_acceptance)

    def limit(self):
        if self.eos_after is not None and self.eos_after < self.max_tokens:
            return self.eos_after, "stop"
        return self.max_tokens, "length"


class RealClock(object):
    def now(self):
        return time.monotonic()

    def sleep_until(self, deadline):
        delay = deadline - time.monotonic()
        if delay > 0:
            time.sleep(delay)


class VirtualClock(object):
    """Deterministic time for in-process accuracy tests (no sleeping)."""

    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t

    def sleep_until(self, deadline):
        self.t = max(self.t, deadline)


class Engine(object):
    def __init__(self, profile, target, spec, max_num_seqs=256, num_blocks=10 ** 9,
                 block_size=16, clock=None, scale=None, metrics=None, seed=None, noise=None):
        self.timing = TimingModel(profile, target, spec)
        self.spec = spec
        self.max_num_seqs = int(max_num_seqs)
        self.num_blocks = int(num_blocks)
        self.free_blocks = int(num_blocks)
        self.block_size = int(block_size)
        self.clock = clock or RealClock()
        self.scale = float(profile.time_scale if scale is None else scale)
        self.metrics = metrics
        self.rng = random.Random(profile.seed if seed is None else seed)
        self.noise = Noise(noise)
        self.waiting = []
        self.running = []
        self.finished_count = 0
        self.cv = threading.Condition()
        self.stopped = False
        self.stalled = False
        self.stall = None  # (after_requests, after_tokens)
        self.power = None  # board_sysfs.PowerModel: the draw of each step, for the board's power rails

    # ---- request side (any thread) -------------------------------------------------
    def add(self, req):
        with self.cv:
            req.arrival = self.clock.now()
            self.waiting.append(req)
            self.cv.notify_all()

    def abort(self, req):
        with self.cv:
            req.aborted = True
            if req in self.waiting:
                self.waiting.remove(req)
            if req in self.running:
                self._release(req)

    def stop(self):
        with self.cv:
            self.stopped = True
            self.cv.notify_all()

    def kv_usage(self):
        return 0.0 if not self.num_blocks else 1.0 - self.free_blocks / float(self.num_blocks)

    # ---- one step ---------------------------------------------------------------------
    def _admit(self):
        while self.waiting and len(self.running) < self.max_num_seqs:
            req = self.waiting[0]
            need = -(-(req.prompt_tokens + req.max_tokens) // self.block_size)
            if need > self.free_blocks and self.running:
                break  # wait for blocks to free up, as the scheduler would
            self.waiting.pop(0)
            req.blocks = min(need, self.free_blocks)
            self.free_blocks -= req.blocks
            req.scheduled = self.clock.now()
            self.noise.admit()
            req.accept_scale = self.noise.acceptance_scale() * req.prompt_accept_scale
            self.running.append(req)

    def plan(self):
        """Choose the batch of the next step and its model-time duration."""
        self._admit()
        prefill = [r for r in self.running if not r.prefilled]
        decode = [r for r in self.running if r.prefilled]
        duration = 0.0
        if decode:
            duration += self.timing.decode_step_s(len(decode), self.timing.k_at(len(prefill) + len(decode)))
        if prefill:
            duration += self.timing.prefill_step_s(sum(r.prompt_tokens for r in prefill),
                                                   bool(decode))
        return prefill, decode, self.noise.step(duration)

    def _draw_accepted(self, scale=1.0, k=None):
        """Rejection sampling: position i counts only if every earlier one was accepted."""
        k = self.spec.k if k is None else k
        accepted = 0
        curve = self.spec.alpha if isinstance(self.spec.alpha, list) else [self.spec.alpha]
        if scale != 1.0:
            curve = [min(0.99, a * scale) for a in curve]
        while accepted < k and self.rng.random() < curve[min(accepted, len(curve) - 1)]:
            accepted += 1
        return accepted

    def apply(self, prefill, decode, t_end):
        m = self.metrics
        step_tokens = 0
        step_k = self.timing.k_at(len(prefill) + len(decode))
        for req in prefill:
            if req.aborted:
                continue
            req.prefilled = True
            req.first_token = t_end
            if m:
                m.on_prefill(req, t_end)
            step_tokens += req.prompt_tokens
            self._emit(req, 1, t_end)
        for req in decode:
            if req.aborted:
                continue
            n = 1
            if self.spec is not None and step_k:
                accepted = self._draw_accepted(req.accept_scale, step_k)
                n += accepted
                if m:  # a k = 0 step drafts nothing and counts nothing (vLLM issue #54748)
                    m.on_spec_step(step_k, accepted)
            step_tokens += n
            self._emit(req, n, t_end)
        if m:
            m.on_iteration(step_tokens)
        self._check_stall()

    def _emit(self, req, n, t):
        limit, reason = req.limit()
        n = min(n, limit - req.generated)
        if n <= 0:
            return
        if req.last_token is not None and self.metrics:
            self.metrics.on_itl(t - req.last_token)
        req.generated += n
        req.last_token = t
        req.chunks.append((t, n))
        done = req.generated >= limit
        if self.metrics:
            self.metrics.on_tokens(n)
        text = self.token_text(req, req.generated - n, n)
        if done:
            req.finish_reason = reason
            req.finished_at = t
            self._release(req)
            self.finished_count += 1
            if self.metrics:
                self.metrics.on_finished(req)
        if req.sink:
            req.sink(req, text, n, req.finish_reason if done else None)

    def _release(self, req):
        if req in self.running:
            self.running.remove(req)
            self.free_blocks += req.blocks

    def _check_stall(self):
        if self.stall is None or self.stalled:
            return
        after_requests, after_tokens = self.stall
        if self.finished_count >= after_requests and any(
                r.generated >= after_tokens for r in self.running):
            self.stalled = True

    @staticmethod
    def token_text(req, start, n):
        """The "greedy answer": a function of the prompt (token_seed) and the position only, so two
        servers answer a prompt alike at temperature 0, as real speculative decoding does; the
        fault ``garble`` replaces every token from ``garble_from`` on with another word (a lossy
        config accepting drafts the target did not verify)."""
        out = []
        for i in range(start, start + n):
            j = (req.token_seed * 7 + i) % len(WORDS)
            word = WORDS[j]
            if req.garble_from is not None and i >= req.garble_from:
                k = (j + 1 + i % (len(WORDS) - 1)) % len(WORDS)
                while WORDS[k] == word:  # never the right word ("the" is in WORDS twice)
                    k = (k + 1) % len(WORDS)
                word = WORDS[k]
            out.append(" " + word)
        return "".join(out)

    # ---- drivers ------------------------------------------------------------------------
    def run_forever(self):
        """Real-clock loop for the HTTP server (runs in its own thread)."""
        next_start = None
        while True:
            with self.cv:
                while not self.stopped and (self.stalled or not (self.waiting or self.running)):
                    next_start = None
                    if self.power:
                        self.power.step(0, False)
                    self.cv.wait(1.0)
                if self.stopped:
                    return
                prefill, decode, duration = self.plan()
            if self.power:
                self.power.step(len(prefill) + len(decode), self.spec is not None and bool(decode))
            now = self.clock.now()
            # Keep steps back to back (absolute deadlines) so sleep overshoot on a busy host
            # does not add up; restart the timeline only after an idle gap (next_start is
            # reset while waiting) or if this thread fell far behind.
            start = next_start if next_start is not None and now - next_start < 0.25 else now
            end = start + duration * self.scale
            self.clock.sleep_until(end)
            with self.cv:
                self.apply(prefill, decode, end)
            next_start = end


def simulate(engine, concurrency, num_requests, prompt_tokens, max_tokens, ignore_eos=True):
    """Closed-loop benchmark on a VirtualClock, like `vllm bench serve --max-concurrency`.

    Returns the finished requests; times are model seconds.
    """
    clock = engine.clock
    done = []
    issued = [0]

    def submit():
        rid = issued[0]
        issued[0] += 1
        req = Request(rid, prompt_tokens, max_tokens,
                      None if ignore_eos else max_tokens)
        engine.add(req)
        return req

    in_flight = [submit() for dummy in range(min(concurrency, num_requests))]
    while in_flight:
        prefill, decode, duration = engine.plan()
        end = clock.now() + duration
        clock.sleep_until(end)
        engine.apply(prefill, decode, end)
        for req in list(in_flight):
            if req.finish_reason is not None:
                in_flight.remove(req)
                done.append(req)
                if issued[0] < num_requests:
                    in_flight.append(submit())
    return done


def summarize(requests):
    """Client-side numbers computed as `vllm bench serve` does (TPOT excludes the first token)."""
    start = min(r.arrival for r in requests)
    end = max(r.finished_at for r in requests)
    out = sum(r.generated for r in requests)
    tpots = [(r.finished_at - r.first_token) / (r.generated - 1) for r in requests
             if r.generated > 1]
    tpots.sort()
    return {
        "output_throughput": out / (end - start),
        "mean_tpot_s": sum(tpots) / len(tpots),
        "median_tpot_s": tpots[len(tpots) // 2],
        "mean_ttft_s": sum(r.first_token - r.arrival for r in requests) / len(requests),
        "output_tokens": out,
    }
