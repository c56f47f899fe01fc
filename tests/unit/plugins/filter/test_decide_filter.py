# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.decide import FilterModule


def test_filter_is_registered_and_takes_a_params_dict_and_keywords():
    spec_decide = FilterModule().filters()["spec_decide"]
    out = spec_decide([], {"round_prompts": 40})
    assert out["next_round"] == {"arm": "baseline", "num_prompts": 40, "levels": [1, 8]}
    assert spec_decide([], {"round_prompts": 40}, round_prompts=20)["next_round"]["num_prompts"] == 20


def test_bad_parameter_fails_the_task_naming_it():
    spec_decide = FilterModule().filters()["spec_decide"]
    with pytest.raises(AnsibleFilterError, match="drift_prior"):
        spec_decide([], {"drift_prior": 3})
