"""HTTP endpoints, SSE framing, API key and metrics of a running simulator."""
import json
import urllib.error
import urllib.request

import pytest

from conftest import EAGLE_K3, LLAMA_W4

pytestmark = pytest.mark.simulator  # starts the stand-in on loopback

TIMEOUT = 10


def get(base, path, key=None):
    headers = {"Authorization": "Bearer " + key} if key else {}
    req = urllib.request.Request(base + path, headers=headers)
    try:
        resp = urllib.request.urlopen(req, timeout=TIMEOUT)
        return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def post_stream(base, path, body, key=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers=headers)
    resp = urllib.request.urlopen(req, timeout=TIMEOUT)
    raw = resp.read().decode()
    return resp.headers, raw


def events(raw):
    out = []
    for block in raw.split("\n\n"):
        if block:
            assert block.startswith("data: "), block
            payload = block[len("data: "):]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


@pytest.fixture
def baseline(profile_file, start_server):
    return start_server(profile_file())


@pytest.fixture
def speculative(profile_file, start_server):
    return start_server(profile_file(), extra=["--speculative-config", EAGLE_K3,
                                               "--served-model-name", "llama8b"])


def test_health_version_models(baseline):
    status, headers, body = get(baseline.base, "/health")
    assert status == 200 and body == b""
    assert headers["X-Jetson-Simulated"] == "agx_orin_64gb; time_scale=0.01"
    status, dummy, body = get(baseline.base, "/version")
    assert json.loads(body) == {"version": "0.20.1"}
    status, dummy, body = get(baseline.base, "/v1/models")
    card = json.loads(body)["data"][0]
    assert card["id"] == LLAMA_W4 and card["root"] == LLAMA_W4
    assert card["owned_by"] == "vllm" and card["max_model_len"] == 4096


def test_completion_stream_shape(baseline):
    headers, raw = post_stream(baseline.base, "/v1/completions", {
        "model": LLAMA_W4, "prompt": list(range(32)), "max_tokens": 12, "ignore_eos": True,
        "stream": True, "stream_options": {"include_usage": True}})
    assert headers["Content-Type"].startswith("text/event-stream")
    evs = events(raw)
    assert evs[-1] == "[DONE]"
    usage = evs[-2]
    assert usage["choices"] == [] and usage["usage"] == {
        "prompt_tokens": 32, "completion_tokens": 12, "total_tokens": 44}
    chunks = evs[:-2]
    # No speculation: one token per engine step, so one chunk per token.
    assert len(chunks) == 12
    assert all(c["object"] == "text_completion" for c in chunks)
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * 11 + ["length"]


def test_chat_stream_and_natural_stop(baseline, profile_file):
    dummy, raw = post_stream(baseline.base, "/v1/chat/completions", {
        "model": LLAMA_W4, "messages": [{"role": "user", "content": "hi"}],
        "max_completion_tokens": 300, "stream": True})
    evs = events(raw)
    assert evs[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert evs[-1] == "[DONE]"
    assert all(e["object"] == "chat.completion.chunk" for e in evs[:-1])
    # Without ignore_eos the simulated model stops after natural_output_tokens (256).
    assert evs[-2]["choices"][0]["finish_reason"] == "stop"
    text = "".join(e["choices"][0]["delta"]["content"] for e in evs[:-1])
    assert len(text.split()) == 256


def test_list_of_prompts_gives_one_choice_each(baseline):
    dummy, raw = post_stream(baseline.base, "/v1/completions", {
        "model": LLAMA_W4, "prompt": ["one", "two"], "max_tokens": 3, "ignore_eos": True,
        "stream": True, "stream_options": {"include_usage": True}})
    evs = events(raw)
    assert {e["choices"][0]["index"] for e in evs[:-2]} == {0, 1}
    assert evs[-2]["usage"]["completion_tokens"] == 6


def test_errors_for_unknown_model_and_too_long(baseline):
    req = urllib.request.Request(baseline.base + "/v1/completions", data=json.dumps({
        "model": "other", "prompt": "x", "max_tokens": 1}).encode(),
        headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=TIMEOUT)
    assert err.value.code == 404
    req = urllib.request.Request(baseline.base + "/v1/completions", data=json.dumps({
        "model": LLAMA_W4, "prompt": list(range(4000)), "max_tokens": 200}).encode(),
        headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=TIMEOUT)
    assert err.value.code == 400
    assert "maximum context length is 4096 tokens" in err.value.read().decode()


def test_api_key_guards_v1_only(profile_file, start_server):
    server = start_server(profile_file(), extra=["--api-key", "s3cret"])
    status, dummy, body = get(server.base, "/v1/models")
    assert status == 401 and json.loads(body) == {"error": "Unauthorized"}
    assert get(server.base, "/v1/models", "wrong")[0] == 401
    assert get(server.base, "/v1/models", "s3cret")[0] == 200
    for open_path in ("/health", "/metrics", "/version"):
        assert get(server.base, open_path)[0] == 200


def metric_lines(base):
    return get(base, "/metrics")[2].decode().splitlines()


def test_spec_metrics_absent_without_speculation(baseline):
    text = "\n".join(metric_lines(baseline.base))
    assert "# TYPE vllm:generation_tokens_total counter" in text
    assert "# TYPE vllm:time_to_first_token_seconds histogram" in text
    assert "spec_decode" not in text


def test_spec_metrics_count_drafts_and_acceptance(speculative):
    dummy, raw = post_stream(speculative.base, "/v1/completions", {
        "model": "llama8b", "prompt": "hello", "max_tokens": 200, "ignore_eos": True,
        "stream": True})
    chunks = events(raw)[:-1]
    values = {}
    for line in metric_lines(speculative.base):
        if line.startswith("vllm:spec_decode") or line.startswith("vllm:generation_tokens_total"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    labels = '{model_name="llama8b",engine="0"}'
    drafts = values["vllm:spec_decode_num_drafts_total" + labels]
    accepted = values["vllm:spec_decode_num_accepted_tokens_total" + labels]
    assert values["vllm:spec_decode_num_draft_tokens_total" + labels] == 3 * drafts
    # One draft per decode step; the first chunk comes from prefill.
    assert drafts == len(chunks) - 1
    pos = [values['vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="llama8b",'
                  'engine="0",position="%d"}' % i] for i in range(3)]
    assert pos[0] >= pos[1] >= pos[2] and sum(pos) == accepted
    # Several tokens per chunk: mean acceptance length for alpha=0.7, k=3 is about 2.5.
    assert 2.0 < 1 + accepted / drafts < 3.0
    assert values["vllm:generation_tokens_total" + labels] == 200


def _acceptance(base, prompt, requests=6):
    """Acceptance rate (accepted / draft tokens) of `requests` completions of `prompt`, from /metrics."""
    def counts():
        values = {}
        for line in metric_lines(base):
            if line.startswith("vllm:spec_decode_num_") and "_total{" in line and "position" not in line:
                name, value = line.rsplit(" ", 1)
                values[name.split("{")[0]] = float(value)
        return values
    before = counts()
    for dummy in range(requests):
        post_stream(base, "/v1/completions", {"model": "llama8b", "prompt": prompt, "max_tokens": 100,
                                              "ignore_eos": True, "stream": True})
    after = counts()
    accepted = after["vllm:spec_decode_num_accepted_tokens_total"] - before["vllm:spec_decode_num_accepted_tokens_total"]
    drafted = after["vllm:spec_decode_num_draft_tokens_total"] - before["vllm:spec_decode_num_draft_tokens_total"]
    return accepted / drafted


def test_acceptance_follows_the_prompts_with_prompt_acceptance(profile_file, start_server):
    server = start_server(profile_file(prompt_acceptance=[{"contains": "novel topic", "scale": 0.2}]),
                          extra=["--speculative-config", EAGLE_K3, "--served-model-name", "llama8b"])
    usual = _acceptance(server.base, "summarise the log")
    novel = _acceptance(server.base, "a novel topic nobody asked before")
    # alpha 0.7 per position at k=3 gives about 0.6; scaled by 0.2 (0.14 per position) about 0.05
    assert usual > 0.45 and novel < 0.15, (usual, novel)


@pytest.mark.parametrize("bad", [{"contains": "", "scale": 0.5}, {"contains": "x", "scale": -1},
                                 {"contains": "x", "scale": True}, {"contains": "x"}, "x"])
def test_a_bad_prompt_acceptance_stops_the_start_with_a_plain_message(profile_file, bad):
    from conftest import run_vllm
    proc = run_vllm(["serve", LLAMA_W4], profile_file(prompt_acceptance=[bad]))
    assert proc.returncode != 0
    assert "prompt_acceptance must be a list of" in proc.stderr + proc.stdout, proc.stderr
