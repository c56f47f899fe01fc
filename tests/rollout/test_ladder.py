"""The fallback ladder on a simulated fleet, one host per cause (issue 17).

- OOM: the planned EAGLE-3 head runs out of memory, at the lower utilization too; the
  catalogued Llama-3.2-1B draft is bigger than the head, so the next rung is n-gram (no
  weights), which starts; the host is judged on it.
- rejected config: vLLM refuses the speculative config with its own words; the host goes
  straight back to the baseline (one attempt, no lower utilization, no other drafter).
- unknown model: the named draft does not exist; off at once, the record names the problem.
- gated model: fetching the draft answers 401 (a gated repo, no token); off at once, and the
  record names the token variable.
  Both are found by the prefetch (jetson.specdec.vllm_prefetch, while the baseline serves), in the
  hf CLI's words: the rung fails without a restart, so the host never stops serving.
Observable results only: each host's state file (attempts, status) and what it serves.
"""
import re

import pytest

from harness import assert_serving, assert_settled, assert_state, board, measured_arms

PREFIX = "specdec-ld-"
TARGET = "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"  # inventories/example/group_vars/all.yml
MISSING = "acme/missing-llama-draft"
GATED = "acme/gated-llama-draft"
VOCAB = ("Target and draft model should have the same vocabulary size. Target model vocab_size=128256. "
         "Draft model vocab_size=151936. Using models with different tokenizers can cause out-of-bounds errors "
         "during speculative decoding.")
BOARDS = [
    board("ld-oom", "agx-01", faults={"oom_when_speculative": True}),
    board("ld-reject", "agx-01", faults={"reject_speculative_config": VOCAB, "when": "speculative"}),
    # A catalogued draft (so preflight knows its size and vocabulary) that the board cannot load.
    board("ld-missing", "agx-01", hostvars={"vllm_server_model_catalog": {TARGET: dict(
        family="llama3", weight_bytes=5700000000, kv_bytes_per_token=131072, vocab_size=128256, eagle3_heads=[],
        draft_models=[dict(model=MISSING, weight_bytes=500000000, kv_bytes_per_token=32768, vocab_size=128256)])}}),
    # A catalogued draft behind a gated repo: the download answers 401 without vllm_server_hf_token.
    board("ld-gated", "agx-01", faults={"gated_repo": True, "when": "speculative"},
          hostvars={"vllm_server_model_catalog": {TARGET: dict(
              family="llama3", weight_bytes=5700000000, kv_bytes_per_token=131072, vocab_size=128256, eagle3_heads=[],
              draft_models=[dict(model=GATED, weight_bytes=500000000, kv_bytes_per_token=32768, vocab_size=128256)])}}),
]


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    fleet.first = fleet.run("playbooks/rollout.yml", rollout_serial=["100%"], rollout_run_id="ladder")
    return fleet


def attempts(fleet, host):
    return fleet.state(host)["attempts"]


def test_the_run_finishes_without_a_failed_host(fleet):
    rc, out, dummy = fleet.first
    assert rc == 0, out[-4000:]


def test_out_of_memory_walks_down_to_a_strictly_smaller_speculation(fleet):
    tried = attempts(fleet, "ld-oom")
    assert [(a["label"].split(" ")[0], a["result"], a.get("cause")) for a in tried] == [
        ("eagle3", "failed", "out_of_memory"), ("eagle3", "failed", "out_of_memory"), ("ngram", "started", None)], tried
    # never the 2.47 GB draft in place of the 0.85 GB head
    assert not any("Llama-3.2-1B" in a["label"] for a in tried)
    assert "ngram" in tried[1]["next"] and "CUDA out of memory" in tried[0]["next"]
    # whatever the verdict, the n-gram rung (the only one that started) is what the candidate rounds measured
    state = fleet.state("ld-oom")
    assert "candidate" in measured_arms(state), state["benchmarks"]["rounds"]
    kept = assert_settled(state)["action"] == "keep"
    assert_serving(fleet, "ld-oom", speculative=kept)
    assert ("ngram" in fleet.unit("ld-oom")) is kept, fleet.unit("ld-oom")


def test_an_expected_out_of_memory_rung_prints_one_line_not_the_journal(fleet):
    """The candidate's switch runs quiet (issue 33): the console shows the failed start as one line (the rung, its cause,
    the next rung), never vLLM's journal (the 14-17 KB a failed start carried); the record keeps the whole message."""
    rc, out, dummy = fleet.first
    assert rc == 0, out[-4000:]
    lines = re.findall(r"^ld-oom: Rung \d \(.*\) failed: out_of_memory\..*$", out, re.M)
    assert len(lines) == 2 and all(len(line) < 600 for line in lines), out[-4000:]
    assert "Traceback (most recent call last)" not in out, out[-6000:]  # vLLM's journal stays in the record
    assert "CUDA out of memory" in attempts(fleet, "ld-oom")[0]["message"]


def test_a_rejected_config_goes_straight_back_to_the_baseline(fleet):
    tried = attempts(fleet, "ld-reject")
    assert len(tried) == 1, tried
    assert (tried[0]["rung"], tried[0]["result"], tried[0]["cause"]) == (0, "failed", "rejected_speculative_config")
    assert "should have the same vocabulary size" in tried[0]["next"] and "at once" in tried[0]["next"]
    assert_serving(fleet, "ld-reject", speculative=False)
    state = assert_state(fleet, "ld-reject", "reverted", "revert")
    assert state["last_good"]["kind"] == "baseline"


def test_a_missing_model_ends_at_off_naming_the_download_problem(fleet):
    tried = attempts(fleet, "ld-missing")
    assert len(tried) == 1, tried
    assert tried[0]["cause"] == "model_not_found"
    # the prefetch's answer (only the hf CLI says it so): vLLM was never started with this draft
    assert MISSING in tried[0]["next"] and "Model '%s' not found" % MISSING in tried[0]["message"], tried[0]
    assert "vllm_server_speculative_model" in tried[0]["message"]
    assert_serving(fleet, "ld-missing", speculative=False)
    assert_state(fleet, "ld-missing", "reverted", "revert")


def test_a_gated_model_ends_at_off_naming_the_token(fleet):
    tried = attempts(fleet, "ld-gated")
    assert len(tried) == 1, tried
    assert tried[0]["cause"] == "model_not_found", tried
    # found by the prefetch ("requires approval" is the hf CLI's; vLLM says "Cannot access gated repo")
    assert "Model '%s' requires approval" % GATED in tried[0]["message"], tried[0]
    assert GATED in tried[0]["next"] and "vllm_server_hf_token" in tried[0]["next"]
    assert "vllm_server_hf_token" in tried[0]["message"]
    assert_serving(fleet, "ld-gated", speculative=False)
    assert_state(fleet, "ld-gated", "reverted", "revert")
