"""vLLM 0.32's batch-size schedule (the rollout's third arm, issue 36) against the REAL `vllm serve`.

The draft (prefix) served with the schedule the third arm builds for threshold 1 - k=3 at batch size 1,
k=0 above - exactly as the collection renders it (launch/spec_config.py). Either this CPU build serves it:
then the per-position counters show drafts at concurrency 1 and (almost) none at concurrency 8, where every
step schedules 8 requests; or it refuses: then the refusal is vLLM's own (the process exits with a traceback
naming the schedule or the dynamic speculative decoding), which the rollout's third arm records as
`schedule.failed` and falls back on the candidate's revert. Which one happened is printed and kept in the
lane results.
"""
from __future__ import annotations

import json
import runpy
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the collection importable as ansible_collections.jetson.specdec (the unit tests' conftest does it)
runpy.run_path(str(Path(__file__).resolve().parents[1] / "unit" / "conftest.py"))
import lane  # noqa: E402
from prompts import NUM_SPECULATIVE_TOKENS, PROMPTS  # noqa: E402

from ansible_collections.jetson.specdec.plugins.module_utils.launch.batch_schedule import build_schedule  # noqa: E402
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import render_spec_config_json  # noqa: E402

pytestmark = [pytest.mark.real_vllm,
              pytest.mark.skipif(not lane.lane_enabled(), reason=lane.SKIP_REASON)]

EXTRA_ARGS = ["--enforce-eager", "--chat-template", str(Path(__file__).resolve().parent / "chat_template.jinja")]
KEY = "num_speculative_tokens_per_batch_size"


def _concurrent(port, n):
    """n streams at once (concurrency n); the spec counters' deltas and the tokens generated."""
    before = lane.scrape_metrics(port)
    with ThreadPoolExecutor(max_workers=n) as pool:
        runs = list(pool.map(lambda i: lane.stream_completion(port, PROMPTS[i % len(PROMPTS)]), range(n)))
    after = lane.scrape_metrics(port)
    delta = lane.spec_delta(before, after)
    tokens = sum(r["completion_tokens"] or 0 for r in runs)
    return {"tokens": tokens, "drafts": delta["drafts"], "draft_tokens": delta["draft_tokens"],
            "drafts_per_token": delta["drafts"] / tokens if tokens else None}


def test_real_vllm_serves_the_schedule_or_refuses_it_in_its_own_words(
        lane_venv, lane_models, lane_log_dir, lane_results):
    spec = json.loads(render_spec_config_json(
        lane.spec_for("prefix", lane_models),
        {KEY: build_schedule(1, NUM_SPECULATIVE_TOKENS, 256)}))
    assert spec[KEY] == [[1, 1, NUM_SPECULATIVE_TOKENS], [2, 256, 0]]
    t0 = time.monotonic()
    try:
        srv = lane.start_server(lane_venv, lane_models / "target", spec, name="schedule", log_dir=lane_log_dir,
                                extra=EXTRA_ARGS)
    except RuntimeError as exc:
        text = str(exc)
        lane_results["schedule"] = {"outcome": "refused", "seconds": round(time.monotonic() - t0, 1),
                                    "message": text.splitlines()[-1][:300] if text else ""}
        print("\n[lane] schedule refused by vLLM:\n" + text[-2000:])
        assert "Traceback" in text or "Error" in text, text[-2000:]
        assert KEY in text or "ynamic" in text or "speculative" in text, text[-2000:]
        return
    try:
        one = _concurrent(srv.port, 1)
        eight = _concurrent(srv.port, 8)
    finally:
        lane.stop_server(srv)
    lane_results["schedule"] = {"outcome": "served", "start_s": round(srv.start_s, 1), "c1": one, "c8": eight}
    print("\n[lane] schedule served: c1 %s; c8 %s" % (one, eight))
    assert one["drafts"] > 0 and one["drafts_per_token"] > 0.1, one
    # at concurrency 8 only a step with one request left may draft
    assert eight["drafts_per_token"] < 0.5 * one["drafts_per_token"], (one, eight)
