"""Prometheus text exposition in the shape prometheus_client gives vLLM's metrics.

Names, HELP texts and label names follow vllm/v1/metrics/loggers.py and
vllm/v1/spec_decode/metrics.py. Counters are declared without `_total`; as
prometheus_client does, the text shows `<name>_total` plus a `<name>_created` gauge.
Spec-decode counters exist only when speculation is on.
"""
import threading
import time

TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
               7.5, 10.0, 20.0, 40.0, 80.0]
LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
ITERATION_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]


def _one_two_five(limit):
    out, exp = [], 0
    while True:
        for m in (1, 2, 5):
            value = m * 10 ** exp
            if value > limit:
                return out
            out.append(value)
        exp += 1


def _num(value):
    """prometheus_client's floatToGoString."""
    if value == float("inf"):
        return "+Inf"
    return repr(float(value))


def _labels(pairs):
    return "{" + ",".join('%s="%s"' % (k, v) for k, v in pairs) + "}"


class _Family(object):
    def __init__(self, name, kind, help_text):
        self.name, self.kind, self.help = name, kind, help_text
        self.created = time.time()
        self.series = {}  # label tuple -> value or histogram state


class Metrics(object):
    def __init__(self, served_name, spec_k=None, max_model_len=2048, legacy_tpot=False,
                 cache_info=None):
        self.lock = threading.Lock()
        self.base = (("model_name", served_name), ("engine", "0"))
        self.families = []
        self.by_name = {}
        self.gauge_sources = {}
        g, c, h = self._add_gauge, self._add_counter, self._add_histogram
        g("vllm:num_requests_running", "Number of requests in model execution batches.")
        g("vllm:num_requests_waiting", "Number of requests waiting to be processed.")
        g("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.")
        if cache_info is not None:
            g("vllm:cache_config_info", "Information of the LLMEngine CacheConfig")
            self.by_name["vllm:cache_config_info"].series[tuple(
                (k, str(v)) for k, v in sorted(cache_info.items()))] = 1.0
        c("vllm:num_preemptions", "Cumulative number of preemption from the engine.")
        c("vllm:prompt_tokens", "Number of prefill tokens processed.")
        c("vllm:generation_tokens", "Number of generation tokens processed.")
        c("vllm:request_success", "Count of successfully processed requests.")
        token_buckets = _one_two_five(max_model_len)
        h("vllm:request_prompt_tokens", "Number of prefill tokens processed.", token_buckets)
        h("vllm:request_generation_tokens", "Number of generation tokens processed.",
          token_buckets)
        h("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
          ITERATION_BUCKETS)
        h("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.",
          token_buckets)
        h("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
          TTFT_BUCKETS)
        h("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
          ITL_BUCKETS)
        if legacy_tpot:  # hidden from 0.12 on
            h("vllm:time_per_output_token_seconds",
              "Histogram of time per output token in seconds.DEPRECATED: Use "
              "vllm:inter_token_latency_seconds instead.", ITL_BUCKETS)
        h("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
          LATENCY_BUCKETS)
        h("vllm:request_queue_time_seconds",
          "Histogram of time spent in WAITING phase for request.", LATENCY_BUCKETS)
        h("vllm:request_inference_time_seconds",
          "Histogram of time spent in RUNNING phase for request.", LATENCY_BUCKETS)
        h("vllm:request_prefill_time_seconds",
          "Histogram of time spent in PREFILL phase for request.", LATENCY_BUCKETS)
        h("vllm:request_decode_time_seconds",
          "Histogram of time spent in DECODE phase for request.", LATENCY_BUCKETS)
        h("vllm:request_time_per_output_token_seconds",
          "Histogram of time_per_output_token_seconds per request.", ITL_BUCKETS)
        self.spec_k = spec_k
        if spec_k:
            c("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.")
            c("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.")
            c("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.")
            c("vllm:spec_decode_num_accepted_tokens_per_pos",
              "Accepted tokens per draft position.")
            for pos in range(spec_k):
                self.by_name["vllm:spec_decode_num_accepted_tokens_per_pos"].series[
                    self.base + (("position", str(pos)),)] = 0.0
        for fam in self.families:  # series exist from start, as labelled children do in vLLM
            if fam.kind in ("counter", "gauge") and not fam.series and fam.name not in (
                    "vllm:request_success",):
                fam.series[self.base] = 0.0
        for reason in ("stop", "length", "abort"):
            self.by_name["vllm:request_success"].series[
                self.base + (("finished_reason", reason),)] = 0.0

    def _add(self, name, kind, help_text, buckets=None):
        fam = _Family(name, kind, help_text)
        fam.buckets = buckets
        self.families.append(fam)
        self.by_name[name] = fam
        if kind == "histogram":
            fam.series[self.base] = [[0] * (len(buckets) + 1), 0.0, 0]
        return fam

    def _add_gauge(self, name, help_text):
        return self._add(name, "gauge", help_text)

    def _add_counter(self, name, help_text):
        return self._add(name, "counter", help_text)

    def _add_histogram(self, name, help_text, buckets):
        return self._add(name, "histogram", help_text, buckets)

    # ---- updates (called with the engine lock held, from the engine thread) ---------------
    def inc(self, name, amount=1.0, extra=()):
        with self.lock:
            series = self.by_name[name].series
            key = self.base + tuple(extra)
            series[key] = series.get(key, 0.0) + amount

    def observe(self, name, value):
        with self.lock:
            fam = self.by_name[name]
            counts, total, n = fam.series[self.base]
            for i, bound in enumerate(fam.buckets):
                if value <= bound:
                    counts[i] += 1
                    break
            else:
                counts[-1] += 1
            fam.series[self.base] = [counts, total + value, n + 1]

    def on_prefill(self, req, t):
        self.inc("vllm:prompt_tokens", req.prompt_tokens)
        self.observe("vllm:time_to_first_token_seconds", t - req.arrival)

    def on_tokens(self, n):
        self.inc("vllm:generation_tokens", n)

    def on_itl(self, seconds):
        # One sample per engine step per request (a step may carry several tokens).
        self.observe("vllm:inter_token_latency_seconds", seconds)
        if "vllm:time_per_output_token_seconds" in self.by_name:
            self.observe("vllm:time_per_output_token_seconds", seconds)

    def on_iteration(self, tokens):
        if tokens:
            self.observe("vllm:iteration_tokens_total", tokens)

    def on_spec_step(self, k, accepted):
        self.inc("vllm:spec_decode_num_drafts", 1)
        self.inc("vllm:spec_decode_num_draft_tokens", k)
        self.inc("vllm:spec_decode_num_accepted_tokens", accepted)
        for pos in range(accepted):
            self.inc("vllm:spec_decode_num_accepted_tokens_per_pos", 1,
                     (("position", str(pos)),))

    def on_finished(self, req):
        self.inc("vllm:request_success", 1, (("finished_reason", req.finish_reason),))
        self.observe("vllm:e2e_request_latency_seconds", req.finished_at - req.arrival)
        self.observe("vllm:request_queue_time_seconds", req.scheduled - req.arrival)
        self.observe("vllm:request_inference_time_seconds", req.finished_at - req.scheduled)
        self.observe("vllm:request_prefill_time_seconds", req.first_token - req.scheduled)
        self.observe("vllm:request_decode_time_seconds", req.finished_at - req.first_token)
        self.observe("vllm:request_prompt_tokens", req.prompt_tokens)
        self.observe("vllm:request_generation_tokens", req.generated)
        self.observe("vllm:request_params_max_tokens", req.max_tokens)
        if req.generated > 1:
            self.observe("vllm:request_time_per_output_token_seconds",
                         (req.finished_at - req.first_token) / (req.generated - 1))

    # ---- exposition ---------------------------------------------------------------------
    def set_gauge(self, name, value):
        with self.lock:
            self.by_name[name].series[self.base] = float(value)

    def render(self):
        out = []
        with self.lock:
            for fam in self.families:
                shown = fam.name + "_total" if fam.kind == "counter" else fam.name
                out.append("# HELP %s %s" % (shown, fam.help))
                out.append("# TYPE %s %s" % (shown, fam.kind))
                for key, value in fam.series.items():
                    if fam.kind == "histogram":
                        counts, total, n = value
                        running = 0
                        for bound, count in zip(fam.buckets + [float("inf")], counts):
                            running += count
                            out.append("%s_bucket%s %s" % (fam.name, _labels(
                                key + (("le", _num(bound)),)), _num(running)))
                        out.append("%s_count%s %s" % (fam.name, _labels(key), _num(n)))
                        out.append("%s_sum%s %s" % (fam.name, _labels(key), _num(total)))
                    else:
                        out.append("%s%s %s" % (shown, _labels(key), _num(value)))
                if fam.kind in ("counter", "histogram"):
                    out.append("# HELP %s_created %s" % (fam.name, fam.help))
                    out.append("# TYPE %s_created gauge" % fam.name)
                    for key in fam.series:
                        out.append("%s_created%s %s"
                                   % (fam.name, _labels(key), _num(fam.created)))
        return "\n".join(out) + "\n"
