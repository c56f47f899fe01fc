#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_plan
short_description: Plan a vLLM launch, check the speculative candidate's memory, refuse what the rules forbid
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - The planning step of the C(jetson.specdec.vllm_server) role's preflight, as one task. Nothing on the host changes.
  - Plans the baseline and the speculative candidate from O(launch_input) (the board's rules, the catalog, the
    fallback ladder, the URL).
  - With O(check_memory), checks the candidate's memory on the host with M(jetson.specdec.spec_headroom) when the
    rules allow the candidate, and folds the answer into the plan (a candidate that does not fit is refused, with
    the headroom the fallback ladder reads).
  - Fails when the rules or the memory check refuse the launch the plan applies, with every reason at once. A
    refusal of the candidate alone, when the baseline is applied, is not a failure; the plan says it.
  - M(jetson.specdec.vllm_switch) starts with the same step, so a switch plans exactly as the preflight did.
  - The result is the launch (the keys of the role's published C(vllm_server_launch) fact), so the role registers it
    as that fact; a refused plan is still returned. With C(-v), its C(msg) says what was planned and why.
extends_documentation_fragment:
  - jetson.specdec.attributes
  - jetson.specdec.launch_plan
attributes:
  check_mode:
    support: full
    details: The same as a normal run (it only reads).
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: Plans on the controller; the memory check runs on the host.
"""

EXAMPLES = r"""
# How a play plans: the role's preflight, which runs this module (the result is the fact vllm_server_launch).
- name: Plan the host's launch without changing it
  ansible.builtin.include_role:
    name: jetson.specdec.vllm_server
    tasks_from: preflight.yml

# The module itself, from the launch plan's inputs (the role's __vllm_server_launch_input; abridged here).
- name: Plan the launch, check the candidate's memory, refuse what the rules do not allow
  jetson.specdec.vllm_plan:
    launch_input: "{{ launch_input }}"
    check_memory: true
    memory:
      target_model: Qwen/Qwen3-8B
      memory_total_bytes: "{{ ansible_facts.jetson.memory_total_bytes }}"
      memory_available_bytes: "{{ ansible_facts.jetson.memory_available_bytes }}"
      family: "{{ ansible_facts.jetson.family }}"
    reclaim_baseline: true
  vars:
    launch_input:
      host: "{{ inventory_hostname }}"
      plan: {family: thor, runtime: native, model: Qwen/Qwen3-8B, speculation: true}
      argv: {model: Qwen/Qwen3-8B, port: 8000}
      runtime: native
      model: Qwen/Qwen3-8B
      service_name: vllm
  register: vllm_server_launch
"""

RETURN = r"""
argv:
  description: The command line of the applied launch (the other keys of the C(vllm_server_launch) fact too).
  returned: always, unless the inputs could not be planned
  type: list
  elements: str
memory_check:
  description: The result of M(jetson.specdec.spec_headroom) when the candidate's memory was checked, else null.
  returned: when planned
  type: dict
msg:
  description: What was planned (speculation, why, utilization, warnings), or why the launch was refused.
  returned: always
  type: raw
"""
# Documentation only: the work is done by the action plugin of the same name
# (plugins/action/vllm_plan.py), which runs spec_headroom on the host.
