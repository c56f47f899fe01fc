#!/usr/bin/env python3
"""Measure the simulator against its accuracy targets and print the numbers.

1. Single-stream speedup vs Leviathan's (1 - a^(k+1)) / ((1 - a)(1 + k c)) over the grid
   a in {0.3, 0.6, 0.9}, k in {1, 3, 5}, c in {0.05, 0.2}: on the virtual clock AND over
   real HTTP with the wall clock (a `vllm serve` process per point, streaming client).
2. TPOT at concurrency 1 without speculation vs weight_bytes / (bandwidth x efficiency)
   for every board profile, over real HTTP.
Targets: speedup within 5 %, TPOT within 3 %. Exit status 1 if a target is missed.

    python3 tests/simulator/measure_accuracy.py [--time-scale 0.05] [--tokens 256] [--quick]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)

from vllm_sim import specconfig  # noqa: E402
from vllm_sim.engine import Engine, VirtualClock, simulate, summarize  # noqa: E402
from vllm_sim.profile import Profile  # noqa: E402

VLLM = os.path.join(HERE, "bin", "vllm")
BOARDS = ["thor_t5000", "agx_orin_64gb", "agx_orin_32gb", "orin_nx_16gb", "orin_nano_8gb"]
LLAMA_W4 = "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"
LLAMA_1B = "meta-llama/Llama-3.2-1B-Instruct"
UTIL = {"orin_nano_8gb": "0.7"}  # what fits next to the OS on each board


def leviathan(alpha, k, c):
    return (1 - alpha ** (k + 1)) / ((1 - alpha) * (1 + k * c))


def grid_profile_data(alpha, c, time_scale):
    return {"name": "grid", "total_memory_bytes": 64 * 1024 ** 3, "time_scale": time_scale,
            "memory_bandwidth_bytes_per_s": 100e9, "bandwidth_efficiency": 1.0, "seed": 7,
            "vllm_version": "0.20.1", "startup_s": 0,
            "models": {"target": {"weight_bytes": 4e9, "params_b": 8, "vocab_size": 1000,
                                  "kv_bytes_per_token": 1024, "max_position_embeddings": 8192},
                       "draft": {"weight_bytes": 4e9 * c, "params_b": 1, "vocab_size": 1000,
                                 "kv_bytes_per_token": 256}},
            "acceptance": [{"target_family": "target", "draft": "draft", "alpha": alpha}]}


def virtual_tpot(profile, spec, requests=24, out=512):
    target = profile.find_model("target")
    engine = Engine(profile, target, spec, clock=VirtualClock(), scale=1.0)
    return summarize(simulate(engine, 1, requests, 64, out))["mean_tpot_s"]


class Served(object):
    """A simulator process on a free loopback port; always stopped on exit."""

    def __init__(self, profile_data, model, extra=()):
        self.tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(profile_data, self.tmp)
        self.tmp.close()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        env = dict(os.environ, JETSON_SIM_PROFILE=self.tmp.name)
        env.pop("JETSON_SIM_TIME_SCALE", None)
        self.proc = subprocess.Popen(
            [sys.executable, VLLM, "serve", model, "--host", "127.0.0.1", "--port",
             str(self.port), "--max-model-len", "4096"] + list(extra),
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = "http://127.0.0.1:%d" % self.port
        self.model = model

    def __enter__(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("simulator exited with %s" % self.proc.returncode)
            try:
                urllib.request.urlopen(self.base + "/health", timeout=1)
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("simulator did not become healthy")

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        os.unlink(self.tmp.name)

    def tpot(self, tokens, requests):
        """Client-side TPOT (wall seconds), as `vllm bench serve` computes it."""
        values = []
        for dummy in range(requests):
            body = json.dumps({"model": self.model, "prompt": list(range(64)),
                               "max_tokens": tokens, "ignore_eos": True, "stream": True,
                               "stream_options": {"include_usage": True}}).encode()
            req = urllib.request.Request(self.base + "/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
            first = last = None
            n = 0
            for line in urllib.request.urlopen(req, timeout=120):
                if not line.startswith(b"data: {"):
                    continue
                event = json.loads(line[6:])
                if event["choices"]:
                    now = time.perf_counter()
                    first = now if first is None else first
                    last = now
                else:
                    n = event["usage"]["completion_tokens"]
            values.append((last - first) / (n - 1))
        return sum(values) / len(values)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=0.05)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="virtual-clock grid only")
    args = parser.parse_args(argv)
    ok = True
    print("== single-stream speedup vs (1 - a^(k+1)) / ((1 - a)(1 + k c)), target +-5%")
    print("%5s %2s %5s %8s %9s %7s %9s %7s" % ("alpha", "k", "c", "formula", "virtual",
                                               "err%", "http", "err%"))
    for c in (0.05, 0.2):
        base_http = None
        if not args.quick:
            with Served(grid_profile_data(0.5, c, args.time_scale), "target") as srv:
                base_http = srv.tpot(args.tokens, args.requests)
        for alpha in (0.3, 0.6, 0.9):
            profile = Profile(grid_profile_data(alpha, c, 1.0))
            target = profile.find_model("target")
            for k in (1, 3, 5):
                cfg = {"method": "draft_model", "model": "draft", "num_speculative_tokens": k}
                spec = specconfig.validate(cfg, target, profile)
                want = leviathan(alpha, k, c)
                virt = virtual_tpot(profile, None) / virtual_tpot(profile, spec)
                err_v = 100 * (virt / want - 1)
                ok &= abs(err_v) <= 5
                http_txt = "%9s %7s" % ("-", "-")
                if base_http is not None:
                    with Served(grid_profile_data(alpha, c, args.time_scale), "target",
                                ["--speculative-config", json.dumps(cfg)]) as srv:
                        http = base_http / srv.tpot(args.tokens, args.requests)
                    err_h = 100 * (http / want - 1)
                    ok &= abs(err_h) <= 5
                    http_txt = "%9.3f %+7.2f" % (http, err_h)
                print("%5.1f %2d %5.2f %8.3f %9.3f %+7.2f %s"
                      % (alpha, k, c, want, virt, err_v, http_txt))
    if not args.quick:
        print("\n== TPOT at concurrency 1, no speculation (8B W4A16; 1B on the Nano), target +-3%")
        print("%-14s %-10s %12s %12s %7s %8s"
              % ("board", "model", "roofline ms", "http ms", "err%", "tok/s"))
        for name in BOARDS:
            with open(os.path.join(HERE, "profiles", name + ".json")) as handle:
                data = json.load(handle)
            data.update({"time_scale": args.time_scale, "startup_s": 0})
            profile = Profile(data)
            # The 8B model does not fit an 8 GB Nano (as on the real board): use the 1B there.
            name_model = LLAMA_1B if name == "orin_nano_8gb" else LLAMA_W4
            model = profile.find_model(name_model)
            roofline = model.weight_bytes / (profile.memory_bandwidth_bytes_per_s *
                                             profile.bandwidth_efficiency)
            extra = ["--gpu-memory-utilization", UTIL.get(name, "0.8")]
            with Served(data, name_model, extra) as srv:
                tpot = srv.tpot(args.tokens, args.requests) / args.time_scale
            err = 100 * (tpot / roofline - 1)
            ok &= abs(err) <= 3
            print("%-14s %-10s %12.2f %12.2f %+7.2f %8.2f"
                  % (name, name_model[-10:], 1000 * roofline, 1000 * tpot, err, 1 / tpot))
    print("\nRESULT: %s" % ("all within targets" if ok else "TARGET MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
