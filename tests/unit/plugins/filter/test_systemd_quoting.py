# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The systemd quoting filters: Ansible-facing wrappers of module_utils/launch/systemd.py."""
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.systemd_quoting import FilterModule
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import render_spec_config_json

FILTERS = FilterModule().filters()
FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
EAGLE = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 5,
         "draft_tensor_parallel_size": 1}


def test_filter_names():
    assert sorted(FILTERS) == ["systemd_command_line", "systemd_quote"]


@pytest.mark.parametrize("removed", ["speculative_config_json", "spec_model_ref", "spec_catalog_select"])
def test_removed_filters_leave_no_documentation_behind(removed):
    # No role used them; the launch plan filters cover what they did (changelog: removed_features).
    assert not os.path.exists(os.path.join(FILTER_DIR, removed + ".yml"))


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_every_filter_has_sidecar_docs(name):
    with open(os.path.join(FILTER_DIR, name + ".yml")) as handle:
        doc = yaml.safe_load(handle)
    assert doc["DOCUMENTATION"]["name"] == name
    assert doc["DOCUMENTATION"]["options"]["_input"]
    assert "jetson.specdec." + name in doc["EXAMPLES"]
    assert doc["RETURN"]["_value"]["description"]


def test_systemd_filters():
    assert FILTERS["systemd_quote"]("a b%$") == '"a b%%$$"'
    assert FILTERS["systemd_quote"]("X=a b%$", environment=True) == '"X=a b%%$"'
    line = FILTERS["systemd_command_line"](["/usr/bin/vllm", "serve", "--speculative-config",
                                            render_spec_config_json(EAGLE)])
    assert line.startswith('/usr/bin/vllm serve --speculative-config "{\\"method\\":\\"eagle3\\"')
    with pytest.raises(AnsibleFilterError, match="jetson.specdec.systemd_quote: .*control character"):
        FILTERS["systemd_quote"]("a\nExecStartPre=/bin/sh")
    with pytest.raises(AnsibleFilterError, match="absolute program path"):
        FILTERS["systemd_command_line"](["vllm", "serve"])


def test_tagged_and_subclassed_inputs_are_accepted():
    # Ansible hands filters tagged str and lazy dict/list subclasses.
    class TaggedStr(str):
        pass

    class LazyList(list):
        pass

    argv = LazyList([TaggedStr("/usr/bin/vllm"), TaggedStr("serve"), TaggedStr("a b")])
    assert FILTERS["systemd_command_line"](argv) == '/usr/bin/vllm serve "a b"'
    assert FILTERS["systemd_quote"](TaggedStr("x")) == "x"
