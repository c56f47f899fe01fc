"""bench client / runner logic without a server: URL parsing, refused ports, stream release."""
import socket
import time

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench import client as bc
from ansible_collections.jetson.specdec.plugins.module_utils.bench import runner as br


def test_unreachable_port_is_refused_fast():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    t0 = time.perf_counter()
    client = bc.StreamClient(bc.Target("http://127.0.0.1:%d" % port))
    rec = client.stream(b"{}", 5, time.perf_counter() + 5)
    assert rec["reason"] == "connection_refused" and time.perf_counter() - t0 < 2
    with pytest.raises(bc.BenchError) as err:
        br.run_benchmark({"url": "http://127.0.0.1:%d" % port, "max_duration": 30})
    assert "127.0.0.1:%d" % port in str(err.value)


def test_target_parsing():
    t = bc.Target("https://host.example:8443/v1/", api_key="k")
    assert (t.https, t.host, t.port, t.path("/v1/models")) == (True, "host.example", 8443, "/v1/models")
    assert t.headers["Authorization"] == "Bearer k"
    with pytest.raises(bc.BenchError):
        bc.Target("127.0.0.1:8000")


class _SlowStartClient(object):
    """Stand-in client: worker k takes k * 50 ms to get ready; records when
    each first request is sent."""
    ready_delay = {}
    sent = []

    def __init__(self, target, endpoint):
        self.index = len(self.ready_delay)
        self.ready_delay[self.index] = 0.05 * self.index

    def preconnect(self, end):
        time.sleep(self.ready_delay[self.index])

    def stream(self, body, request_timeout, deadline):
        now = time.perf_counter()
        self.sent.append(now)
        time.sleep(0.3)  # busy: the other payloads need the other workers
        return {"ok": True, "start": now, "finish": time.perf_counter()}

    def close(self):
        pass


def test_runner_releases_a_levels_streams_together():
    # Started one by one, the first stream would get a head start and the
    # server would prefill it alone (a different TTFT); the runner waits
    # until every stream is ready and releases them at once.
    _SlowStartClient.ready_delay, _SlowStartClient.sent = {}, []
    records, _d = br.run_pool(bc.Target("http://127.0.0.1:9"), "completions", [b"{}"] * 4, 4, 5,
                              time.perf_counter() + 10, client_cls=_SlowStartClient)
    assert all(r["ok"] for r in records)
    assert len(_SlowStartClient.sent) == 4
    assert max(_SlowStartClient.sent) - min(_SlowStartClient.sent) < 0.05  # not 150 ms: no stream starts early


def test_preconnect_failure_is_left_to_the_first_request():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = bc.StreamClient(bc.Target("http://127.0.0.1:%d" % port))
    client.preconnect(time.perf_counter() + 1)
    assert client.conn is None
    rec = client.stream(b"{}", 1, time.perf_counter() + 2)
    assert not rec["ok"] and rec["reason"] == "connection_refused"


class _ScriptedClient(object):
    """Stand-in client: every third request fails, the others take 20 ms and return 5 tokens."""
    count = [0]

    def __init__(self, target, endpoint):
        pass

    def preconnect(self, end):
        pass

    def stream(self, body, request_timeout, deadline):
        self.count[0] += 1
        start = time.perf_counter()
        if self.count[0] % 3 == 0:
            return {"ok": False, "reason": "http_500", "start": start, "finish": start}
        time.sleep(0.02)
        return {"ok": True, "start": start, "finish": time.perf_counter(), "ttft": 0.004, "latency": 0.02,
                "itl": [0.004] * 4, "output_tokens": 5, "usage": True}

    def close(self):
        pass


def _scripted_bench(**cfg):
    """A Benchmark over _ScriptedClient at concurrency 1 and 2, ready for _levels() (no server)."""
    cfg = dict({"url": "http://127.0.0.1:9", "concurrency": [1, 2], "warmup_prompts": 0, "input_len": 8,
                "output_len": 5}, **cfg)
    bench = br.Benchmark(cfg, client_cls=_ScriptedClient)
    bench.target, bench.model = bc.Target("http://127.0.0.1:9"), "m"
    bench.input_len, bench.output_len, bench.words = 8, 5, 8
    bench.deadline = time.perf_counter() + 20
    return bench


def test_every_run_keeps_its_requests_as_evidence():
    _ScriptedClient.count = [0]
    bench = _scripted_bench(num_prompts=6)
    runs, _raw, _records = bench._levels()
    for run in runs:
        reqs = run["requests"]
        assert len(reqs) == 6 == run["completed"] + run["failed"]
        assert sum(1 for r in reqs if r["ok"]) == run["completed"]
        assert sum(r["output_tokens"] for r in reqs) == run["output_tokens"]
        for r in reqs:
            assert set(r) == {"ok", "ttft_ms", "tpot_ms", "e2e_ms", "output_tokens", "start_s", "end_s"}
            assert 0 <= r["start_s"] <= r["end_s"] < 5
            if r["ok"]:
                assert r["tpot_ms"] == pytest.approx(4.0) and r["e2e_ms"] == pytest.approx(20.0)
            else:
                assert r["e2e_ms"] is None and r["output_tokens"] == 0


def test_the_board_is_sampled_before_the_round_and_after_each_level():
    _ScriptedClient.count = [0]
    readings = iter([{"gpu": {"cur_hz": 1}}, {"gpu": {"cur_hz": 2}}])

    def sampler():
        value = next(readings, None)
        if value is None:
            raise IOError("sensor gone")
        return value

    bench = _scripted_bench(num_prompts=2, sampler=sampler)
    bench._sample("before")
    bench._levels()
    # a failing read is a warning, never a failed round
    assert bench.conditions == [{"gpu": {"cur_hz": 1}, "when": "before"},
                                {"gpu": {"cur_hz": 2}, "when": "after concurrency 1"}]
    assert bench.warnings == ["could not read the board's conditions after concurrency 2: sensor gone"]


class _Meter(object):
    """A power meter that reports 2 J per level, and breaks on the second level's stop."""

    def __init__(self):
        self.calls = []

    def start(self):
        self.calls.append("start")

    def stop(self):
        self.calls.append("stop")
        if self.calls.count("stop") == 2:
            raise IOError("rail gone")
        return {"energy_j": 2.0, "power_w_avg": 4.0, "seconds": 0.5, "samples": 6}


def test_each_level_is_metered_and_a_broken_rail_is_a_warning():
    _ScriptedClient.count = [0]
    meter = _Meter()
    bench = _scripted_bench(num_prompts=3, power_meter=meter)
    runs, _raw, _records = bench._levels()
    assert meter.calls == ["start", "stop", "start", "stop"]
    first = runs[0]["power"]
    assert first["output_tokens"] == runs[0]["output_tokens"] == 10  # the third request failed
    assert first["j_per_token"] == 0.2 and first["tokens_per_j"] == 5.0
    assert runs[1]["power"] is None
    assert bench.warnings == ["could not read the board's power rails at concurrency 2: rail gone"]


def test_queue_gauges_are_summed_over_engines_for_the_served_model():
    from ansible_collections.jetson.specdec.plugins.module_utils.bench import prometheus as bp
    text = ('vllm:num_requests_running{engine="0",model_name="m"} 3.0\n'
            'vllm:num_requests_running{engine="1",model_name="m"} 2.0\n'
            'vllm:num_requests_waiting{engine="0",model_name="m"} 4.0\n'
            'vllm:num_requests_running{engine="0",model_name="other"} 9.0\n')
    assert bp.queue_snapshot(bp.parse_text(text), "m") == (5, 4)
    assert bp.queue_snapshot(bp.parse_text(text)) == (14, 4)
    assert bp.queue_snapshot(bp.parse_text("vllm:spec_decode_num_drafts_total 3\n"), "m") is None


def test_the_traffic_watch_counts_requests_beyond_the_levels_concurrency(monkeypatch):
    """Polls that see 1, 4 and 2 requests on a concurrency-1 level: 3 were someone else's."""
    answers = iter([1, 4, 2])

    def fake_get(target, path, timeout):
        assert path == "/metrics"
        n = next(answers)
        return 200, {}, 'vllm:num_requests_running{model_name="m"} %d\nvllm:num_requests_waiting{model_name="m"} 0\n' % n

    monkeypatch.setattr(bc, "get", fake_get)
    watch = br.TrafficWatch(bc.Target("http://127.0.0.1:9"), "m", 1, time.perf_counter() + 20)
    for dummy in range(3):
        watch.poll()
    assert watch.stop() == {"peak_requests": 4, "foreign_requests": 3, "polls": 3}
    silent = br.TrafficWatch(bc.Target("http://127.0.0.1:9"), "m", 1, time.perf_counter() + 20)
    monkeypatch.setattr(bc, "get", lambda *a: (200, {}, "other_metric 1\n"))
    silent.poll()
    assert silent.stop() is None  # a server without the gauges: no claim either way


def test_foreign_traffic_during_a_level_is_kept_with_the_level_and_named(monkeypatch):
    monkeypatch.setattr(br.TrafficWatch, "poll", lambda self: setattr(self, "seen", True) or setattr(self, "peak", 5))
    _ScriptedClient.count = [0]
    bench = _scripted_bench(num_prompts=3, watch_traffic=True)
    runs, _raw, _records = bench._levels()
    assert runs[0]["traffic"]["foreign_requests"] == 4 and runs[1]["traffic"]["foreign_requests"] == 3
    assert bench.warnings[0].startswith("foreign traffic at concurrency 1: up to 5 requests ran or waited")
