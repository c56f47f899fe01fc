# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import json
import re
import os
import struct
from unittest import mock

import pytest
import yaml

from ansible.module_utils import basic

from ansible_collections.jetson.specdec.plugins.modules import spec_headroom
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

GIB = 1024 ** 3
COMMIT = "0123456789abcdef0123456789abcdef01234567"
THOR_TOTAL = int(122.82 * GIB)
NANO_TOTAL = 7_990_000_000
_CATALOG_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..",
                             "roles", "vllm_server", "defaults", "main", "catalog.yml")
with open(_CATALOG_FILE) as _handle:
    CATALOG = yaml.safe_load(_handle)["vllm_server_model_catalog"]

FP4 = "nvidia/Llama-3.1-8B-Instruct-FP4"
EAGLE = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 5}
LLAMA_CONFIG = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096}


def _args(tmp_path, **kw):
    args = dict(target_model=FP4, speculative_config=EAGLE, catalog=CATALOG, hf_home=str(tmp_path),
                memory_total_bytes=THOR_TOTAL, memory_available_bytes=int(110 * GIB),
                gpu_memory_utilization=0.7, max_model_len=8192)
    args.update(kw)
    return args


def _cache_model(hf_home, repo, files):
    snap = os.path.join(str(hf_home), "hub", "models--" + repo.replace("/", "--"), "snapshots", COMMIT)
    os.makedirs(snap)
    os.makedirs(os.path.join(os.path.dirname(os.path.dirname(snap)), "refs"))
    with open(os.path.join(os.path.dirname(os.path.dirname(snap)), "refs", "main"), "w") as handle:
        handle.write(COMMIT)
    for name, content in files.items():
        with open(os.path.join(snap, name), "wb") as handle:
            handle.write(content)
    return snap


def _safetensors(nbytes):
    header = json.dumps({"w": {"dtype": "U8", "shape": [nbytes], "data_offsets": [0, nbytes]}}).encode()
    return struct.pack("<Q", len(header)) + header + b"\0" * nbytes


# --- board cases from the reference --------------------------------------------------------------
def test_thor_fp4_with_eagle3_head_fits(tmp_path):
    failed, result = run_module(spec_headroom.main, _args(tmp_path))
    assert not failed, result
    assert result["fits"] is True and result["changed"] is False and result["method"] == "eagle3"
    bd = result["breakdown"]
    assert (bd["target_weight_bytes"] + bd["speculative_weight_bytes"]) / GIB == pytest.approx(6.86, abs=0.05)
    assert bd["target_weight_source"] == "catalog" and bd["speculative_weight_source"] == "catalog"
    assert result["required_bytes"] < result["budget_bytes"]
    assert 0.7 <= result["recommended_gpu_memory_utilization"] <= 0.9


def test_orin_nano_fp16_8b_with_1b_draft_does_not_fit(tmp_path):
    failed, result = run_module(spec_headroom.main, _args(
        tmp_path, target_model="meta-llama/Llama-3.1-8B-Instruct",
        speculative_config={"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct",
                            "num_speculative_tokens": 3},
        memory_total_bytes=NANO_TOTAL, memory_available_bytes=6 * GIB, gpu_memory_utilization=0.5,
        max_model_len=4096, max_num_seqs=4, family="orin_nano", l4t_major=36))
    assert not failed, result
    assert result["fits"] is False and result["recommended_gpu_memory_utilization"] is None
    assert "does not fit" in result["reasons"][0] and "14.96 GiB" in result["reasons"][0]
    assert any("Orin Nano/NX" in w for w in result["headroom_warnings"])
    assert any("echo 3 > /proc/sys/vm/drop_caches" in w for w in result["headroom_warnings"])


def test_baseline_without_speculation(tmp_path):
    failed, result = run_module(spec_headroom.main, _args(tmp_path, speculative_config=None))
    assert not failed and result["method"] is None
    assert result["breakdown"]["speculative_weight_bytes"] == 0
    assert result["breakdown"]["overhead_bytes"] == GIB


def test_ngram_needs_no_draft_size(tmp_path):
    failed, result = run_module(spec_headroom.main, _args(
        tmp_path, speculative_config={"method": "ngram", "num_speculative_tokens": 3}))
    assert not failed and result["fits"] and result["breakdown"]["speculative_weight_bytes"] == 0


# --- refusals -----------------------------------------------------------------------------------
@pytest.mark.parametrize("patch, match", [
    ({"gpu_memory_utilization": 0.96}, "outside \\[0.30, 0.95\\]"),
    ({"gpu_memory_utilization": 0.25}, "outside \\[0.30, 0.95\\]"),
    ({"max_gpu_memory_utilization": 0.99}, "max_gpu_memory_utilization"),
    ({"memory_total_bytes": 0}, "memory_total_bytes must be > 0"),
    ({"memory_available_bytes": -1}, "memory_available_bytes >= 0"),
    ({"memory_available_bytes": THOR_TOTAL + 1}, "larger than memory_total_bytes"),
    ({"speculative_config": '{"method": "eagle3"}'}, "structured variable"),
    ({"speculative_config": dict(EAGLE, tensor_parallel_size=1)}, "draft_tensor_parallel_size"),
    ({"target_model": "owner/name; reboot"}, "target_model"),
    ({"target_model": "unknown/model"}, "vllm_server_model_catalog"),
    ({"speculative_config": dict(EAGLE, model="someone/unpublished-head")}, "no weight size for eagle3"),
    ({"max_model_len": 0}, "max_model_len"),
])
def test_refusals_fail_cleanly(tmp_path, patch, match):
    failed, result = run_module(spec_headroom.main, _args(tmp_path, **patch))
    assert failed, result
    assert re.search(match, result["msg"]), result["msg"]


def test_draft_without_kv_size_fails(tmp_path):
    catalog = dict(CATALOG)
    catalog["owner/tiny-draft"] = {"weight_bytes": 1000}
    failed, result = run_module(spec_headroom.main, _args(
        tmp_path, catalog=catalog,
        speculative_config={"method": "draft_model", "model": "owner/tiny-draft", "num_speculative_tokens": 3}))
    assert failed and "kv_bytes_per_token" in result["msg"]


# --- local files ----------------------------------------------------------------------------------
def test_real_sizes_from_hf_cache(tmp_path):
    _cache_model(tmp_path, FP4, {"model.safetensors": _safetensors(4096),
                                 "config.json": json.dumps(dict(LLAMA_CONFIG, num_hidden_layers=2)).encode()})
    failed, result = run_module(spec_headroom.main, _args(tmp_path))
    assert not failed, result
    bd = result["breakdown"]
    assert bd["target_weight_bytes"] == 4096 and bd["target_weight_source"].startswith("file:")
    assert bd["kv_bytes_per_token"] == 2 * 2 * 8 * 128 * 2 and bd["kv_source"].endswith("config.json")
    assert result["headroom_warnings"] == []


def test_missing_config_json_falls_back_to_catalog_with_warning(tmp_path):
    _cache_model(tmp_path, FP4, {"model.safetensors": _safetensors(4096)})
    failed, result = run_module(spec_headroom.main, _args(tmp_path))
    assert not failed
    assert result["breakdown"]["kv_bytes_per_token"] == 131072 and result["breakdown"]["kv_source"] == "catalog"
    assert any("no usable config.json" in w for w in result["headroom_warnings"])


def test_corrupt_safetensors_header_falls_back_to_catalog(tmp_path):
    _cache_model(tmp_path, FP4, {"model.safetensors": struct.pack("<Q", 12) + b"{not json!!}" + b"\0" * 8,
                                 "config.json": json.dumps(LLAMA_CONFIG).encode()})
    failed, result = run_module(spec_headroom.main, _args(tmp_path))
    assert not failed, result
    assert result["breakdown"]["target_weight_source"] == "catalog"
    assert any("cannot size the local weights" in w and "JSON" in w for w in result["headroom_warnings"])


def test_absurd_header_length_falls_back_safely(tmp_path):
    _cache_model(tmp_path, FP4, {"model.safetensors": struct.pack("<Q", 2 ** 63) + b"{}"})
    failed, result = run_module(spec_headroom.main, _args(tmp_path))
    assert not failed
    assert any("exceeds" in w for w in result["headroom_warnings"])


def test_local_absolute_path_target_with_index(tmp_path):
    model = tmp_path / "llama"
    model.mkdir()
    (model / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 16060522496}}))
    (model / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    failed, result = run_module(spec_headroom.main, _args(tmp_path, target_model=str(model), speculative_config=None))
    assert not failed and result["breakdown"]["target_weight_bytes"] == 16060522496


def test_fp8_kv_cache_halves_catalog_kv(tmp_path):
    failed, result = run_module(spec_headroom.main, _args(tmp_path, kv_cache_dtype="fp8"))
    assert not failed and result["breakdown"]["kv_bytes_per_token"] == 65536


def test_reclaimable_and_reserve(tmp_path):
    tight = _args(tmp_path, memory_available_bytes=20 * GIB, gpu_memory_utilization=0.7)
    assert run_module(spec_headroom.main, tight)[1]["fits"] is False
    assert run_module(spec_headroom.main, dict(tight, reclaimable_bytes=70 * GIB))[1]["fits"] is True
    failed, result = run_module(spec_headroom.main, _args(tmp_path, reserve_bytes=40 * GIB,
                                                          gpu_memory_utilization=0.75))
    assert result["fits"] is False and any("reserve" in r for r in result["reasons"])


# --- drop_caches ----------------------------------------------------------------------------------
def _proc(tmp_path, monkeypatch, available_kb):
    drop = tmp_path / "drop_caches"
    drop.write_text("0\n")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 128000000 kB\nMemAvailable: %d kB\n" % available_kb)
    monkeypatch.setattr(spec_headroom, "DROP_CACHES_PATH", str(drop))
    monkeypatch.setattr(spec_headroom, "MEMINFO_PATH", str(meminfo))
    return drop


def test_drop_caches_check_mode_changes_nothing(tmp_path, monkeypatch):
    drop = _proc(tmp_path, monkeypatch, 115 * 1024 * 1024)
    with mock.patch.object(basic.AnsibleModule, "run_command") as run:
        failed, result = run_module(spec_headroom.main, _args(tmp_path, drop_caches=True, _ansible_check_mode=True))
    assert not failed and result["changed"] is True and result["caches_dropped"] is False
    assert drop.read_text() == "0\n" and not run.called
    assert result["breakdown"]["memory_available_bytes"] == int(110 * GIB)


def test_drop_caches_runs_and_rereads_memavailable(tmp_path, monkeypatch):
    drop = _proc(tmp_path, monkeypatch, 115 * 1024 * 1024)
    with mock.patch.object(basic.AnsibleModule, "run_command", return_value=(0, "", "")) as run, \
            mock.patch.object(basic.AnsibleModule, "get_bin_path", return_value="/bin/sync"):
        failed, result = run_module(spec_headroom.main, _args(tmp_path, drop_caches=True))
    assert not failed, result
    assert result["changed"] is True and result["caches_dropped"] is True
    assert drop.read_text() == "3\n"
    run.assert_called_once()
    assert result["breakdown"]["memory_available_bytes"] == 115 * GIB


def test_no_side_effect_when_input_is_bad(tmp_path, monkeypatch):
    drop = _proc(tmp_path, monkeypatch, 1)
    failed, result = run_module(spec_headroom.main, _args(tmp_path, drop_caches=True, gpu_memory_utilization=0.99))
    assert failed and drop.read_text() == "0\n"


def test_read_only_by_default(tmp_path, monkeypatch):
    drop = _proc(tmp_path, monkeypatch, 1)
    failed, result = run_module(spec_headroom.main, _args(tmp_path, l4t_major=39))
    assert not failed and result["changed"] is False and drop.read_text() == "0\n"
    assert not any("drop_caches" in w for w in result["headroom_warnings"])
