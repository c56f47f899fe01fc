# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The TTFT guard next to the verdict (verdict/ttft.py) and its place in the rollout's verdict."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.settings import SettingsError, rollout_settings
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.ttft import apply_ttft, arm_ttft, validate

KEEP = {"decision": "keep", "action": "keep", "flagged": False, "reasons": ["numbers", "Keep: every keep condition holds."],
        "advisories": ["raise k"], "metrics": {"low_concurrency": 1}}


def rnd(arm, ttfts, p50=None):
    run = {"concurrency": 1, "ttft_ms_p50": p50}
    if ttfts is not None:
        run["requests"] = [{"ok": True, "ttft_ms": t} for t in ttfts] + [{"ok": False, "ttft_ms": None}]
    return {"arm": arm, "result": {"runs": [run, {"concurrency": 8, "requests": [{"ok": True, "ttft_ms": 999.0}]}]}}


ROUNDS = [rnd("baseline", [100.0, 110.0, 90.0]), rnd("candidate", [140.0, 150.0]), rnd("candidate", [145.0])]


def test_the_median_pools_every_request_of_the_arm_at_the_level():
    assert arm_ttft(ROUNDS, "baseline", 1) == 100.0
    assert arm_ttft(ROUNDS, "candidate", 1) == 145.0
    assert arm_ttft([rnd("baseline", None, p50=80.0)], "baseline", 1) == 80.0  # no per-request data
    assert arm_ttft(ROUNDS, "candidate", 4) is None


def test_within_the_tolerance_the_change_is_reported_before_the_conclusion():
    out = apply_ttft(KEEP, ROUNDS, 1, {"tolerance": 0.5})
    assert out["metrics"]["ttft_change"] == pytest.approx(0.45)
    assert out["action"] == "keep" and out["flagged"] is False
    assert out["reasons"][-1].startswith("Keep:") and "TTFT p50 at concurrency 1 changed +45.0%" in out["reasons"][-2]
    assert KEEP["metrics"] == {"low_concurrency": 1}  # the input is not changed


def test_beyond_the_tolerance_a_kept_candidate_is_flagged_or_reverted():
    flagged = apply_ttft(KEEP, ROUNDS, 1, {"tolerance": 0.25})
    assert (flagged["decision"], flagged["action"], flagged["flagged"]) == ("keep", "keep", True)
    assert "kept (decode is faster) but flagged" in flagged["reasons"][-1]
    reverted = apply_ttft(KEEP, ROUNDS, 1, {"tolerance": 0.25, "action": "revert"})
    assert (reverted["decision"], reverted["action"], reverted["flagged"]) == ("revert", "revert", True)
    assert "reverted (rollout_ttft_action: revert)" in reverted["reasons"][-1] and reverted["advisories"] == []


def test_a_revert_or_an_open_verdict_only_gets_the_metric():
    revert = dict(KEEP, decision="revert", action="revert")
    assert apply_ttft(revert, ROUNDS, 1, {"tolerance": 0.0, "action": "revert"})["flagged"] is False
    more = dict(KEEP, decision="continue", action="measure_more")
    out = apply_ttft(more, ROUNDS, 1, {"tolerance": 0.0})
    assert out["action"] == "measure_more" and out["reasons"] == KEEP["reasons"] and out["metrics"]["ttft_change"]
    assert apply_ttft(KEEP, ROUNDS[:1], 1, {})["metrics"]["ttft_change"] is None  # no candidate yet


@pytest.mark.parametrize("params, needle", [
    ({"tolerance": -0.1}, "rollout_ttft_tolerance must be a number from 0 to 10"),
    ({"tolerance": "lots"}, "rollout_ttft_tolerance"),
    ({"tolerance": True}, "rollout_ttft_tolerance"),
    ({"action": "ignore"}, "rollout_ttft_action must be flag or revert"),
    ({"band": 1}, "unknown parameter"),
])
def test_bad_settings_are_refused_naming_the_variable(params, needle):
    with pytest.raises(ValueError, match=needle):
        validate(params)
    bench = {"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}
    with pytest.raises(SettingsError, match=needle):
        rollout_settings(bench, {}, params)


def test_the_rollout_settings_carry_the_checked_guard():
    out = rollout_settings({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {},
                           {"tolerance": "0.4", "action": "revert"})
    assert out["ttft"] == {"tolerance": 0.4, "action": "revert"}
    assert rollout_settings({"concurrency": [1], "output_len": 64, "output_range_ratio": 0}, {})["ttft"] == {
        "tolerance": 0.25, "action": "flag"}
