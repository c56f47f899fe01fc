# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The budget's end: one last look at narrower intervals before an inconclusive revert (spec_decide's budget_end_z)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import spec_decide
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.settings import rollout_settings

from .test_verdict_decide import drive

GOOD_NEAR_THE_BAR = {"gain": 0.40, "tpot": -0.45, "c8": 0.20}  # +40 %: 4 rounds cannot settle the 30 % bar at z = 2


def test_a_good_candidate_the_budget_ended_is_kept_on_the_last_look_flagged():
    out, rounds = drive(GOOD_NEAR_THE_BAR, seed=2, cv=0.1, max_rounds=4)
    assert len(rounds) == 4
    assert (out["decision"], out["action"], out["rule"], out["flagged"]) == ("keep", "keep", "verdict.budget_end", True)
    last = out["reasons"][-1]
    assert last.startswith("Budget's end (verdict.budget_end): the round budget is spent (4 of max_rounds 4)")
    assert "intervals of 1 standard errors" in last and last.endswith("-> keep (flagged for a human look).")
    # the estimates reported are the deciding ones (z = 2): the keep bar straddled there
    assert out["estimates"]["c1_throughput_gain"]["low"] < 0.30 <= out["estimates"]["c1_throughput_gain"]["point"]


def test_without_the_last_look_the_same_rounds_end_inconclusive():
    out, rounds = drive(GOOD_NEAR_THE_BAR, seed=2, cv=0.1, max_rounds=4, budget_end_z=None)
    assert len(rounds) == 4
    assert (out["decision"], out["action"], out["rule"]) == ("inconclusive", "revert", "verdict.inconclusive")
    # the operator's own last look (final) keeps its intervals: the caller asked for that width
    final = spec_decide(rounds, max_rounds=40, final=True)
    assert (final["decision"], final["rule"]) == ("inconclusive", "verdict.inconclusive")


def test_a_gain_on_the_bar_stays_inconclusive_at_the_narrower_intervals():
    out, dummy = drive({"gain": 0.30, "tpot": -0.45, "c8": 0.20}, seed=1, cv=0.1, max_rounds=4)
    assert (out["decision"], out["rule"]) == ("inconclusive", "verdict.inconclusive")


def test_point_estimates_decide_at_zero_and_a_gain_below_the_bar_reverts_as_marginal():
    truth = {"gain": 0.27, "tpot": -0.45, "c8": 0.20}  # below the 30 % bar, 4 rounds cannot show it at z = 2
    assert drive(truth, seed=1, cv=0.1, max_rounds=4, budget_end_z=None)[0]["rule"] == "verdict.inconclusive"
    out, dummy = drive(truth, seed=1, cv=0.1, max_rounds=4, budget_end_z=0)
    assert (out["decision"], out["action"], out["rule"], out["flagged"]) == ("marginal", "revert", "verdict.budget_end",
                                                                             True)
    assert "intervals of their point estimates" in out["reasons"][-1] and out["reasons"][-1].endswith(
        "-> below the keep bar, revert (marginal_action) (flagged for a human look).")


def test_the_regression_check_keeps_its_own_width_at_the_budgets_end():
    # c=1 clearly good, c=8 truly 5 % slower: on the tolerance. Narrowing the c=8 check kept truly slower c=8 configs
    # in the bench, so a keep still needs c=8 settled at the deciding width: even c=1's point estimates end
    # inconclusive.
    for narrow in (1.0, 0):
        out, dummy = drive({"gain": 0.80, "tpot": -0.45, "c8": -0.05}, seed=3, cv=0.1, max_rounds=4,
                           budget_end_z=narrow)
        assert (out["decision"], out["rule"], out["open"]) == ("inconclusive", "verdict.inconclusive",
                                                               ["c8_regressed"])


@pytest.mark.parametrize("bad", ["wide", 7, -0.5, True])
def test_budget_end_z_is_null_or_a_number_from_0_to_6(bad):
    with pytest.raises(ValueError, match="budget_end_z must be null .no last look. or a number from 0 to 6"):
        spec_decide([], budget_end_z=bad)


def test_at_its_default_it_is_not_in_the_config_hash_and_set_otherwise_it_is():
    bench = {"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0.0}
    default = rollout_settings(bench, {"budget_end_z": 1.0})
    assert "budget_end_z" not in default["verdict"]  # converged hosts keep their config hash
    assert rollout_settings(bench, {"budget_end_z": None})["verdict"]["budget_end_z"] is None
    assert rollout_settings(bench, {"budget_end_z": 0.5})["verdict"]["budget_end_z"] == 0.5
    # the role's variable is typed raw (a number or null): the settings check names it for anything else
    with pytest.raises(ValueError, match=r"budget_end_z must be null .* got 'wide' \(set by rollout_verdict_budget_end_z\)"):
        rollout_settings(bench, {"budget_end_z": "wide"})
