# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""What ``vllm serve`` reads an argument as: vLLM's option table per version and argparse's prefix rule (pure, stdlib).

The board-side modules cannot import vLLM, so the option strings of the real ``vllm serve`` parser are
shipped here, one table per vLLM version (tests/vllm_lane/dump_serve_options.py prints them from an installed
vLLM; tests/integration_py/test_launch_inputs_programs.py compares them with the lane's vLLM).

vLLM's FlexibleArgumentParser (an argparse.ArgumentParser with ``allow_abbrev`` on) reads:

* ``--a_b`` as ``--a-b`` (underscores up to the first ``.``), ``--x.key=v`` and ``--x.key+`` as ``--x``
  with a JSON value, ``--flag=value`` as ``--flag``;
* a long spelling that is not an option as the one option it is a prefix of (``--api-k`` is ``--api-key``),
  and refuses it when it is a prefix of several;
* ``-tp=1`` as ``-tp``, ``-q8`` as ``-q 8`` (a one-letter short option takes an attached value), ``-t``
  as the one short option it is a prefix of (``-tp``);
* ``-O3``, ``-O=3``, ``-Ox`` as ``--optimization-level`` (0.32; older releases: ``--compilation-config``).

Versions other than those in the table are resolved against every table: a spelling is taken as what any of
them would read it as (the checks in launch/inputs.py refuse it when one of those is refused).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# vLLM version -> long option names (without the leading '--', BooleanOptionalAction's --no- forms included)
# and short options -> the long name of the same option.  From the real parser (dump_serve_options.py).
SERVE_OPTIONS = {
    "0.32": {
        "long": frozenset((
            "additional-config aggregate-engine-logging all2all-backend allow-credentials allow-deprecated-quantization "
            "allowed-headers allowed-local-media-path allowed-media-domains allowed-methods allowed-origins "
            "anthropic-disabled-thinking-effort api-key api-server-count async-scheduling attention-backend attention-config "
            "aux-output-config block-size chat-template chat-template-content-format code-revision cohere-format "
            "cohere-is-reasoning-model collect-detailed-traces compilation-config config config-format convert "
            "cp-kv-cache-interleave-size cpu-distributed-timeout-seconds cpu-offload-gb cpu-offload-params "
            "cudagraph-capture-sizes cudagraph-metrics custom-histogram-buckets data-parallel-address data-parallel-backend "
            "data-parallel-external-lb data-parallel-hybrid-lb data-parallel-multi-port-external-lb data-parallel-rank "
            "data-parallel-rpc-port data-parallel-size data-parallel-size-local data-parallel-start-rank "
            "data-parallel-supervisor-port dbo-decode-token-threshold dbo-prefill-token-threshold dcp-comm-backend "
            "dcp-kv-cache-interleave-size dcp-q-replicate decode-context-parallel-size default-chat-template-kwargs "
            "default-mm-loras device-ids device-memory-utilization diffusion-config disable-access-log-for-endpoints "
            "disable-cascade-attn disable-chunked-mm-input disable-custom-all-reduce disable-fastapi-docs "
            "disable-hybrid-kv-cache-manager disable-log-stats disable-nccl-for-dp-synchronization disable-sliding-window "
            "disable-uvicorn-access-log distributed-executor-backend distributed-timeout-seconds download-dir "
            "dp-supervisor-probe-failure-threshold dp-supervisor-probe-interval-s dp-supervisor-probe-timeout-s dp-sync-interval "
            "dtype ec-manager-config ec-transfer-config elastic-ep-max-dp-size enable-auto-tool-choice "
            "enable-batch-sharded-sampling enable-chunked-prefill enable-cumem-allocator enable-dbo enable-elastic-ep "
            "enable-ep-weight-filter enable-eplb enable-expert-parallel enable-fault-tolerance enable-flash-late-interaction "
            "enable-flashinfer-autotune enable-force-include-usage enable-hc-sp enable-layerwise-nvtx-tracing enable-log-deltas "
            "enable-log-outputs enable-log-requests enable-logging-iteration-details enable-lora "
            "enable-mamba-cache-stochastic-rounding enable-mamba-shared-prefix-checkpoint enable-mfu-metrics "
            "enable-mixed-moe-lora-format enable-mm-embeds enable-moe-shared-loras enable-nccl-comm-suspend enable-offline-docs "
            "enable-per-request-metrics enable-prefix-caching enable-prompt-embeds enable-prompt-tokens-details "
            "enable-request-id-headers enable-return-routed-experts enable-scale-out enable-server-load-tracking "
            "enable-shm-tensor-arena enable-sleep-mode enable-ssl-refresh enable-tokenizer-info-endpoint "
            "enable-tower-connector-lora enable-trace-replay enforce-eager engram-config eplb-config "
            "exclude-tools-when-tool-choice-none expert-placement-strategy fail-on-environ-validation fault-tolerance-config "
            "fingerprint-mode fingerprint-value fully-sharded-loras gdn-prefill-backend generation-config gpu-memory-utilization "
            "grpc grpc-port h11-max-header-count h11-max-incomplete-event-size headless help hf-config-path hf-overrides hf-token "
            "host ignore-patterns interleave-mm-strings io-processor-plugin ir-op-priority jit-monitor-mode jit-monitor-verbose "
            "kda-decode-backend kda-prefill-backend kernel-config kv-cache-dtype kv-cache-dtype-skip-layers kv-cache-memory-bytes "
            "kv-cache-metrics kv-cache-metrics-sample kv-events-config kv-offloading-backend kv-offloading-size "
            "kv-sharing-fast-prefill kv-transfer-config language-model-only limit-mm-per-prompt linear-backend load-format "
            "log-config-file log-error-stack log-level logging-config logits-processors logprobs-mode "
            "long-prefill-token-threshold long-prefill-token-threshold-adaptive lora-dtype lora-modules lora-target-modules "
            "mamba-backend mamba-block-size mamba-cache-dtype mamba-cache-mode mamba-cache-philox-rounds mamba-ssm-cache-dtype "
            "mamba-ssu-algorithm master-addr master-port max-cpu-loras max-cudagraph-capture-size max-log-len max-logprobs "
            "max-lora-cls-labels max-lora-rank max-loras max-model-len max-num-active-seqs max-num-batched-tokens "
            "max-num-queued-reqs max-num-queued-tokens max-num-scheduled-tokens max-num-seqs max-parallel-loading-workers "
            "media-io-kwargs middleware mm-device-do-normalize mm-encoder-attn-backend mm-encoder-attn-dtype "
            "mm-encoder-fp8-scale-path mm-encoder-fp8-scale-save-margin mm-encoder-fp8-scale-save-path mm-encoder-only "
            "mm-encoder-tp-mode mm-hasher-algorithm mm-ipc-gpu-memory-gb mm-processor-cache-gb mm-processor-cache-type "
            "mm-processor-device mm-processor-kwargs mm-shm-cache-max-object-size-mb mm-tensor-ipc model model-class-overrides "
            "model-impl model-loader-extra-config moe-backend nnodes no-allow-credentials no-allow-deprecated-quantization "
            "no-async-scheduling no-cohere-is-reasoning-model no-cudagraph-metrics no-data-parallel-external-lb "
            "no-data-parallel-hybrid-lb no-dcp-q-replicate no-disable-cascade-attn no-disable-chunked-mm-input "
            "no-disable-custom-all-reduce no-disable-fastapi-docs no-disable-hybrid-kv-cache-manager "
            "no-disable-nccl-for-dp-synchronization no-disable-sliding-window no-disable-uvicorn-access-log "
            "no-enable-auto-tool-choice no-enable-batch-sharded-sampling no-enable-chunked-prefill no-enable-cumem-allocator "
            "no-enable-dbo no-enable-elastic-ep no-enable-ep-weight-filter no-enable-eplb no-enable-expert-parallel "
            "no-enable-fault-tolerance no-enable-flash-late-interaction no-enable-flashinfer-autotune "
            "no-enable-force-include-usage no-enable-hc-sp no-enable-layerwise-nvtx-tracing no-enable-log-deltas "
            "no-enable-log-outputs no-enable-log-requests no-enable-logging-iteration-details no-enable-lora "
            "no-enable-mamba-cache-stochastic-rounding no-enable-mamba-shared-prefix-checkpoint no-enable-mfu-metrics "
            "no-enable-mixed-moe-lora-format no-enable-mm-embeds no-enable-moe-shared-loras no-enable-nccl-comm-suspend "
            "no-enable-offline-docs no-enable-per-request-metrics no-enable-prefix-caching no-enable-prompt-embeds "
            "no-enable-prompt-tokens-details no-enable-request-id-headers no-enable-return-routed-experts no-enable-scale-out "
            "no-enable-server-load-tracking no-enable-shm-tensor-arena no-enable-sleep-mode no-enable-ssl-refresh "
            "no-enable-tokenizer-info-endpoint no-enable-tower-connector-lora no-enable-trace-replay no-enforce-eager "
            "no-exclude-tools-when-tool-choice-none no-fail-on-environ-validation no-fully-sharded-loras no-interleave-mm-strings "
            "no-jit-monitor-verbose no-kv-cache-metrics no-kv-sharing-fast-prefill no-language-model-only no-log-error-stack "
            "no-long-prefill-token-threshold-adaptive no-mm-device-do-normalize no-mm-encoder-only no-numa-bind "
            "no-ray-workers-use-nsight no-return-sampling-mask no-return-tokens-as-token-ids no-scheduler-reserve-full-isl "
            "no-skip-mm-profiling no-skip-tokenizer-init no-sleep-mode-offload-cudagraph no-specialize-active-lora "
            "no-swa-bounded-replay no-tokens-only no-trust-remote-code no-trust-request-chat-template no-trust-request-mm-kwargs "
            "no-use-fp64-gumbel no-use-replayssm no-use-tqdm-on-load node-rank num-gpu-blocks-override numa-bind numa-bind-cpus "
            "numa-bind-nodes offload-backend offload-group-size offload-num-in-group offload-params offload-prefetch-step "
            "optimization-level otlp-traces-endpoint override-generation-config per-request-spec-decode-metrics performance-mode "
            "pipeline-parallel-size pooler-config port prefill-context-parallel-size prefill-schedule-interval "
            "prefix-cache-retention-interval prefix-caching-hash-algo prefix-match-unit profiler-config pt-load-map-location "
            "quantization quantization-config ray-workers-use-nsight reasoning-config reasoning-parser reasoning-parser-plugin "
            "renderer-num-workers replayssm-buffer-len response-role return-sampling-mask return-tokens-as-token-ids revision "
            "root-path runner safetensors-load-strategy safetensors-prefetch-block-size safetensors-prefetch-num-threads "
            "scheduler-cls scheduler-reserve-full-isl scheduling-policy seed served-model-name show-hidden-metrics-for-version "
            "shutdown-timeout skip-mm-profiling skip-tokenizer-init sleep-mode-offload-cudagraph sleep-preserve-parameter-names "
            "sparse-indexer-topk-backend spec-method spec-model spec-tokens specialize-active-lora speculative-config "
            "sse-keep-alive-interval ssl-ca-certs ssl-cert-reqs ssl-certfile ssl-ciphers ssl-keyfile stream-interval "
            "structured-outputs-config swa-bounded-replay tensor-parallel-size tokenizer tokenizer-mode tokenizer-revision "
            "tokens-only tool-call-parser tool-parser-plugin tool-server tool-strict-level trust-remote-code "
            "trust-request-chat-template trust-request-mm-kwargs ubatch-size uds use-fp64-gumbel use-replayssm use-tqdm-on-load "
            "uvicorn-log-level video-pruning-method video-pruning-rate watermark watermark-config weight-transfer-config "
            "worker-cls worker-extension-cls "
        ).split()),
        "short": {
            "-ac": "attention-config", "-asc": "api-server-count", "-cc": "compilation-config",
            "-dc": "diffusion-config", "-dcp": "decode-context-parallel-size", "-dp": "data-parallel-size",
            "-dpa": "data-parallel-address", "-dpb": "data-parallel-backend", "-dpe": "data-parallel-external-lb",
            "-dph": "data-parallel-hybrid-lb", "-dpl": "data-parallel-size-local", "-dpm": "data-parallel-multi-port-external-lb",
            "-dpn": "data-parallel-rank", "-dpp": "data-parallel-rpc-port", "-dpr": "data-parallel-start-rank",
            "-ep": "enable-expert-parallel", "-h": "help", "-n": "nnodes",
            "-pcp": "prefill-context-parallel-size", "-pp": "pipeline-parallel-size", "-q": "quantization",
            "-r": "node-rank", "-sc": "speculative-config", "-tp": "tensor-parallel-size",
        },
        # FlexibleArgumentParser's own -O rewrite (not an argparse option).
        "dash_o": "optimization-level",
    },
}
# Short options of the vLLM releases before 0.32 the role supports (0.20 and later), from their
# EngineArgs: -O was --compilation-config there.
LEGACY_SHORT = {"-sc": "speculative-config", "-q": "quantization", "-tp": "tensor-parallel-size",
                "-pp": "pipeline-parallel-size", "-O": "compilation-config", "-h": "help"}

_VERSION_RE = re.compile(r"\A(\d+)\.(\d+)")

EXACT, PREFIX, AMBIGUOUS, UNKNOWN = "exact", "prefix", "ambiguous", "unknown"


def normalise_long(arg):
    """``--a_b.c=1`` -> ``a-b`` (what FlexibleArgumentParser hands argparse, without the dashes)."""
    name = arg[2:].split("=", 1)[0]
    # --json-flag.key=value and --json-flag.key+ set one key of a JSON flag: the flag is the part before.
    name = re.split(r"[.+]", name, 1)[0]
    return name.replace("_", "-")


def tables(version=None):
    """The tables to resolve against: the one for ``version`` (major.minor) when shipped, else all of them."""
    match = _VERSION_RE.match(str(version or ""))
    if match:
        key = "%s.%s" % (int(match.group(1)), int(match.group(2)))
        if key in SERVE_OPTIONS:
            return [SERVE_OPTIONS[key]]
    return [SERVE_OPTIONS[key] for key in sorted(SERVE_OPTIONS)]


def resolve_long(name, version=None):
    """argparse's reading of the normalised long name ``name``: (EXACT|PREFIX|AMBIGUOUS|UNKNOWN, [options]).

    Over several tables the worst reading wins: a prefix in one release and unknown in another is PREFIX,
    with the options it expands to in each.
    """
    found = set()
    status = UNKNOWN
    for table in tables(version):
        longs = table["long"]
        if name in longs:
            found.add(name)
            status = EXACT if status in (UNKNOWN, EXACT) else status
            continue
        candidates = [option for option in longs if option.startswith(name)]
        found.update(candidates)
        if len(candidates) > 1:
            status = AMBIGUOUS
        elif candidates and status != AMBIGUOUS:
            status = PREFIX
    return status, sorted(found)


def resolve_short(arg, version=None):
    """argparse's reading of a single-dash argument: (EXACT|PREFIX|AMBIGUOUS|UNKNOWN, [long names]).

    ``-tp=1``, ``-sc.method`` and ``-q8`` are EXACT (an option with its value); ``-t`` is PREFIX (argparse
    expands it to ``-tp``).  Python releases differ in how they split ``-x=v`` of a multi-letter short option,
    so both readings count.
    """
    head = re.split(r"[=.]", arg, 1)[0]
    found = set()
    status = UNKNOWN
    for table in tables(version):
        shorts = dict(table["short"])
        if arg.startswith("-O"):
            found.add(table["dash_o"])
            status = EXACT if status == UNKNOWN else status
            continue
        if head in shorts:
            found.add(shorts[head])
            status = EXACT if status == UNKNOWN else status
            continue
        if head[:2] in shorts:  # a one-letter option with its value attached (-q8)
            found.add(shorts[head[:2]])
            status = EXACT if status == UNKNOWN else status
        candidates = [shorts[option] for option in shorts if option.startswith(head)]
        found.update(candidates)
        if len(set(candidates)) > 1:
            status = AMBIGUOUS
        elif candidates and status != AMBIGUOUS:
            status = PREFIX
    legacy = LEGACY_SHORT.get("-O" if arg.startswith("-O") else head) or LEGACY_SHORT.get(head[:2])
    if legacy:
        found.add(legacy)
        status = EXACT if status == UNKNOWN else status
    return status, sorted(found)
