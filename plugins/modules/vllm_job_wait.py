#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_job_wait
short_description: Wait for a vllm_bench or vllm_wait task started with async, printing its progress
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - Waits for a M(jetson.specdec.vllm_bench) or M(jetson.specdec.vllm_wait) task started with C(async) and
    C(poll=0), and returns that task's result as its own, so a registered result reads exactly as the synchronous
    task's would (a failure too, with its message and cause).
  - While it waits, prints one line per host at most every O(interval) seconds in the default output, from the
    progress file the job writes (its C(progress_path)) instead of one silent task for up to the job's bound, and
    without the "FAILED - RETRYING" lines of an C(until) loop. For a benchmark - the step, the concurrency level,
    the requests done and an estimate of the time left; for a vLLM start - how long it has waited, the unit's
    state and restarts, and the server's last answer.
  - An action plugin looks at the host; each look is one shell command there (no Python is started on the host)
    that waits while the job runs, checking its status file every second as M(ansible.builtin.async_status) reads
    it, and then reads the status and the progress file. A look answers as soon as the job has ended, or when the
    next progress line is due; both files are removed once the job has finished.
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: Reads files only; a job started in check mode is waited for in check mode.
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: Runs on the controller as an action plugin that looks at the host with one shell command per progress line.
options:
  jid:
    description: The C(ansible_job_id) the async task registered.
    type: str
    required: true
  progress_path:
    description: The C(progress_path) given to that task.
    type: path
    required: true
  label:
    description: What the lines call this job (for example C(baseline), C(candidate) or C(vLLM start)).
    type: str
    default: job
  interval:
    description: Seconds between two progress lines of a host. 0 prints none.
    type: int
    default: 30
  poll:
    description:
      - Without progress lines (O(interval=0)), a look answers after at most 6 polls while the job runs (the job's
        end answers at once, within about a second).
    type: int
    default: 5
  timeout:
    description: Seconds to wait in total before the task fails (a little more than the async value of the job's task).
    type: int
    required: true
  async_dir:
    description:
      - Where Ansible keeps the host's async job files. The action plugin sets it from the shell's C(async_dir)
        setting, as M(ansible.builtin.async_status) does; there is no need to give it.
    type: path
    default: ~/.ansible_async
notes:
  - The lines go through Ansible's display, so they appear in the default output of C(ansible-playbook) for
    each host, prefixed with the host name.
"""

EXAMPLES = r"""
- name: Start the benchmark in the background
  jetson.specdec.vllm_bench:
    url: http://127.0.0.1:8000
    concurrency: [1, 8]
    max_duration: 1800
    progress_path: /var/lib/jetson-specdec/bench-progress.json
  async: 1920
  poll: 0
  register: bench_job

- name: Wait for it, with a progress line every 30 s
  jetson.specdec.vllm_job_wait:
    jid: "{{ bench_job.ansible_job_id }}"
    progress_path: /var/lib/jetson-specdec/bench-progress.json
    label: baseline
    timeout: 1980
  register: bench

- name: Start waiting for a vLLM start in the background
  jetson.specdec.vllm_wait:
    url: http://127.0.0.1:8000
    service: vllm
    timeout: 900
    progress_path: /var/lib/vllm/start-progress.json
  async: 960
  poll: 0
  register: start_job

- name: Wait for the start, with a progress line every 30 s (fails with the cause as vllm_wait does)
  jetson.specdec.vllm_job_wait:
    jid: "{{ start_job.ansible_job_id }}"
    progress_path: /var/lib/vllm/start-progress.json
    label: vLLM start
    timeout: 1020
  register: started
"""

RETURN = r"""
runs:
  description: For a benchmark, its result exactly as M(jetson.specdec.vllm_bench) returns it (its other keys too).
  returned: success of a vllm_bench job
  type: list
  elements: dict
models:
  description: For a vLLM start, the served models exactly as M(jetson.specdec.vllm_wait) returns them (its other keys too).
  returned: success of a vllm_wait job
  type: list
  elements: str
progress:
  description: The last progress the job wrote, when the wait ran out of time.
  returned: failure by timeout
  type: dict
"""
# Documentation only: the waiting is done by the action plugin of the same name
# (plugins/action/vllm_job_wait.py), which looks at the host with one shell command per poll.
