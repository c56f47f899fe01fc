#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: rollout_evaluate
short_description: Evaluate speculative decoding on one host in one task, and keep or revert it
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - The step behind the C(jetson.specdec.rollout) role's evaluation of a host. Runs, in order, the baseline (switch,
    clock hold, benchmark, the pending mark, the model prefetch), the fallback ladder (a trial start per rung until one
    starts), k tuning, the rounds of the sequential verdict, the third arm (threshold probe and batch-size schedule),
    the final switch (keep the candidate as the unit's launch, or revert to the baseline) and the outcome written into
    the host's state.
  - What comes next is decided by a pure state machine (C(module_utils/record/evaluation.py)); each remote step is the
    collection's own (M(jetson.specdec.vllm_switch), M(jetson.specdec.vllm_bench), M(jetson.specdec.rollout_state),
    M(jetson.specdec.vllm_prefetch), M(jetson.specdec.jetson_clock_hold)). Every switch first checks that this run
    still holds the rollout lock; every benchmark refreshes it.
  - Each host gets its answer when its own evidence settles, not when the slowest board of its batch does.
  - Returns to the caller before a switch only when O(hooks) asks for the operator's C(before_restart) hook, with
    RV(evaluation) to pass back as O(evaluation) once the hook ran.
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details:
      - Changes nothing and returns RV(plan), the steps the evaluation would start with.
  diff_mode:
    support: none
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: The machine runs on the controller; each step runs its module on the host.
options:
  record:
    description: The host's record as the rollout lock left it (the role's C(rollout_record)).
    type: dict
    required: true
  stored:
    description: The lock's result with the state read under it (the role's C(rollout_stored)); the judged record says what ran before.
    type: dict
    default: {}
  plan:
    description:
      - The launch plan published by the preflight (C(vllm_server_launch) as the rollout's check froze it) - its baseline and
        candidate, with the fallback rungs.
    type: dict
    required: true
  settings:
    description: The checked rollout settings (the filter C(jetson.specdec.rollout_settings)) - verdict, ttft, equivalence, levels, third_arm.
    type: dict
    required: true
  switch:
    description:
      - The C(vllm_server) role's switch inputs (its C(switch_inputs) entry point publishes them as C(vllm_server_switch_inputs)) -
        C(args), the options of M(jetson.specdec.vllm_switch) for the baseline, and C(template_vars), the role variables its unit
        templates read.
    type: dict
    required: true
  bench:
    description: Options of M(jetson.specdec.vllm_bench) besides the levels, the answers and the label, which each benchmark sets.
    type: dict
    required: true
  lock:
    description: The rollout lock this run holds - C(path) (the state file) and C(token).
    type: dict
    required: true
  outcome:
    description: What the host's state records - C(config) (the rollout's config, hashed), C(family), C(model), C(run_id) and C(textfile_dir).
    type: dict
    required: true
  prefetch:
    description: Options of M(jetson.specdec.vllm_prefetch) for the candidate's models after the baseline's benchmark; unset, nothing is fetched.
    type: dict
  hold_clocks:
    description: Options of M(jetson.specdec.jetson_clock_hold) to hold the clocks before the baseline's benchmark; unset, the clocks are left as they are.
    type: dict
  tune_k:
    description: C({max - the probe k}) to tune k before the verdict's rounds (docs/tuning.md); unset, the board's k is judged.
    type: dict
  k_inputs:
    description: C(k_tuning) and C(measured_acceptance) for the candidate's plan (M(jetson.specdec.vllm_switch)).
    type: dict
    default: {}
  reclaim_baseline:
    description: Count the running baseline's allocation as free in the candidate's memory check.
    type: bool
    default: false
  max_batch:
    description: vLLM's C(max_num_seqs), the largest batch the third arm's schedule covers.
    type: int
    default: 256
  hooks:
    description: C({before_restart - true}) to return before every switch so that the caller runs the operator's hook.
    type: dict
    default: {}
  evaluation:
    description: The machine's state returned at a hook (RV(evaluation)); the evaluation goes on from there.
    type: dict
  api_key:
    description: The vLLM API key, for the benchmark and the wait after each switch.
    type: str
  publish:
    description:
      - Once the evaluation is done, the finished record (its timings from C(started) to the end) is written to the
        run's spool and added to the run's custom stats, as M(jetson.specdec.rollout_publish) does for the other paths.
      - C(spool_dir) (the run's spool directory on the controller), C(run_id) (the run's id) and C(started) (when this
        host's evaluation started, UTC epoch seconds, before the operator's hooks).
      - A record that cannot be written fails the task, naming the fix.
    type: dict
notes:
  - The C(jetson.specdec.rollout) role calls it from C(roles/rollout/tasks/evaluate_step.yml); a playbook rarely needs it directly.
"""

EXAMPLES = r"""
# As the rollout role runs it (abridged: the role passes its checked settings and vllm_server's switch inputs).
- name: Evaluate speculative decoding on this host
  jetson.specdec.rollout_evaluate:
    record: "{{ rollout_record }}"
    plan: "{{ rollout_launch }}"
    settings: "{{ rollout_settings }}"
    switch: "{{ vllm_server_switch_inputs }}"
    bench:
      url: http://127.0.0.1:8000
      num_prompts: 30
      progress_path: /var/lib/jetson-specdec/bench-progress.json
      progress_interval: 30
      heartbeat: {path: /var/lib/jetson-specdec/rollout-state.json, token: "{{ rollout_lock.lock.token }}"}
    lock: {path: /var/lib/jetson-specdec/rollout-state.json, token: "{{ rollout_lock.lock.token }}"}
    outcome: {config: "{{ config }}", family: thor, model: Qwen/Qwen3-8B, run_id: "{{ rollout_run_id }}"}
  vars:
    # what the host's state hashes to say whether it needs a rollout (the role's rollout_config)
    config: {baseline: [vllm, serve, Qwen/Qwen3-8B], candidate: [vllm, serve, Qwen/Qwen3-8B, --speculative-config, "{}"]}
  register: rollout_evaluation
"""

RETURN = r"""
done:
  description: The evaluation finished (the final config applied and the outcome written).
  returned: always
  type: bool
hook:
  description: C(event) (before_restart), C(arm) and C(label) of the switch the caller's hook runs before; null when done.
  returned: success
  type: dict
evaluation:
  description:
    - At a hook, the machine's state to pass back as O(evaluation).
    - On failure, what the evaluation had - C(record), C(rounds), C(launch) (the launch applied last) and C(verdict).
  returned: at a hook, and on failure
  type: dict
record:
  description:
    - The host's judged record (status kept or reverted, the verdict, the rounds, the attempts, k tuning, the third arm).
    - With O(publish), the finished record as spooled (its C(timings) added).
  returned: when done
  type: dict
path:
  description: The record's file in the run's spool.
  returned: when done, with O(publish)
  type: str
verdict:
  description: The verdict the final switch applied.
  returned: when done
  type: dict
launch:
  description: The launch applied last (the kept candidate's or the baseline's), as M(jetson.specdec.vllm_switch) returned it.
  returned: when done
  type: dict
written:
  description: The result of M(jetson.specdec.rollout_state) writing the outcome.
  returned: when done
  type: dict
steps:
  description: How many remote steps the evaluation ran.
  returned: when done
  type: int
started:
  description: When this host's evaluation started (UTC epoch seconds; its first call when hooks split it).
  returned: when done
  type: float
ended:
  description: When this host's evaluation ended, its outcome written (UTC epoch seconds).
  returned: when done
  type: float
plan:
  description: The steps the evaluation would start with.
  returned: check mode
  type: list
  elements: str
lock_lost:
  description: The evaluation stopped because another run holds the host's rollout lock now.
  returned: failure
  type: bool
"""
# Documentation only: the work is done by the action plugin of the same name (plugins/action/rollout_evaluate.py).
