# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The rollout's settings check (verdict/settings.py): the levels measured and judged, every verdict parameter
checked and refused naming the rollout variable."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.settings import SettingsError, rollout_settings


THRESHOLDS = {"keep_throughput_gain": 0.3, "keep_tpot_drop": 0.2, "revert_throughput_gain": 0.1,
              "c8_regression_tolerance": 0.0, "marginal_action": "keep", "z": 2.0}


def test_rollout_settings_take_the_levels_from_the_benchmark():
    out = rollout_settings({"concurrency": [8, 1], "output_len": 128, "output_range_ratio": 0}, THRESHOLDS)
    assert dict((k, out["verdict"][k]) for k in THRESHOLDS) == THRESHOLDS
    assert (out["verdict"]["low_concurrency"], out["verdict"]["high_concurrency"]) == (1, 8)
    assert out["verdict"]["min_rounds"] == 3  # the rest are spec_decide's defaults, checked


@pytest.mark.parametrize("levels, expected, want_levels, judged, checked", [
    ([1, 8], 1, [1, 8], 1, 8),                 # the default: unchanged (and its config hash)
    ([1, 8], 2, [1, 2, 8], 1, [2, 8]),         # 2 is the skill's low range: judged at 1, checked at 2 and 8
    ([1, 8], 4, [1, 4, 8], 4, 8),              # 3..7: judged at the operator's level
    ([1, 8, 16], 1, [1, 8, 16], 1, [8, 16]),   # every level above, not only the highest
    ([1], 1, [1, 8], 1, 8),                    # no level above: the skill's 8 is added
    ([1, 4], 1, [1, 4], 1, 4),                 # the real lane's small board
    ([1, 8], 9, [1, 8, 9, 16], 9, 16),         # max_speculative_concurrency 10, expected 9: 16 added above 9
    ([1, 8], 8, [1, 8, 16], 8, 16),
    ([2, 4, 8], 2, [2, 4, 8], 2, [4, 8]),
])
def test_the_regression_check_covers_every_level_above_the_judged_one(levels, expected, want_levels, judged, checked):
    out = rollout_settings({"concurrency": levels, "expected_concurrency": expected, "output_len": 128,
                            "output_range_ratio": 0}, THRESHOLDS)
    assert out["levels"] == want_levels
    assert (out["verdict"]["low_concurrency"], out["verdict"]["high_concurrency"]) == (judged, checked)
    above = [level for level in want_levels if level > judged]
    assert (checked if isinstance(checked, list) else [checked]) == above


def test_spec_decide_judges_every_regression_level_and_names_the_one_that_regressed():
    import random

    from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import spec_decide

    from .test_verdict_decide import level as make_level

    settings = rollout_settings({"concurrency": [1, 8, 16], "output_len": 128, "output_range_ratio": 0}, THRESHOLDS)
    params = dict(settings["verdict"], c8_regression_tolerance=0.05)

    def run(c16):
        rng, rounds = random.Random(4), []
        while True:
            out = spec_decide(rounds, **params)
            if out["action"] != "measure_more":
                return out
            cand = out["next_round"]["arm"] == "candidate"
            gain = 0.8 if cand else 0.0
            rounds.append({"arm": out["next_round"]["arm"], "result": {"runs": [
                make_level(rng, 1, 30, 6600.0 / (1 + gain), 50.0 / (1 + gain)),
                make_level(rng, 8, 30, 14000.0 / (1.2 if cand else 1.0), 75.0),
                make_level(rng, 16, 30, 20000.0 / ((1 + c16) if cand else 1.0), 90.0)]}})

    bad = run(-0.30)   # c=8 gains, c=16 drops 30 %: the old check (16 only) saw it, so must this one
    assert (bad["decision"], bad["action"]) == ("revert", "revert")
    assert bad["metrics"]["regression_levels"] == [8, 16]
    assert bad["estimates"]["c8_throughput_change"]["high"] < -0.05  # the highest level keeps the skill's name
    assert bad["estimates"]["throughput_change_c8"]["low"] > 0
    assert any("concurrency 16 changed" in r for r in bad["reasons"])
    good = run(0.10)
    assert good["action"] == "keep"


def test_the_operators_concurrency_is_measured_and_judged_with_the_c1_rule():
    bench = {"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}
    out = rollout_settings(dict(bench, expected_concurrency=4), THRESHOLDS)
    assert out["levels"] == [1, 4, 8]
    assert (out["verdict"]["low_concurrency"], out["verdict"]["high_concurrency"]) == (4, 8)
    two = rollout_settings(dict(bench, expected_concurrency=2), THRESHOLDS)
    assert (two["verdict"]["low_concurrency"], two["verdict"]["high_concurrency"]) == (1, [2, 8])
    plain = rollout_settings(dict(bench, expected_concurrency=1), THRESHOLDS)
    assert plain["levels"] == [1, 8] and (plain["verdict"]["low_concurrency"], plain["verdict"]["high_concurrency"]) == (1, 8)
    assert plain == rollout_settings(bench, THRESHOLDS)  # the same settings (and config hash) as before for c=1
    with pytest.raises(SettingsError, match="levels must be >= 1"):
        rollout_settings(dict(bench, concurrency=[0, 8]), THRESHOLDS)


@pytest.mark.parametrize("bench, verdict, match", [
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 1.0}, {}, "rollout_bench_output_range_ratio"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"revert_throughput_gain": 0.5},
     "revert_throughput_gain.*set by rollout_revert_throughput_gain"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"marginal_action": "maybe"},
     "marginal_action.*set by rollout_marginal_action"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"drift_prior": 0.9},
     "set by rollout_noise_cv"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"min_rounds": 5, "max_rounds": 4},
     "min_rounds.*set by rollout_verdict_min_rounds"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"round_prompts": 2},
     "set by rollout_bench_num_prompts"),
    ({"concurrency": [], "output_len": 128, "output_range_ratio": 0}, {}, "rollout_bench_concurrency"),
])
def test_impossible_rollout_settings_are_refused_naming_the_setting(bench, verdict, match):
    with pytest.raises(SettingsError, match=match):
        rollout_settings(bench, dict(THRESHOLDS, **verdict))


def test_skipping_settled_levels_at_its_default_leaves_the_hashed_settings_as_they_were():
    bench = {"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}
    default = rollout_settings(bench, dict(THRESHOLDS, skip_settled_levels=True))
    assert "skip_settled_levels" not in default["verdict"]  # the config hash of converged hosts is unchanged
    assert default == rollout_settings(bench, THRESHOLDS)
    off = rollout_settings(bench, dict(THRESHOLDS, skip_settled_levels=False))
    assert off["verdict"]["skip_settled_levels"] is False  # a choice of the operator's is hashed (judged again)
    with pytest.raises(SettingsError, match="rollout_verdict_skip_settled_levels"):
        rollout_settings(bench, dict(THRESHOLDS, skip_settled_levels="sometimes"))
