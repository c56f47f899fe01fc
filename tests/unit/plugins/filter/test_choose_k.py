# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.choose_k import FilterModule


def _result(tpot_ms, spec=None):
    run = {"concurrency": 1, "completed": 4, "output_tokens": 512, "tpot_ms_p50": tpot_ms,
           "ttft_ms_p50": 50.0, "throughput_tok_s": 1000.0 / tpot_ms}
    return {"runs": [run], "spec_decode": spec}


def test_filter_returns_the_documented_keys():
    choose = FilterModule().filters()["spec_choose_k"]
    spec = {"drafts": 500, "per_position": [0.8, 0.6, 0.4, 0.2]}
    out = choose(_result(9.0, spec), _result(20.0), 4, method="eagle3")
    assert set(out["predicted_speedup"]) == {"1", "2", "3", "4"}
    assert 1 <= out["k"] <= 4 and out["reasons"]


def test_filter_turns_bad_input_into_a_task_error():
    choose = FilterModule().filters()["spec_choose_k"]
    with pytest.raises(AnsibleFilterError, match="no spec-decode counters"):
        choose(_result(9.0), _result(20.0), 4)
    with pytest.raises(AnsibleFilterError, match="unknown or missing option"):
        choose(_result(9.0), _result(20.0), 4, bogus=1)


def test_keep_filter_returns_the_kept_k_and_turns_bad_input_into_a_task_error():
    keep = FilterModule().filters()["spec_keep_k"]
    rounds = [{"k": 3, "result": _result(9.0, {"drafts": 500, "per_position": [0.8, 0.6, 0.4]})},
              {"k": 8, "result": _result(12.0, {"drafts": 300, "per_position": [0.8, 0.6, 0.4, 0.2, 0.1, 0, 0, 0]})}]
    out = keep(rounds, _result(20.0), 3, predicted_k=3, method="eagle3")
    assert out["k"] == 3 and set(out["measured_by_k"]) == {"3", "8"} and out["acceptance_at_start"] == 0.6
    with pytest.raises(AnsibleFilterError, match=r"spec_keep_k: rounds must include the start k \(5\)"):
        keep(rounds, _result(20.0), 5)
    with pytest.raises(AnsibleFilterError, match="spec_keep_k: unknown or missing option"):
        keep(rounds, _result(20.0), 3, bogus=1)


def test_spec_next_k_says_which_k_to_measure_and_names_bad_options():
    following = FilterModule().filters()["spec_next_k"]
    rounds = [{"k": 3, "result": _result(9.0, {"drafts": 500, "per_position": [0.8, 0.6, 0.4]})},
              {"k": 8, "result": _result(12.0, {"drafts": 300, "per_position": [0.8, 0.6, 0.4, 0.2, 0.1, 0, 0, 0]})}]
    out = following(rounds, _result(20.0), 3, method="eagle3")
    assert set(out) == {"k", "why"} and (out["k"] is None or 1 <= out["k"] <= 8)
    assert following(rounds, _result(20.0), 3, max_rounds=2) == {
        "k": None, "why": "2 rounds at different k measured, the most it measures"}
    with pytest.raises(AnsibleFilterError, match=r"spec_next_k: next_k needs the start k \(5\)"):
        following(rounds, _result(20.0), 5)
    with pytest.raises(AnsibleFilterError, match="spec_next_k: unknown or missing option"):
        following(rounds, _result(20.0), 3, bogus=1)
