"""`vllm` command line: `vllm --version` and `vllm serve MODEL [options]`.

Parsing uses argparse like vLLM's FlexibleArgumentParser, so unknown flags fail with
"vllm serve: error: unrecognized arguments: ..." and exit code 2; engine-side
failures print vLLM's error text and exit 1.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time

from . import hub, logs, memory, specconfig
from .errors import SimExit, traceback_lines
from .profile import ProfileError, load_profile

DTYPES = ["auto", "half", "float16", "bfloat16", "float", "float32"]


def parse_type(return_type):
    """vllm/engine/arg_utils.py: turn a conversion failure into an argparse error."""
    def _parse(val):
        try:
            return return_type(val)
        except ValueError:
            raise argparse.ArgumentTypeError(
                "Value %s cannot be converted to %r." % (val, return_type))
    return _parse


def human_int(text):
    """Integers with vLLM's size suffixes: k=1000, K=1024, m/M likewise."""
    units = {"k": 1000, "K": 1024, "m": 1000 ** 2, "M": 1024 ** 2}
    text = text.strip()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def loads(text):
    """json.loads that also insists on an object; named `loads` so the argparse error
    reads like vLLM's ("cannot be converted to <function loads at 0x...>")."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("speculative config must be a JSON object")
    return value


def build_top_parser():
    parser = argparse.ArgumentParser(prog="vllm", description="vLLM CLI (Jetson simulator)")
    parser.add_argument("-v", "--version", action="store_true")
    parser.add_argument("subcommand", nargs="?", choices=["serve"])
    return parser


def build_parser():
    """The `vllm serve` parser; errors read "vllm serve: error: ..." as in vLLM."""
    serve = argparse.ArgumentParser(prog="vllm serve", usage="vllm serve [model_tag] [options]",
                                    description="Start the vLLM OpenAI Compatible API server.")
    serve.add_argument("model_tag", nargs="?", default=None)
    serve.add_argument("--model", default=None)
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--served-model-name", nargs="+", default=None)
    serve.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    serve.add_argument("--max-model-len", type=parse_type(human_int), default=None)
    serve.add_argument("--max-num-seqs", type=int, default=None)
    serve.add_argument("--max-num-batched-tokens", type=parse_type(human_int), default=None)
    serve.add_argument("--speculative-config", "-sc", type=parse_type(loads), default=None)
    serve.add_argument("--api-key", default=None)
    serve.add_argument("--dtype", choices=DTYPES, default="auto")
    serve.add_argument("--enforce-eager", action="store_true", default=False)
    serve.add_argument("--no-enforce-eager", dest="enforce_eager", action="store_false")
    serve.add_argument("--trust-remote-code", action="store_true")
    serve.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    serve.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    serve.add_argument("--quantization", "-q", default=None)
    serve.add_argument("--kv-cache-dtype", default="auto")
    serve.add_argument("--block-size", type=int, default=None)
    serve.add_argument("--seed", type=int, default=None)
    serve.add_argument("--swap-space", type=float, default=4)
    serve.add_argument("--cpu-offload-gb", type=float, default=0)
    serve.add_argument("--download-dir", default=None)
    serve.add_argument("--load-format", default="auto")
    serve.add_argument("--tokenizer", default=None)
    serve.add_argument("--revision", default=None)
    serve.add_argument("--chat-template", default=None)
    serve.add_argument("--generation-config", default="auto")
    serve.add_argument("--uvicorn-log-level", default="info")
    serve.add_argument("--root-path", default=None)
    for flag in ("enable-prefix-caching", "enable-chunked-prefill", "enable-log-requests",
                 "disable-log-stats", "disable-log-requests", "disable-frontend-multiprocessing",
                 "enable-auto-tool-choice", "disable-fastapi-docs", "enable-force-include-usage"):
        serve.add_argument("--" + flag, action="store_true")
        serve.add_argument("--no-" + flag, action="store_true")
    serve.add_argument("--tool-call-parser", default=None)
    serve.add_argument("--reasoning-parser", default=None)
    serve.add_argument("--compilation-config", "-O", default=None)
    serve.add_argument("--max-cudagraph-capture-size", type=int, default=None)
    serve.add_argument("--max-seq-len-to-capture", type=int, default=None)
    return serve


def normalize(argv):
    """vLLM accepts --snake_case spellings of every flag."""
    out = []
    for arg in argv:
        if arg.startswith("--"):
            key, eq, rest = arg.partition("=")
            arg = key.replace("_", "-") + eq + rest
        out.append(arg)
    return out


def main(argv=None):
    argv = normalize(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "serve":
        top = build_top_parser().parse_args(argv)  # exits 2 on anything else
        if not top.version:
            build_top_parser().print_help()
            return 0
        try:
            version = load_profile().vllm_version
        except ProfileError as exc:
            sys.stderr.write("%s\n" % exc)
            return 1
        print(version)
        return 0
    args = build_parser().parse_args(argv[1:])  # exits 2 on bad flags, like vLLM
    try:
        return serve(args)
    except SimExit as exc:
        for line in exc.lines:
            logs.raw(line)
        return exc.code


def gated_repo_lines(model):
    """huggingface_hub's GatedRepoError when vLLM fetches a gated model's config without a token.

    The URL starts at HF_ENDPOINT, as the hub client builds it (the test bed has no network;
    a fleet that uses a mirror sets it)."""
    endpoint = (os.environ.get("HF_ENDPOINT") or "http://127.0.0.1:9/hf-mirror").rstrip("/")
    return traceback_lines("huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-sim)",
                           "huggingface_hub/utils/_http.py") + [
        "",
        "Cannot access gated repo for url %s/%s/resolve/main/config.json." % (endpoint, model),
        "Access to model %s is restricted. You must have access to it and be authenticated to access it. "
        "Please log in." % model]


def serve(args):
    try:
        profile = load_profile()
    except ProfileError as exc:
        logs.error("jetson_sim", str(exc))
        return 1
    model_name = args.model_tag or args.model or "Qwen/Qwen3-0.6B"
    logs.warning("jetson_sim", "SIMULATED vLLM stand-in on board profile '%s' (no GPU, no "
                 "weights; timings from a physical model, time_scale=%s)"
                 % (profile.name, profile.time_scale))
    logs.info("api_server.py:1896", "vLLM API server version %s" % profile.vllm_version)
    target = profile.find_model(model_name)
    if target is None or target.kind == "eagle3":
        raise SimExit(1, traceback_lines(
            "ValueError: " + specconfig.invalid_repo_message(model_name),
            "vllm/transformers_utils/config.py"))
    max_len = args.max_model_len or target.max_position_embeddings
    if max_len > target.max_position_embeddings:
        raise SimExit(1, traceback_lines(
            "ValueError: User-specified max_model_len (%d) is greater than the derived "
            "max_model_len (max_position_embeddings=%d or model_max_length=None in model's "
            "config.json). To allow overriding this maximum, set the env var "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with "
            "extreme caution." % (max_len, target.max_position_embeddings)))
    logs.info("model.py:1510", "Using max model len %d" % max_len)

    speculative = args.speculative_config is not None
    faults = profile.faults_for(speculative)
    garble = faults.get("garble")
    if garble is not None and not isinstance(garble, bool) and not (
            isinstance(garble, (int, float)) and 0 <= garble <= 1):
        # a profile bug of the test bed, not a vLLM error: say so plainly
        raise SimExit(2, ["jetson-sim: the profile's fault garble must be true, false or a share of prompts "
                          "from 0 to 1, got %r" % (garble,)])
    spec = None
    if speculative:
        if faults.get("reject_speculative_config"):
            raise SimExit(1, traceback_lines("ValueError: %s" % faults["reject_speculative_config"]))
        if faults.get("gated_repo") and args.speculative_config.get("model"):
            raise SimExit(1, gated_repo_lines(args.speculative_config["model"]))
        spec = specconfig.validate(args.speculative_config, target, profile)
        name = args.speculative_config.get("model") or ""
        if spec.draft is not None and not name.startswith(("/", ".")) and (
                os.environ.get("HF_HOME") or os.environ.get("HF_HUB_CACHE")):
            # vLLM fetches a draft or head it does not find in the cache here, while the host serves nothing.
            # Modelled only where the environment names the cache, as the collection's unit does.
            try:
                hub.fetch(profile, name, faults)
            except hub.HubError:  # offline or no route: what transformers says when neither works
                raise SimExit(1, traceback_lines(
                    "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find "
                    "them in the cached files.", "transformers/utils/hub.py"))
    util = args.gpu_memory_utilization
    if not 0 < util <= 1:
        raise SimExit(1, traceback_lines(
            "ValueError: GPU memory utilization must be within (0, 1]. Got %s." % util))

    def eng_log(where, msg):
        return logs.info(where, msg, proc="EngineCore_DP0")

    eng_log("core.py:77", "Initializing a V1 LLM engine (v%s) with config: model='%s', "
            "speculative_config=%s, max_seq_len=%d, enforce_eager=%s"
            % (profile.vllm_version, model_name, spec.describe() if spec else None, max_len,
               args.enforce_eager))
    memory.check_free(profile, util)
    eng_log("gpu_model_runner.py:2338", "Starting to load model %s..." % model_name)
    if faults.get("hang_at_startup"):
        while True:  # stuck loading, the port never opens
            time.sleep(3600)
    time.sleep(float(faults.get("startup_delay_s", 0)))  # wall seconds, not scaled
    time.sleep(float(profile.startup_s) * profile.time_scale)
    if spec is not None and spec.draft is not None:
        eng_log("gpu_model_runner.py:2370", "Loading drafter model...")
        if faults.get("oom_when_speculative"):
            raise memory.oom_failure(profile, spec)
    plan = memory.plan(profile, target, spec, util, max_len, args.enforce_eager)
    eng_log("gpu_model_runner.py:2392", "Model loading took %.4f GiB and %.6f seconds"
            % (plan.weights / memory.GIB, float(profile.startup_s) * profile.time_scale))
    eng_log("gpu_worker.py:298", "Available KV cache memory: %.2f GiB" % (plan.kv_budget / memory.GIB))
    eng_log("kv_cache_utils.py:1087", "GPU KV cache size: {:,} tokens".format(plan.kv_tokens))
    eng_log("kv_cache_utils.py:1091", "Maximum concurrency for {:,} tokens per request: {:.2f}x"
            .format(max_len, plan.kv_tokens / float(max_len)))

    from .server import SimServer  # imported late: the failure paths above stay light
    api_key = args.api_key or os.environ.get("VLLM_API_KEY")
    served = (args.served_model_name or [model_name])[0]
    sim = SimServer(profile, target, spec, plan, served_name=served, model_path=model_name,
                    max_model_len=max_len, max_num_seqs=args.max_num_seqs or 256,
                    api_key=api_key, faults=faults, seed=args.seed)
    host = args.host or "0.0.0.0"
    sim.bind(host, args.port)

    def _terminate(signum, frame):
        threading.Thread(target=sim.shutdown).start()
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    logs.info("api_server.py:1971", "Starting vLLM API server 0 on http://%s:%d" % (host, args.port))
    logs.raw("INFO:     Started server process [%d]" % os.getpid())
    logs.raw("INFO:     Waiting for application startup.")
    logs.raw("INFO:     Application startup complete.")
    sim.serve_forever()
    logs.raw("INFO:     Shutting down")
    logs.raw("INFO:     Finished server process [%d]" % os.getpid())
    return 0
