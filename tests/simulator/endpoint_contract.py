#!/usr/bin/env python3
"""One client that records the endpoint shapes a vLLM server exposes.

Run it against the simulator and against a real vLLM: equal `check_server` results mean
the collection's health checks, benchmarks and metric scrapes see the same interface.
Only shapes are recorded (key names, JSON types, metric names/types/label names), never
values that differ between runs. Standard library only.

    python3 endpoint_contract.py --base-url http://127.0.0.1:8000 --model NAME [--api-key K]
    python3 endpoint_contract.py ... --compare other.json   # exit 1 on differences
"""
import argparse
import json
import sys
import urllib.error
import urllib.request

TIMEOUT = 30
# Metric families the collection reads; spec-decode ones only exist with speculation on.
CORE_METRICS = [
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
    "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
    "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
    "vllm:e2e_request_latency_seconds", "vllm:request_time_per_output_token_seconds",
]
SPEC_METRICS = [
    "vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_per_pos_total",
]


def _type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "str", list: "list", dict: "dict"}.get(type(value), type(value).__name__)


def _shape(obj, keys):
    """JSON types of the keys a client relies on ('missing' when absent)."""
    return {k: (_type(obj[k]) if k in obj else "missing") for k in keys}


def _request(base, path, api_key=None, body=None):
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base.rstrip("/") + path, data=data, headers=headers)
    try:
        resp = urllib.request.urlopen(req, timeout=TIMEOUT)
        return resp.status, resp
    except urllib.error.HTTPError as err:
        return err.code, err


def _sse(resp):
    """Parse an SSE body into JSON events; the terminator is returned as the string."""
    events = []
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        payload = line[len("data: "):]
        events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


def _stream_shapes(events, chat):
    content = [e for e in events if isinstance(e, dict) and e.get("choices")]
    usage = [e for e in events if isinstance(e, dict) and e.get("choices") == []]
    choice_keys = (["index", "delta", "finish_reason"] if chat
                   else ["index", "text", "finish_reason"])
    first = content[0] if content else {}
    out = {
        "terminator": events[-1] if events and events[-1] == "[DONE]" else "missing",
        "chunk": _shape(first, ["id", "object", "created", "model", "choices"]),
        "object": first.get("object"),
        "choice": _shape(first["choices"][0], choice_keys) if content else {},
        "last_finish_reason_set": bool(content) and content[-1]["choices"][0].get(
            "finish_reason") in ("length", "stop"),
        "usage_chunk": (_shape(usage[0]["usage"],
                               ["prompt_tokens", "completion_tokens", "total_tokens"])
                        if usage else "missing"),
        "usage_is_last_json": bool(usage) and events[-2] is usage[0],
    }
    if chat and content:
        out["first_delta_has_role"] = content[0]["choices"][0]["delta"].get("role") == "assistant"
    return out


def _metrics(text):
    """name -> {type, labels} for the families the collection reads."""
    types, labels = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            dummy, dummy, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            for suffix in ("_bucket", "_count", "_sum"):
                if name.endswith(suffix) and name[:-len(suffix)] in types:
                    name = name[:-len(suffix)]
            if "{" in line:
                body = line.split("{", 1)[1].rsplit("}", 1)[0]
                names = {part.split("=", 1)[0] for part in body.split('",') if "=" in part}
                names.discard("le")
                labels.setdefault(name, set()).update(names)
    out = {}
    for name in CORE_METRICS + SPEC_METRICS:
        if name in types:
            out[name] = {"type": types[name], "labels": sorted(labels.get(name, ()))}
        else:
            out[name] = "missing"
    return out


def check_server(base_url, model, api_key=None):
    """Observed shapes of one running server (see module docstring)."""
    seen = {}
    status, resp = _request(base_url, "/health")
    seen["health"] = {"status": status}
    status, resp = _request(base_url, "/version")
    seen["version"] = {"status": status, "body": _shape(json.load(resp), ["version"])}
    if api_key:
        status, resp = _request(base_url, "/v1/models")
        body = resp.read()
        seen["unauthorized"] = {"status": status,
                                "body": _shape(json.loads(body or b"{}"), ["error"])}
    status, resp = _request(base_url, "/v1/models", api_key)
    models = json.load(resp)
    card = models["data"][0] if models.get("data") else {}
    seen["models"] = {"status": status, "list": _shape(models, ["object", "data"]),
                      "card": _shape(card, ["id", "object", "created", "owned_by", "root",
                                            "max_model_len"]),
                      "owned_by": card.get("owned_by"), "id_is_model": card.get("id") == model}
    common = {"model": model, "stream": True, "stream_options": {"include_usage": True},
              "ignore_eos": True, "temperature": 0}
    status, resp = _request(base_url, "/v1/completions", api_key,
                            dict(common, prompt="The Jetson board", max_tokens=16))
    seen["completions"] = dict(_stream_shapes(_sse(resp), chat=False), status=status)
    status, resp = _request(base_url, "/v1/chat/completions", api_key,
                            dict(common, messages=[{"role": "user", "content": "Hello"}],
                                 max_completion_tokens=16))
    seen["chat"] = dict(_stream_shapes(_sse(resp), chat=True), status=status)
    status, resp = _request(base_url, "/metrics")
    text = resp.read().decode()
    seen["metrics"] = _metrics(text)
    seen["speculative"] = "vllm:spec_decode_num_drafts_total" in text
    return seen


def differences(a, b, path=""):
    """Paths where two check_server results disagree."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += differences(a.get(key, "absent"), b.get(key, "absent"), path + "/" + key)
        return out
    return [] if a == b else ["%s: %r != %r" % (path, a, b)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key")
    parser.add_argument("--compare", help="JSON file from another server to compare with")
    args = parser.parse_args(argv)
    seen = check_server(args.base_url, args.model, args.api_key)
    print(json.dumps(seen, indent=1, sort_keys=True))
    if args.compare:
        with open(args.compare) as handle:
            diffs = differences(seen, json.load(handle))
        for line in diffs:
            sys.stderr.write("DIFF " + line + "\n")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
