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
