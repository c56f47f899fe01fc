#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_switch
short_description: Move a vLLM host to another planned launch in one step (plan, memory check, apply, wait)
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - The step behind the C(switch) entry point of the C(jetson.specdec.vllm_server) role, which a rollout runs
    for each arm it measures (the baseline, a rung of the fallback ladder, another k) and for keep or revert.
  - Plans the launch from O(launch_input) exactly as M(jetson.specdec.vllm_plan) does in the role's preflight, checks
    the speculative candidate's memory on the host with M(jetson.specdec.spec_headroom) when O(check_memory) is
    true, and fails before anything on the host changes when the rules or the memory check refuse the launch.
  - Writes the launch unit, or with O(trial) a runtime drop-in that overrides its C(ExecStart=), from the role's
    templates with M(jetson.specdec.vllm_unit) (which restarts vLLM only when what it runs changed), then waits
    with M(jetson.specdec.vllm_wait) until vLLM serves, printing a progress line every O(progress_interval)
    seconds as M(jetson.specdec.vllm_job_wait) does.
  - The result is the launch (the keys of the role's published C(vllm_server_launch) fact) plus what the
    switch did, so the role registers it as that fact; a refused or failed switch still returns its launch.
extends_documentation_fragment:
  - jetson.specdec.attributes
  - jetson.specdec.launch_plan
attributes:
  check_mode:
    support: full
    details:
      - Plans and checks memory; says what it would write and whether it would restart (with --diff, the unit or
        drop-in before and after); does not wait.
  diff_mode:
    support: full
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: Plans and renders on the controller; the memory check, the write and the wait run on the host.
options:
  trial:
    description: Write the launch as a trial drop-in under /run (a reboot forgets it) instead of the unit under /etc.
    type: bool
    default: false
  unit:
    description:
      - Options of M(jetson.specdec.vllm_unit) other than the unit or trial text, which is rendered here
        (C(service), C(unit_path), C(trial_path), C(restart), C(state), C(enabled)).
    type: dict
    required: true
  templates:
    description:
      - The role's templates for the unit and the trial (keys C(unit), C(trial)), found in the role's search path
        as the template lookup finds them.
    type: dict
    default: {unit: vllm.service.j2, trial: vllm.trial.conf.j2}
  wait:
    description:
      - Options of M(jetson.specdec.vllm_wait) for the wait after the write (C(url), C(service), C(api_key),
        C(timeout), C(interval), C(crash_loop_restarts), C(progress_path)); C(progress_path) is required, the file
        the wait writes its progress to.
      - Unset, there is no wait; there is none in check mode or when the unit's C(state) is C(stopped) either.
    type: dict
  progress_interval:
    description: Seconds between two progress lines of a host while it waits. 0 prints none.
    type: int
    default: 30
notes:
  - The role calls it through C(tasks_from=switch); it needs the role's templates in its search path.
"""

EXAMPLES = r"""
# How a playbook moves a host: the switch entry point of the role, which runs this module.
- name: Move the host to its speculative candidate as a trial
  ansible.builtin.include_role:
    name: jetson.specdec.vllm_server
    tasks_from: switch
  vars:
    vllm_server_speculation: true
    vllm_server_trial: true

# The module itself, from the launch plan's inputs (the role's __vllm_server_launch_input; abridged here).
- name: Move the host to the baseline and wait until it serves
  jetson.specdec.vllm_switch:
    launch_input: "{{ launch_input }}"
    check_memory: false
    unit:
      service: vllm
      unit_path: /etc/systemd/system/vllm.service
      trial_path: /run/systemd/system/vllm.service.d/50-jetson-specdec-trial.conf
      state: started
      enabled: true
    wait:
      url: http://127.0.0.1:8000
      service: vllm
      timeout: 900
      progress_path: /run/jetson-specdec-vllm-start-progress.json
  vars:
    launch_input:
      host: "{{ inventory_hostname }}"
      plan: {family: thor, runtime: native, model: Qwen/Qwen3-8B, speculation: false}
      argv: {model: Qwen/Qwen3-8B, port: 8000}
      runtime: native
      model: Qwen/Qwen3-8B
      service_name: vllm
  register: vllm_server_launch
"""

RETURN = r"""
argv:
  description: The command line the switch applied (the other keys of the C(vllm_server_launch) fact too).
  returned: always, unless the inputs could not be planned
  type: list
  elements: str
memory_check:
  description: The result of M(jetson.specdec.spec_headroom) when the candidate's memory was checked, else null.
  returned: when planned
  type: dict
unit:
  description: The result of M(jetson.specdec.vllm_unit) (what was written, removed, restarted).
  returned: when applied
  type: dict
serving:
  description: The result of M(jetson.specdec.vllm_wait) (served models, serving gap; on failure its cause and journal).
  returned: when waited for
  type: dict
cause:
  description: Why vLLM did not start (M(jetson.specdec.vllm_wait)'s cause), when the wait failed.
  returned: failure of the wait
  type: str
detail:
  description:
    - The whole failure message (with vLLM's journal) when the task ran with C(no_log) and failed; C(msg) is then its
      first line. ansible-core 2.19 prints a failed task's C(msg) even under C(no_log).
  returned: failure under no_log, when the message is longer than its first line
  type: str
"""
# Documentation only: the work is done by the action plugin of the same name
# (plugins/action/vllm_switch.py), which runs spec_headroom, vllm_unit and vllm_wait on the host.
