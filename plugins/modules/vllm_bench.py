#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_bench
short_description: Benchmark a vLLM OpenAI-compatible server (TTFT, TPOT, ITL, throughput, spec-decode acceptance)
version_added: 0.1.0
description:
  - Streams synthetic requests to a vLLM server at one or more concurrency levels and reports
    latency percentiles, throughput and speculative-decoding counters, with the definitions and
    field names of C(vllm bench serve) and NVIDIA's jetson-llm-benchmark C(runs[]).
  - Runs on the Jetson against its local server, or on the controller with C(delegate_to).
    Python standard library only.
  - Each level sends O(warmup_prompts) discarded requests, then O(num_prompts) measured requests
    through a fixed pool of O(concurrency) streams. One extra discarded probe request precedes
    the first level (it checks that token-id prompts are accepted and calibrates text prompts).
  - TTFT is measured to the first streamed chunk that carries a choice; ITL per chunk; TPOT is
    (E2E latency - TTFT) / (output tokens - 1) with output tokens from the usage chunk. Under
    speculation one chunk carries several tokens, so judge speculation by TPOT, not ITL.
  - Spec-decode figures are differences of the server's C(/metrics) counters taken around each
    measured level.
  - The module never changes the host (C(changed) is always false) and runs in check mode too,
    because it is read-only; note that it still loads the server.
author: jetson.specdec contributors (@jetson-specdec)
extends_documentation_fragment:
  - jetson.specdec.attributes
  - jetson.specdec.progress
  - jetson.specdec.vllm_server
attributes:
  check_mode:
    support: full
    details: The benchmark runs in check mode (read-only); O(dest) is not written in check mode.
options:
  url:
    description: Base URL of the server, C(http://HOST:PORT) or C(https://HOST:PORT), with or without a trailing C(/v1).
  model:
    description: Model name to request. Default is the first id listed by C(/v1/models).
    type: str
  ca_path:
    description:
      - PEM bundle of the CA that signed the server's certificate, for an C(https://) O(url) behind a proxy with
        the fleet's own CA. Default is the system's CA store.
    type: path
  validate_certs:
    description:
      - Check the server's certificate and host name for an C(https://) O(url). V(false) still encrypts but
        trusts any certificate; use it only on a test bench.
    type: bool
    default: true
  endpoint:
    description:
      - C(completions) uses C(/v1/completions) with token-id prompts (exact input length);
        C(chat) uses C(/v1/chat/completions) with text prompts.
    type: str
    choices: [completions, chat]
    default: completions
  concurrency:
    description: Concurrency levels, one C(runs[]) entry each, in this order.
    type: list
    elements: int
    default: [1, 8]
  num_prompts:
    description: Measured requests per concurrency level.
    type: int
    default: 50
  warmup_prompts:
    description: Discarded requests sent at each level's concurrency before it is measured.
    type: int
    default: 10
  input_len:
    description:
      - Prompt length in tokens. Token-id prompts hit it exactly; text prompts are calibrated from
        the probe's C(usage.prompt_tokens). C(input_len + output_len) is clamped to the server's
        C(max_model_len) with a warning.
    type: int
    default: 2048
  output_len:
    description:
      - Tokens generated per request (sent as C(max_tokens) with C(ignore_eos) and temperature 0).
      - With O(output_range_ratio) it is the mean of the requests' output lengths.
    type: int
    default: 128
  output_range_ratio:
    description:
      - Spread of output lengths. Each request asks for a length drawn uniformly (seeded) from
        [floor(O(output_len) * (1 - r)), ceil(O(output_len) * (1 + r))], like C(vllm bench serve)
        given an output-only C(--random-range-ratio) (input ratio 0). Prompt lengths stay exact.
      - With 0 every request asks for O(output_len) tokens; at concurrency above 1 the requests
        of a level then finish and restart together, and medians depend on which requests the
        server happened to prefill together at the start. A spread such as 0.5 breaks that
        lockstep, so repeated runs agree better at concurrency 4 and up.
    type: float
    default: 0.0
    version_added: 0.2.0
  seed:
    description:
      - Seed of the synthetic prompts' content.
      - The first four tokens of every prompt come from a salt drawn afresh for each run, so a
        second run with the same seed against the same server (a repeat measurement) is not
        served from vLLM's prefix cache.
    type: int
    default: 0
  prompt_set:
    description:
      - Which set of the O(seed)'s workload the measured requests draw (prompts, output lengths, or the
        O(dataset_path) file's sampling). Set 0 is what O(seed) alone always drew.
      - The rollout measures its i-th baseline round and its i-th candidate round on set i, so each
        pair of rounds meets other prompts of the workload and both arms of a pair the same ones.
        The O(answers) prompts do not rotate (the equivalence check compares the same prompts).
    type: int
    default: 0
    version_added: 0.3.0
  prompt_token_ids_range:
    description:
      - Token ids of synthetic prompts are drawn from [low, high). Must stay below the model's
        vocabulary size; the default suits even tiny test models (vocabulary about 1024).
    type: list
    elements: int
    default: [10, 500]
  request_timeout:
    description: Seconds one request may take in total (connect, prefill and streaming).
    type: float
    default: 300
  max_duration:
    description:
      - Bound in seconds on the whole module run. Requests not started in time are recorded as
        failed with reason C(deadline) and the module reports what it measured.
    type: float
    default: 3600
  max_failed_ratio:
    description: Fail the task when more than this fraction of measured requests failed.
    type: float
    default: 0.1
  power_mode:
    description:
      - The host's power mode name (for example from jetson facts); a warning is added when it
        is not C(MAXN) or C(MAXN_*).
    type: str
  dataset_path:
    description:
      - A prompt file on the host running the module, in one of the formats C(vllm bench serve) reads
        (see O(dataset_format)); the measured requests are its prompts, sampled with O(seed), instead of
        synthetic ones. The whole file is checked before the first request; a bad line fails the task
        naming the line.
      - Each request's output length is the line's own (C(output_tokens), or the words of a ShareGPT
        reference answer) bounded by O(output_len), else O(output_len). O(input_len) does not apply.
      - O(endpoint=chat) applies the model's chat template on the server, as C(vllm bench serve) does for
        these files by default; O(endpoint=completions) sends the prompt as written, like its
        C(--skip-chat-template).
    type: path
    version_added: 0.2.0
  dataset_format:
    description:
      - V(custom) is C(--dataset-name custom) (a C(.jsonl) file, one object per line with a C(prompt)
        string); V(spec_bench) is SpecBench's question file (JSONL with C(turns), the first turn is the
        prompt, and C(category)); V(sharegpt) is a JSON array of C(conversations) with C(from)/C(value).
    type: str
    choices: [custom, spec_bench, sharegpt]
    default: custom
    version_added: 0.2.0
  dataset_category:
    description: Keep only the spec_bench lines of this category (C(--spec-bench-category)).
    type: str
    version_added: 0.2.0
  dest:
    description: Also write the result as JSON to this path on the host running the module.
    type: path
  sample_conditions:
    description:
      - Read the board's conditions (power mode, GPU and EMC clocks, temperatures, free memory; see
        RV(conditions)) before the first request and after each concurrency level, so a verdict can set
        aside a round measured under other clocks than its counterpart. Read-only sysfs reads, no command.
    type: bool
    default: true
    version_added: 0.2.0
  sample_power:
    description:
      - Meter the board's power during each level from its INA3221/INA238 rails (the files jetson-stats and
        tegrastats read; found by driver name and rail label under O(conditions_root)) and report average power
        and joules per output token per level (RV(runs[].power)) and the rails used (RV(power_rails)).
      - A board without readable rails reports no energy (no RV(runs[].power)); a rail that fails mid-level is a warning, never a failed benchmark.
    type: bool
    default: true
    version_added: 0.2.0
  watch_traffic:
    description:
      - Poll the server's queue gauges (C(vllm:num_requests_running) and C(vllm:num_requests_waiting) on C(/metrics))
        every 0.5 s while each level runs. More requests than the level's concurrency is traffic from someone else;
        RV(runs[].traffic) says how much, a warning names it, and the rollout's verdict sets that round aside.
      - A server without those gauges reports no traffic (null).
    type: bool
    default: true
    version_added: 0.2.0
  progress_path:
    description:
      - Write the run's progress to this file (JSON, replaced atomically at most every 2 s and at each step) -
        the step, the concurrency level, requests done of its total and of the whole run, when it started.
      - For a benchmark started with C(async) and C(poll=0) and waited for by M(jetson.specdec.vllm_job_wait),
        which prints it as it goes. Not written in check mode.
    type: path
  heartbeat:
    description:
      - Before the benchmark starts, refresh this rollout lock (M(jetson.specdec.rollout_state) with
        O(jetson.specdec.rollout_state#module:state=refresh)), with C(path) (the state file) and C(token) (the lock's token).
      - When the lock is no longer this run's (taken over, broken by hand), the task fails and nothing is
        measured. Done by the action plugin on the controller, one module call on the host.
    type: dict
  conditions_root:
    description:
      - Root the condition files are read under. Keep C(/) on a real board; a simulated board's sysroot
        (as for M(jetson.specdec.jetson_facts)'s O(jetson.specdec.jetson_facts#module:root)) otherwise.
    type: path
    default: /
    version_added: 0.2.0
  answers:
    description:
      - After the levels, on the same server (no extra restart), collect the greedy answers of a few
        fixed prompts for the equivalence check (the filter C(jetson.specdec.rollout_equivalence) compares
        the arms). Temperature 0, the O(seed), no stream, at most O(answers.max_tokens) tokens each. The prompts are the first O(answers.prompts) of the
        O(dataset_path) file shuffled with O(seed), or synthetic text prompts of that seed; the same
        on every arm and round.
      - A pass that fails is a warning and C(answers.error), never a failed benchmark.
      - Unset (the default), no answers are collected.
    type: dict
    version_added: 0.3.0
    suboptions:
      prompts:
        description: How many prompts.
        type: int
        default: 4
      max_tokens:
        description: The most tokens of each answer.
        type: int
        default: 32
      passes:
        description: Passes over the prompts (the baseline's second pass is the control, the board's own noise).
        type: int
        default: 1
"""

EXAMPLES = r"""
- name: Read the board (the power mode goes into the result)
  jetson.specdec.jetson_facts:

- name: Benchmark the local vLLM server at concurrency 1 and 8
  jetson.specdec.vllm_bench:
    url: http://127.0.0.1:8000
    power_mode: "{{ (ansible_facts.jetson.power_mode | default({}, true)).name | default(omit, true) }}"
    dest: /var/lib/jetson-specdec/bench-baseline.json
  register: vllm_bench_baseline

- name: Show TPOT p50 and throughput per concurrency level
  ansible.builtin.debug:
    msg: "{{ vllm_bench_baseline.runs | map(attribute='concurrency') | zip(vllm_bench_baseline.runs | map(attribute='tpot_ms_p50'),
             vllm_bench_baseline.runs | map(attribute='throughput_tok_s')) | list }}"

- name: Measure on the operator's own prompts (one JSON object per line with a "prompt" key)
  jetson.specdec.vllm_bench:
    url: http://127.0.0.1:8000
    dataset_path: /var/lib/jetson-specdec/prompts.jsonl
    dataset_format: custom
    concurrency: [1]
    num_prompts: 20
    max_duration: 600

- name: Quick check from the controller, bounded to five minutes
  jetson.specdec.vllm_bench:
    url: "http://{{ inventory_hostname }}:8000"
    concurrency: [1]
    num_prompts: 10
    warmup_prompts: 2
    input_len: 512
    max_duration: 300
  delegate_to: localhost
"""

RETURN = r"""
runs:
  description: One entry per concurrency level (field names match jetson-llm-benchmark's C(runs[])).
  returned: success
  type: list
  elements: dict
  contains:
    concurrency: {description: Number of concurrent streams., type: int, returned: always}
    completed: {description: Requests that finished successfully., type: int, returned: always}
    failed: {description: Requests that failed (see C(errors))., type: int, returned: always}
    output_tokens: {description: Sum of output tokens of completed requests., type: int, returned: always}
    duration_s: {description: Wall time from the first send to the last completion of the level., type: float, returned: always}
    throughput_tok_s: {description: Output tokens per second of wall time., type: float, returned: always}
    request_throughput: {description: Completed requests per second., type: float, returned: always}
    ttft_ms_p50: {description: Median time to first token in ms (null without data)., type: float, returned: always}
    ttft_ms_p90: {description: 90th percentile of TTFT in ms., type: float, returned: always}
    ttft_ms_p99: {description: 99th percentile of TTFT in ms., type: float, returned: always}
    tpot_ms_p50: {description: Median time per output token (after the first) in ms., type: float, returned: always}
    tpot_ms_p90: {description: 90th percentile of TPOT in ms., type: float, returned: always}
    tpot_ms_p99: {description: 99th percentile of TPOT in ms., type: float, returned: always}
    itl_ms_p50: {description: Median gap between streamed chunks in ms., type: float, returned: always}
    itl_ms_p99: {description: 99th percentile of the chunk gap in ms., type: float, returned: always}
    e2e_latency_ms_p50: {description: Median request latency (send to last content chunk) in ms., type: float, returned: always}
    e2e_latency_ms_p99: {description: 99th percentile of request latency in ms., type: float, returned: always}
    errors:
      description: Failed requests counted by reason (C(timeout), C(deadline), C(http_NNN), C(stream_closed),
        C(malformed_sse), C(server_error), C(no_content), C(connection_refused), C(connection_error)).
      type: dict
      returned: always
    spec_decode:
      description: Spec-decode counters of this level, same keys as the top-level C(spec_decode), or null.
      type: dict
      returned: always
    power:
      description:
        - The board's power while the level ran (O(sample_power)), sampled from its INA3221/INA238 rails
          every 0.1 s in this process and integrated over the level; null when the rails could not be read
          twice. Absent when O(sample_power=false) or the board has no readable rails.
        - C(power_w_avg) (W), C(energy_j) (J), C(seconds), C(samples), C(output_tokens), C(j_per_token)
          (joules per output token) and C(tokens_per_j) (its inverse; null without tokens).
      type: dict
      returned: when the board has readable power rails
      version_added: 0.2.0
    traffic:
      description:
        - What the server's queue gauges showed during the level (O(watch_traffic)); null when it has none.
        - C(peak_requests) (running plus waiting, the most seen), C(foreign_requests) (how many more than the level's
          concurrency, requests the benchmark did not send) and C(polls).
      type: dict
      returned: when O(watch_traffic=true)
      version_added: 0.2.0
    requests:
      description:
        - One entry per measured request of this level, in send order, failed ones included; the evidence
          C(jetson.specdec.spec_decide) weighs (a verdict on medians alone throws it away).
      type: list
      elements: dict
      returned: always
      version_added: 0.2.0
      contains:
        ok: {description: The request completed., type: bool, returned: always}
        ttft_ms: {description: Time to first token in ms (null when it failed)., type: float, returned: always}
        tpot_ms: {description: Time per output token after the first in ms (null with fewer than two tokens)., type: float, returned: always}
        e2e_ms: {description: Send to last content chunk in ms (null when it failed)., type: float, returned: always}
        output_tokens: {description: Output tokens (0 when it failed)., type: int, returned: always}
        start_s: {description: Seconds from the start of the level's measurement to the send (null if never sent)., type: float, returned: always}
        end_s: {description: Seconds from the start of the level's measurement to the end of the request., type: float, returned: always}
answers:
  description:
    - The greedy answers (with O(answers) only).
  returned: when O(answers) is set
  type: dict
  version_added: 0.3.0
  contains:
    prompts: {description: The prompts (each cut at 200 characters)., type: list, elements: str, returned: always}
    prompts_sha256: {description: 'Hash of the prompts, O(answers.max_tokens) and the endpoint: the same on both arms.', type: str, returned: always}
    max_tokens: {description: The most tokens of each answer., type: int, returned: always}
    passes: {description: One list of answer texts per pass (in prompt order)., type: list, elements: list, returned: always}
    error: {description: Why a pass failed (null when all passed)., type: str, returned: always}
    seconds: {description: Wall time of all passes., type: float, returned: always}
spec_decode:
  description: Spec-decode counter differences summed over all measured levels; null when the server exposes none.
  returned: success
  type: dict
  contains:
    drafts: {description: Draft steps., type: int, returned: always}
    draft_tokens: {description: Draft tokens proposed., type: int, returned: always}
    accepted_tokens: {description: Draft tokens accepted., type: int, returned: always}
    acceptance_rate: {description: accepted_tokens / draft_tokens (null if no drafts)., type: float, returned: always}
    mean_acceptance_length: {description: 1 + accepted_tokens / drafts (bonus token included)., type: float, returned: always}
    per_position: {description: Acceptance rate of each draft position (accepted at position / drafts)., type: list, elements: float, returned: always}
server:
  description: What the server said about itself.
  returned: success
  type: dict
  contains:
    version: {description: 'From C(/version), null if absent.', type: str, returned: always}
    model: {description: The model benchmarked., type: str, returned: always}
    max_model_len: {description: 'From C(/v1/models), null if absent.', type: int, returned: always}
simulated:
  description: Value of the server's C(X-Jetson-Simulated) header, or null for a real server.
  returned: success
  type: str
wall_s:
  description:
    - Seconds the whole benchmark took on the board (discovery, probe, warm-up, every level, the answers), more
      than the levels' C(duration_s) together. The rollout's time budget counts this.
  returned: success
  type: float
config:
  description: The settings actually used (lengths after clamping; C(prompt_kind) is C(token_ids) or C(text)).
  returned: success
  type: dict
  sample: {input_len: 2048, output_len: 128, output_range_ratio: 0.0, num_prompts: 50, warmup_prompts: 10, endpoint: completions,
           seed: 0, prompt_set: 0, concurrency: [1, 8], prompt_kind: token_ids}
workload:
  description:
    - Which prompts were sent. For a prompt file, its C(name), C(format), C(sha256), C(count) of usable
      prompts, C(category) filter, C(prompt_words) (min, p50, max), C(categories) (prompts per category,
      when the file has them) and C(requests_sent). With categories and speculation on,
      C(acceptance_by_category) gives each category's spec-decode counters (keys of C(spec_decode) plus
      C(requests)) from a separate untimed pass of up to four of its prompts at concurrency 1, before
      the result is returned. For synthetic prompts, C(name=synthetic), the
      C(format) (C(token_ids) or C(text)) and C(prompt_token_ids_range).
  returned: success
  type: dict
  version_added: 0.2.0
power_rails:
  description:
    - The board's power rails (C(rails), each with C(name), C(sensor) and C(device)), the rails whose sum is the
      board's total (C(total_rails)) and how that total was chosen (C(total_source)). Module rails exclude the
      carrier board, so two arms of one board compare; the figure is not a wall-socket reading.
  returned: when O(sample_power=true) and the board has readable rails
  type: dict
  version_added: 0.2.0
conditions:
  description:
    - The board's conditions read before the first request (C(when=before)) and after each level
      (C(when=after concurrency N)); absent with O(sample_conditions=false). Sources a board lacks are null.
    - C(power_mode) (C(id), C(name)), C(maxn); C(gpu) (devfreq C(node), C(cur_hz), C(min_hz), C(max_hz),
      C(governor)); C(clocks_pinned) (the GPU's floor is its ceiling, as C(jetson_clocks) sets it);
      C(throttled) (a pinned GPU running below its maximum); C(emc); C(thermal_c) (zone type to degrees C);
      C(max_temp_c); C(mem_available_bytes); C(gpu_processes) (C(pid), C(name), C(vllm) of every process holding a GPU
      device node open; null without /proc).
  returned: success
  type: list
  elements: dict
  version_added: 0.2.0
bench_warnings:
  description:
    - Benchmark warnings (simulated server, power mode not MAXN, failures, prompt fallback, clamped lengths).
    - They are also emitted as task warnings, which Ansible keeps in its own C(warnings) key in a form
      that is not guaranteed to be plain strings; use this key in playbook logic. The O(dest) file
      carries the same list as C(warnings), like jetson-llm-benchmark's output.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.bench.client import BenchError
from ansible_collections.jetson.specdec.plugins.module_utils.bench.datasets import DatasetError, load_dataset
from ansible_collections.jetson.specdec.plugins.module_utils.bench.progress import Progress
from ansible_collections.jetson.specdec.plugins.module_utils.bench.prompts import output_len_bounds
from ansible_collections.jetson.specdec.plugins.module_utils.bench.runner import run_benchmark
from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_json
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import conditions, power
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.files import RootReader


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", default="http://127.0.0.1:8000"),
            model=dict(type="str"),
            api_key=dict(type="str", no_log=True),
            ca_path=dict(type="path"),
            validate_certs=dict(type="bool", default=True),
            endpoint=dict(type="str", default="completions", choices=["completions", "chat"]),
            concurrency=dict(type="list", elements="int", default=[1, 8]),
            num_prompts=dict(type="int", default=50),
            warmup_prompts=dict(type="int", default=10),
            input_len=dict(type="int", default=2048),
            output_len=dict(type="int", default=128),
            output_range_ratio=dict(type="float", default=0.0),
            seed=dict(type="int", default=0),
            prompt_set=dict(type="int", default=0),
            prompt_token_ids_range=dict(type="list", elements="int", default=[10, 500], no_log=False),
            request_timeout=dict(type="float", default=300.0),
            max_duration=dict(type="float", default=3600.0),
            max_failed_ratio=dict(type="float", default=0.1),
            power_mode=dict(type="str"),
            dataset_path=dict(type="path"),
            dataset_format=dict(type="str", default="custom", choices=["custom", "spec_bench", "sharegpt"]),
            dataset_category=dict(type="str"),
            dest=dict(type="path"),
            sample_conditions=dict(type="bool", default=True),
            sample_power=dict(type="bool", default=True),
            watch_traffic=dict(type="bool", default=True),
            conditions_root=dict(type="path", default="/"),
            progress_path=dict(type="path"),
            # the action plugin's (it takes them out before the module runs): documented with the module
            progress_interval=dict(type="int"),
            progress_label=dict(type="str"),
            heartbeat=dict(type="dict"),
            answers=dict(type="dict", options=dict(
                prompts=dict(type="int", default=4),
                max_tokens=dict(type="int", default=32, no_log=False),
                passes=dict(type="int", default=1, no_log=False),
            )),
        ),
        supports_check_mode=True,
    )


def validate(p):
    """Return an error message for impossible settings, else None."""
    if not p["concurrency"] or min(p["concurrency"]) < 1:
        return "concurrency must be a non-empty list of integers >= 1"
    for key in ("num_prompts", "input_len", "output_len"):
        if p[key] < 1:
            return "%s must be >= 1" % key
    try:  # the runner's own rule (and its message)
        output_len_bounds(p["output_len"], p["output_range_ratio"])
    except ValueError as exc:
        return str(exc)
    if p["warmup_prompts"] < 0:
        return "warmup_prompts must be >= 0"
    if p["prompt_set"] < 0:
        return "prompt_set must be >= 0 (0 is the seed's first set of prompts)"
    for key in ("request_timeout", "max_duration"):
        if p[key] <= 0:
            return "%s must be > 0" % key
    answers = p.get("answers") or {}
    for key in ("prompts", "max_tokens", "passes"):
        if answers and answers[key] < 1:
            return "answers.%s must be >= 1" % key
    if not 0 <= p["max_failed_ratio"] <= 1:
        return "max_failed_ratio must be within [0, 1]"
    rng = p["prompt_token_ids_range"]
    if len(rng) != 2 or rng[0] < 0 or rng[1] <= rng[0]:
        return "prompt_token_ids_range must be [low, high] with 0 <= low < high"
    return None


def main():
    module = build_module()
    p = module.params
    error = validate(p)
    if error:
        module.fail_json(msg=error)
    cfg = dict((k, p[k]) for k in (
        "url", "model", "api_key", "endpoint", "concurrency", "num_prompts", "warmup_prompts",
        "input_len", "output_len", "output_range_ratio", "seed", "prompt_set", "prompt_token_ids_range", "request_timeout",
        "max_duration", "max_failed_ratio", "power_mode", "ca_path", "validate_certs", "watch_traffic", "answers"))
    if p["dataset_path"]:
        try:  # the whole file is checked before the server sees a request
            cfg["dataset"] = load_dataset(p["dataset_path"], p["dataset_format"], p["dataset_category"])
        except DatasetError as exc:
            module.fail_json(msg=str(exc), changed=False)
    elif p["dataset_category"]:
        module.fail_json(msg="dataset_category needs dataset_path (a spec_bench file)", changed=False)
    if p["sample_conditions"]:
        reader = RootReader(p["conditions_root"])
        cfg["sampler"] = lambda: conditions.sample(reader)
    rails = None
    if p["sample_power"]:
        reader = RootReader(p["conditions_root"])
        cfg["power_meter"] = power.meter_for(reader)
        if cfg["power_meter"] is not None:
            rails = power.describe(reader)
    if p["progress_path"] and not module.check_mode:
        path = p["progress_path"]
        cfg["progress"] = Progress(lambda snap: atomic_write_json(path, snap), p["concurrency"], p["num_prompts"],
                                   p["warmup_prompts"])
        cfg["progress"].start()
    try:
        result, failure = run_benchmark(cfg)
    except BenchError as exc:
        module.fail_json(msg=str(exc), changed=False)
    if p["dest"] and not module.check_mode:
        try:
            atomic_write_json(p["dest"], result)
        except (IOError, OSError) as exc:
            module.fail_json(msg="cannot write %s: %s" % (p["dest"], exc), changed=False, **result)
    if rails is not None:
        result["power_rails"] = rails
    warnings = result.pop("warnings")
    for w in warnings:
        module.warn(w)
    if failure:
        module.fail_json(msg=failure, changed=False, bench_warnings=warnings, **result)
    module.exit_json(changed=False, bench_warnings=warnings, **result)


if __name__ == "__main__":
    main()
