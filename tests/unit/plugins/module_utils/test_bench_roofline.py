# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench.roofline import (
    RooflineError, bytes_per_step, result_roofline, roofline,
)
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.boards import bandwidth

LLAMA_8B = 16060522496
EAGLE_HEAD = 848000000


def test_baseline_limit_is_bandwidth_over_weights():
    # AGX Orin, 204.8 GB/s, bf16 Llama-3.1-8B: 12.75 tok/s at best
    out = roofline(10.0, 204.8, LLAMA_8B)
    assert out["limit_tok_s"] == pytest.approx(204.8e9 / LLAMA_8B, rel=1e-4)
    assert out["achieved_fraction"] == pytest.approx(10.0 / (204.8e9 / LLAMA_8B), rel=1e-3)


def test_speculation_reads_the_draft_k_times_and_emits_the_acceptance_length():
    out = roofline(25.0, 273.0, LLAMA_8B, EAGLE_HEAD, k=3, acceptance_length=2.5)
    step = LLAMA_8B + 3 * EAGLE_HEAD
    assert out["bytes_per_step"] == step
    assert out["limit_tok_s"] == pytest.approx(273e9 / step * 2.5, rel=1e-4)


def test_kv_cache_of_the_context_counts():
    assert bytes_per_step(1000, kv_bytes_per_token=10, context_tokens=50) == 1500


@pytest.mark.parametrize("kwargs,match", [
    ({"decode_tok_s": 0}, "decode_tok_s"),
    ({"bandwidth_gb_s": None}, "bandwidth_gb_s"),
    ({"k": 3}, "acceptance_length"),
])
def test_bad_input_names_the_value(kwargs, match):
    args = {"decode_tok_s": 10.0, "bandwidth_gb_s": 204.8, "target_weight_bytes": LLAMA_8B}
    args.update(kwargs)
    with pytest.raises(RooflineError, match=match):
        roofline(**args)


def test_bench_result_on_a_board_from_the_table():
    result = {"config": {"input_len": 2048, "output_len": 128},
              "runs": [{"concurrency": 1, "tpot_ms_p50": 100.0,
                        "spec_decode": {"mean_acceptance_length": 2.0}}]}
    # the bandwidth as the record has it: the board table's, from the facts (jetson/boards.py)
    out = result_roofline(result, bandwidth("agx_orin", "agx_orin_64gb", False), LLAMA_8B, EAGLE_HEAD, k=3,
                          kv_bytes_per_token=131072)
    step = LLAMA_8B + 3 * EAGLE_HEAD + 131072 * (2048 + 64)
    assert out["bandwidth_gb_s"] == 204.8
    assert out["achieved_fraction"] == pytest.approx(10.0 / (204.8e9 / step * 2.0), rel=1e-3)
    # an Orin Nano in Super mode has more bandwidth than without it
    nano = result_roofline(result, bandwidth("orin_nano", "orin_nano_8gb", True), LLAMA_8B)
    assert nano["bandwidth_gb_s"] == 102.0
    assert result_roofline(result, bandwidth("xavier_nx", "xavier_nx_8gb", False), LLAMA_8B) is None
    assert result_roofline({"runs": []}, 204.8, LLAMA_8B) is None
