# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The verdict is checked against the board's roofline from the record (issue 30 item 6): the facts' bandwidth,
the plan's bytes per step and the k the candidate runs."""
import json
import os

from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec

RECORDS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "records", "fleet-run")


def load(host):
    with open(os.path.join(RECORDS, host + ".json")) as handle:
        return json.load(handle)


def test_the_limit_comes_from_the_facts_and_the_plan_with_the_tuned_k():
    record = load("agx-01")
    limit = rec.roofline_limit(record)
    assert limit["bandwidth_gbps"] == 204.8 and limit["target_weight_bytes"] == record["roofline_inputs"]["target_weight_bytes"]
    assert limit["k"] == record["roofline_inputs"]["k"]
    assert rec.roofline_limit(dict(record, k_tuning={"k": 6}))["k"] == 6
    assert rec.roofline_limit(dict(record, facts={})) is None
    assert rec.roofline_limit(dict(record, roofline_inputs=None)) is None


def test_run_verdict_judges_with_it():
    record = load("agx-01")
    # the board's facts claim a tenth of the bandwidth: the recorded candidate decoded far beyond that limit
    wrong = dict(record, facts=dict(record["facts"], memory_bandwidth_gbps=20.48))
    rounds = [{"phase": arm, "result": record[arm]} for arm in ("baseline", "candidate", "candidate", "baseline")]
    rungs = [{"rung": 0, "label": "eagle3 at utilization 0.75"}, {"rung": 1, "label": "off"}]  # rung 0 started
    out = rec.run_verdict(wrong, rounds, rungs, None, {"max_rounds": 4, "min_rounds": 2, "final": False})
    assert any(r.startswith("verdict.beyond_roofline") for r in out["reasons"]), out["reasons"]
    out = rec.run_verdict(record, rounds, rungs, None, {"max_rounds": 4, "min_rounds": 2, "final": False})
    assert not any(r.startswith("verdict.beyond_roofline") for r in out["reasons"]), out["reasons"]
