"""Invalid speculative configs make the REAL `vllm serve` fail, with its own message and code."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lane  # noqa: E402

pytestmark = [pytest.mark.real_vllm,
              pytest.mark.skipif(not lane.lane_enabled(), reason=lane.SKIP_REASON)]


def _cases(models: Path):
    prefix = str(models / "draft-prefix")
    return {
        "negative_k": ({"method": "draft_model", "model": prefix, "num_speculative_tokens": -1},
                       1, ["num_speculative_tokens", "Input should be greater than 0"]),
        "unknown_method": ({"method": "foobar", "model": prefix, "num_speculative_tokens": 3},
                           1, ["type=literal_error", "input_value='foobar'"]),
        "missing_draft_dir": ({"method": "draft_model", "model": str(models / "no-such-draft"),
                               "num_speculative_tokens": 3},
                              1, ["Invalid repository ID or local directory specified"]),
        # vLLM's own check (vllm/config/speculative.py); the role refuses this pair in preflight
        # (launch/rules.py draft compatibility), so only a hand-written unit could reach it.
        "other_vocab": ({"method": "draft_model", "model": str(models / "draft-othervocab"),
                         "num_speculative_tokens": 3},
                        1, ["Target and draft model should have the same vocabulary size.",
                            "Target model vocab_size=1024. Draft model vocab_size=2048."]),
        "malformed_json": ('{"method": "draft_model", "num_speculative_tokens": 3',
                           2, ["argument --speculative-config/-sc", "cannot be converted"]),
    }


CASES = ["negative_k", "unknown_method", "missing_draft_dir", "other_vocab", "malformed_json"]


@pytest.fixture(scope="module")
def outcomes(lane_venv, lane_models):
    """All refusals at once: each is a vLLM import and a config check, not a server."""
    from concurrent.futures import ThreadPoolExecutor
    cases = _cases(lane_models)
    with ThreadPoolExecutor(max_workers=len(CASES)) as pool:
        futures = {c: pool.submit(lane.run_expect_failure, lane_venv, lane_models / "target",
                                  cases[c][0]) for c in CASES}
        return {c: f.result() for c, f in futures.items()}


@pytest.mark.parametrize("case", CASES)
def test_invalid_config_fails(case, outcomes, lane_models, lane_results):
    _spec, want_rc, want_text = _cases(lane_models)[case]
    r = outcomes[case]
    lane_results[f"invalid:{case}"] = {"start_s": round(r["seconds"], 1), "rc": r["rc"]}
    tail = "\n".join(r["output"].splitlines()[-25:])
    print(f"\n[lane] invalid {case}: rc={r['rc']} after {r['seconds']:.1f} s")
    assert r["rc"] is not None, f"{case}: vllm did not exit (it should refuse the config)\n{tail}"
    assert r["rc"] == want_rc, f"{case}: rc={r['rc']}, want {want_rc}\n{tail}"
    for text in want_text:
        assert text in r["output"], f"{case}: {text!r} not in vLLM's output\n{tail}"
    assert "Application startup complete" not in r["output"]
