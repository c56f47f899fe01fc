# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import json
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.specdec import FilterModule

FILTERS = FilterModule().filters()
FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
CATALOG = yaml.safe_load(open(os.path.join(FILTER_DIR, "..", "..", "roles", "vllm_server", "defaults",
                                           "main", "catalog.yml")))["vllm_server_model_catalog"]
EAGLE = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 5,
         "draft_tensor_parallel_size": 1}


def test_filter_names():
    assert sorted(FILTERS) == sorted([
        "speculative_config_json", "systemd_quote", "systemd_command_line", "spec_model_ref",
        "spec_catalog_select"])


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_every_filter_has_sidecar_docs(name):
    with open(os.path.join(FILTER_DIR, name + ".yml")) as handle:
        doc = yaml.safe_load(handle)
    assert doc["DOCUMENTATION"]["name"] == name
    assert doc["DOCUMENTATION"]["options"]["_input"]
    assert "jetson.specdec." + name in doc["EXAMPLES"]
    assert doc["RETURN"]["_value"]["description"]


def test_speculative_config_json_matches_skill_shape():
    text = FILTERS["speculative_config_json"](EAGLE)
    assert text == ('{"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",'
                    '"num_speculative_tokens":5,"draft_tensor_parallel_size":1}')
    assert json.loads(text) == EAGLE
    extra = FILTERS["speculative_config_json"](EAGLE, {"disable_padded_drafter_batch": True})
    assert json.loads(extra)["disable_padded_drafter_batch"] is True


@pytest.mark.parametrize("bad", ['{"method":"eagle3"}', dict(EAGLE, tensor_parallel_size=1),
                                 dict(EAGLE, model="x/y z"), dict(EAGLE, num_speculative_tokens=True)])
def test_speculative_config_json_errors_are_filter_errors(bad):
    with pytest.raises(AnsibleFilterError, match="jetson.specdec.speculative_config_json"):
        FILTERS["speculative_config_json"](bad)


def test_systemd_filters():
    assert FILTERS["systemd_quote"]("a b%$") == '"a b%%$$"'
    assert FILTERS["systemd_quote"]("X=a b%$", environment=True) == '"X=a b%%$"'
    line = FILTERS["systemd_command_line"](["/usr/bin/vllm", "serve", "--speculative-config",
                                            FILTERS["speculative_config_json"](EAGLE)])
    assert line.startswith('/usr/bin/vllm serve --speculative-config "{\\"method\\":\\"eagle3\\"')
    with pytest.raises(AnsibleFilterError, match="control character"):
        FILTERS["systemd_quote"]("a\nExecStartPre=/bin/sh")
    with pytest.raises(AnsibleFilterError, match="absolute program path"):
        FILTERS["systemd_command_line"](["vllm", "serve"])


def test_spec_model_ref():
    assert FILTERS["spec_model_ref"]("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"
    assert FILTERS["spec_model_ref"]("qwen3-8b", "served_name") == "qwen3-8b"
    with pytest.raises(AnsibleFilterError, match="owner/name"):
        FILTERS["spec_model_ref"]("Qwen/Qwen3-8B`id`")
    with pytest.raises(AnsibleFilterError, match="kind must be"):
        FILTERS["spec_model_ref"]("Qwen/Qwen3-8B", "path")


def test_spec_catalog_select():
    choice = FILTERS["spec_catalog_select"](CATALOG, "Qwen/Qwen3-4B", "agx_orin")
    assert (choice["method"], choice["model"], choice["num_speculative_tokens"]) == (
        "eagle3", "AngelSlim/Qwen3-4B_eagle3", 3)
    off = FILTERS["spec_catalog_select"](CATALOG, "Qwen/Qwen3-4B", "orin_nano")
    assert off["method"] is None
    with pytest.raises(AnsibleFilterError, match="preferred_method"):
        FILTERS["spec_catalog_select"](CATALOG, "Qwen/Qwen3-4B", "thor", "medusa")


def test_tagged_and_subclassed_inputs_are_accepted():
    class TaggedStr(str):
        pass

    class LazyDict(dict):
        pass

    cfg = LazyDict({TaggedStr(k): (TaggedStr(v) if isinstance(v, str) else v) for k, v in EAGLE.items()})
    assert json.loads(FILTERS["speculative_config_json"](cfg)) == EAGLE
