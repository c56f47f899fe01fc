"""The shared endpoint-contract client against the simulator (the real-vLLM half lives in
the vLLM lane and compares its result with this one)."""
import json

from conftest import EAGLE_K3, LLAMA_W4

import endpoint_contract
import pytest

pytestmark = pytest.mark.simulator  # starts the stand-in on loopback


def test_contract_baseline(profile_file, start_server):
    server = start_server(profile_file(), extra=["--api-key", "k"])
    seen = endpoint_contract.check_server(server.base, LLAMA_W4, api_key="k")
    assert seen["health"] == {"status": 200}
    assert seen["unauthorized"]["status"] == 401
    assert seen["models"]["owned_by"] == "vllm" and seen["models"]["id_is_model"]
    for kind in ("completions", "chat"):
        assert seen[kind]["terminator"] == "[DONE]"
        assert seen[kind]["usage_is_last_json"] and seen[kind]["last_finish_reason_set"]
        assert "missing" not in seen[kind]["chunk"].values()
    assert seen["chat"]["first_delta_has_role"]
    assert seen["metrics"]["vllm:generation_tokens_total"] == {
        "type": "counter", "labels": ["engine", "model_name"]}
    assert seen["metrics"]["vllm:spec_decode_num_drafts_total"] == "missing"
    assert seen["speculative"] is False
    json.dumps(seen)  # the CLI prints it; it must be plain JSON


def test_contract_speculative(profile_file, start_server):
    server = start_server(profile_file(), extra=["--speculative-config", EAGLE_K3])
    seen = endpoint_contract.check_server(server.base, LLAMA_W4)
    assert seen["speculative"] is True
    assert seen["metrics"]["vllm:spec_decode_num_accepted_tokens_per_pos_total"] == {
        "type": "counter", "labels": ["engine", "model_name", "position"]}
    assert endpoint_contract.differences(seen, seen) == []
    other = json.loads(json.dumps(seen))
    other["chat"]["object"] = "something.else"
    assert endpoint_contract.differences(seen, other) == [
        "/chat/object: 'chat.completion.chunk' != 'something.else'"]
