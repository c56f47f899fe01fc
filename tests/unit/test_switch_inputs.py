# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""vllm_server's switch inputs (tasks/switch_inputs.yml): what jetson.specdec.rollout_evaluate switches a host with.

The evaluation renders the unit templates from the rollout role's task, outside vllm_server's variable scope: every
role variable the templates read must be in ``template_vars``, or a unit rendered there would differ from the one
vllm_server's own switch renders (and a switch would restart vLLM for nothing, or fail on an undefined variable).
"""
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(ROOT, "roles", "vllm_server")
TEMPLATES = ("vllm.service.j2", "vllm.trial.conf.j2")


def published():
    with open(os.path.join(ROLE, "tasks", "switch_inputs.yml")) as handle:
        tasks = yaml.safe_load(handle)
    return tasks[0]["ansible.builtin.set_fact"]["vllm_server_switch_inputs"]


def role_variables_read(name):
    with open(os.path.join(ROLE, "templates", name)) as handle:
        text = handle.read()
    # only inside Jinja: the trial template names vllm_server_trial in a comment line
    code = " ".join(expression or statement for expression, statement in re.findall(r"{{(.*?)}}|{%(.*?)%}", text, re.S))
    return set(re.findall(r"\b(_*vllm_server_[a-z_]+)", code)) - {"vllm_server_launch"}


def test_every_role_variable_the_unit_templates_read_is_published():
    listed = set(published()["template_vars"])
    read = set()
    for name in TEMPLATES:
        read |= role_variables_read(name)
    assert read and read <= listed, sorted(read - listed)
    assert listed <= read, "listed but read by no template: %s" % sorted(listed - read)


def test_the_published_templates_are_the_roles_own_by_path():
    templates = published()["args"]["templates"]
    assert templates == {"unit": "{{ role_path }}/templates/vllm.service.j2",
                         "trial": "{{ role_path }}/templates/vllm.trial.conf.j2"}


def test_the_published_switch_options_are_the_switch_tasks_own():
    with open(os.path.join(ROLE, "tasks", "switch.yml")) as handle:
        switch = yaml.safe_load(handle)[0]["jetson.specdec.vllm_switch"]
    args = published()["args"]
    assert set(args) == set(switch) | {"templates"}, (sorted(args), sorted(switch))
    assert args["unit"] == switch["unit"]
    # the api key is the evaluation's own no_log option, never a fact
    assert args["wait"]["api_key"] is None
    assert dict(args["wait"], api_key=None) == dict(switch["wait"], api_key=None)
