import random

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench import stats as bs


@pytest.mark.parametrize("p", [0, 1, 25, 50, 90, 99, 99.9, 100])
def test_percentile_matches_numpy_linear(p):
    np = pytest.importorskip("numpy")
    rng = random.Random(p)
    for n in (1, 2, 3, 7, 50, 101):
        data = [rng.uniform(0, 100) for dummy in range(n)]
        assert bs.percentile(data, p) == pytest.approx(float(np.percentile(data, p)), rel=1e-12)


def test_percentile_known_values():
    assert bs.percentile([1, 2, 3, 4], 50) == 2.5
    assert bs.percentile([10, 20], 90) == pytest.approx(19.0)
    assert bs.percentile([5], 99) == 5
    assert bs.percentile([3, 1, 2], 0) == 1  # unsorted input


def test_percentile_empty_and_bad():
    assert bs.percentile([], 50) is None
    with pytest.raises(ValueError):
        bs.percentile([1], 101)


def test_cv_and_stdev():
    assert bs.coefficient_of_variation([10, 10, 10]) == 0
    assert bs.coefficient_of_variation([1]) is None
    assert bs.coefficient_of_variation([9, 11]) == pytest.approx(2 ** 0.5 / 10)
    assert bs.pstdev([1, 3]) == 1


def _ok(ttft, latency, out, itl):
    return {"ok": True, "ttft": ttft, "latency": latency, "output_tokens": out, "itl": itl}


def test_summarize_level_definitions():
    recs = [
        _ok(0.1, 1.1, 11, [0.1] * 10),   # tpot = 1.0/10 = 100 ms
        _ok(0.2, 2.2, 21, [0.2] * 10),   # tpot = 2.0/20 = 100 ms, chunk of 2 tokens
        _ok(0.3, 0.3, 1, []),            # one token: no TPOT sample
        {"ok": False, "reason": "timeout"},
        {"ok": False, "reason": "timeout"},
        {"ok": False, "reason": "http_500"},
    ]
    run = bs.summarize_level(8, recs, 2.0)
    assert run["concurrency"] == 8
    assert run["completed"] == 3 and run["failed"] == 3
    assert run["errors"] == {"timeout": 2, "http_500": 1}
    assert run["output_tokens"] == 33
    assert run["throughput_tok_s"] == 16.5
    assert run["request_throughput"] == 1.5
    assert run["tpot_ms_p50"] == pytest.approx(100.0)
    assert run["ttft_ms_p50"] == pytest.approx(200.0)
    assert run["itl_ms_p50"] == pytest.approx(150.0)
    assert run["e2e_latency_ms_p99"] == pytest.approx(1100 + 1100 * 0.98, rel=1e-6)


def test_summarize_all_failed_has_no_fake_zeros():
    run = bs.summarize_level(1, [{"ok": False, "reason": "deadline"}], 0.0)
    assert run["tpot_ms_p50"] is None and run["throughput_tok_s"] == 0.0
    assert run["errors"] == {"deadline": 1}


def test_request_evidence_one_entry_per_request_in_order():
    t0 = 100.0
    recs = [
        dict(_ok(0.1, 1.1, 11, [0.1] * 10), start=100.5, finish=101.6),
        dict(_ok(0.3, 0.3, 1, []), start=100.0, finish=100.3),
        {"ok": False, "reason": "timeout", "start": 101.0, "finish": 103.0},
        {"ok": False, "reason": "deadline"},
    ]
    reqs = bs.request_evidence(recs, t0)
    assert len(reqs) == 4
    assert reqs[0] == {"ok": True, "ttft_ms": 100.0, "tpot_ms": 100.0, "e2e_ms": 1100.0, "output_tokens": 11,
                       "start_s": 0.5, "end_s": 1.6}
    assert reqs[1]["tpot_ms"] is None and reqs[1]["output_tokens"] == 1  # one token: no TPOT, as summarize_level
    assert reqs[2] == {"ok": False, "ttft_ms": None, "tpot_ms": None, "e2e_ms": None, "output_tokens": 0,
                       "start_s": 1.0, "end_s": 3.0}
    assert reqs[3]["start_s"] is None and reqs[3]["ok"] is False
