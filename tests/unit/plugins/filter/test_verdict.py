# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.verdict import FilterModule

FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")


def bench(tok_s, tpot, c8=400.0):
    return {"runs": [{"concurrency": 1, "throughput_tok_s": tok_s, "tpot_ms_p50": tpot, "failed": 0},
                     {"concurrency": 8, "throughput_tok_s": c8, "tpot_ms_p50": 60.0, "failed": 0}]}


def test_filter_is_registered_and_decides():
    spec_verdict = FilterModule().filters()["spec_verdict"]
    out = spec_verdict(bench(100.0, 30.0), bench(170.0, 17.0), noise_cv=0.02)
    assert out["decision"] == "keep"
    assert out["metrics"]["noise_band"] == pytest.approx(2 * 0.02 * 2 ** 0.5, abs=1e-6)


def test_filter_turns_bad_parameters_into_filter_errors():
    spec_verdict = FilterModule().filters()["spec_verdict"]
    with pytest.raises(AnsibleFilterError) as err:
        spec_verdict(bench(100.0, 30.0), bench(170.0, 17.0), marginal_action="perhaps")
    assert "marginal_action" in str(err.value)


def test_sidecar_docs_cover_every_parameter():
    from ansible_collections.jetson.specdec.plugins.module_utils.verdict.rule import DEFAULTS
    with open(os.path.join(FILTER_DIR, "spec_verdict.yml")) as handle:
        doc = yaml.safe_load(handle)
    options = doc["DOCUMENTATION"]["options"]
    assert doc["DOCUMENTATION"]["name"] == "spec_verdict"
    assert set(DEFAULTS) | {"_input", "candidate"} == set(options)
    for key, default in DEFAULTS.items():
        assert options[key]["default"] == default, key
    assert set(doc["RETURN"]["_value"]["contains"]) >= {"decision", "action", "flagged", "reasons", "metrics"}
