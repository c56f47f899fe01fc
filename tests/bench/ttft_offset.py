"""Why our concurrency-1 TTFT is a little lower than ``vllm bench serve``'s
(docs/benchmark.md, item 1).

``vllm bench serve`` sends text prompts, which the server has to tokenize;
``vllm_bench`` sends token ids.  This sends the very same tokens both ways,
one request at a time and alternating which form goes first, to the lane's
target (started exactly as for bench_quality item 1), and reports the median
TTFT of each form: what a text prompt costs the server, with the client held
fixed (ours for both).

Run from the repository root (prints JSON):
  .venv/bin/python tests/bench/ttft_offset.py --input-lens 64,256
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_quality as bq  # noqa: E402 - item 1's lane server and the collection's client

# Runs in the lane's interpreter (it has the tokenizer's libraries): text whose
# encoding is exactly the given number of tokens, and those tokens.
SAME_TOKENS = """
import json, random, sys
from transformers import AutoTokenizer
a = json.loads(sys.argv[1])
tok = AutoTokenizer.from_pretrained(a["tokenizer"])
words = ["river", "stone", "light", "garden", "number", "window", "market", "signal", "paper", "engine"]
rng = random.Random(a["seed"])
out = []
while len(out) < a["count"]:
    text = " ".join(rng.choice(words) + str(rng.randrange(1000)) for _ in range(a["input_len"]))
    ids = tok.encode(text, add_special_tokens=False)[:a["input_len"]]
    text = tok.decode(ids)
    if tok.encode(text, add_special_tokens=False) == ids:  # round trip exact, or draw again
        out.append([text, ids])
print(json.dumps(out))
"""


def same_tokens(vllm_bin, tokenizer, input_len, count, seed):
    """``count`` (text, token ids) pairs of ``input_len`` tokens each."""
    return bq.lane_python(vllm_bin, SAME_TOKENS, {"tokenizer": tokenizer, "input_len": input_len,
                                                  "count": count, "seed": seed}, "build the prompts")


def measure(url, model, pairs, output_len):
    """({form: [TTFT ms]}, {form: prompt token counts the server reported}) over ``pairs``,
    one request at a time."""
    target = bq.bench_client.Target(url)
    client = bq.bench_client.StreamClient(target, "completions")
    ttft = {"text": [], "token_ids": []}
    seen = {"text": set(), "token_ids": set()}
    try:
        for i, (text, ids) in enumerate(pairs):
            forms = [("text", text), ("token_ids", ids)]
            for form, prompt in (forms if i % 2 == 0 else forms[::-1]):
                body = bq.bench_client.build_payload("completions", model, prompt, output_len)
                rec = client.stream(body, 120, time.perf_counter() + 300)
                if not rec["ok"]:
                    raise RuntimeError("%s prompt failed: %s" % (form, rec["reason"]))
                ttft[form].append(rec["ttft"] * 1000.0)
                seen[form].add(rec["prompt_tokens"])
    finally:
        client.close()
    return ttft, seen


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input-lens", type=lambda s: [int(x) for x in s.split(",")], default=[64, 256])
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--output-len", type=int, default=2)
    args = ap.parse_args()
    lane, srv = bq.lane_server(args)
    try:
        client_cpus = bq.pin_clients_off_worker(srv)
        dummy, dummy, body = bq.bench_client.get(bq.bench_client.Target(args.real_url), "/v1/models", 10)
        model = json.loads(body)["data"][0]["id"]
        report = {"client_cpus": client_cpus, "pairs": args.pairs, "output_len": args.output_len}
        for input_len in args.input_lens:
            pairs = same_tokens(args.vllm_bin, args.tokenizer, input_len, args.pairs + 2, seed=input_len)
            measure(args.real_url, model, pairs[:2], args.output_len)  # warm-up, discarded
            ttft, seen = measure(args.real_url, model, pairs[2:], args.output_len)
            text_ms = bq.bench_stats.percentile(ttft["text"], 50)
            ids_ms = bq.bench_stats.percentile(ttft["token_ids"], 50)
            report["input_len_%d" % input_len] = {
                "ttft_ms_p50_text": round(text_ms, 2), "ttft_ms_p50_token_ids": round(ids_ms, 2),
                "text_minus_ids_ms": round(text_ms - ids_ms, 2),
                "text_over_ids": round((text_ms - ids_ms) / ids_ms, 4),
                "server_prompt_tokens": dict((k, sorted(v)) for k, v in seen.items())}
            bq.log("ttft_offset %d tokens: %s" % (input_len, report["input_len_%d" % input_len]))
    finally:
        lane.stop_server(srv)
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
