# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import boards
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.classify import classify

GIB = 1024 ** 3


def test_model_string_without_jetson_still_names_orin_nano():
    assert boards.family_from_model("NVIDIA Orin Nano Developer Kit") == "orin_nano"
    assert boards.family_from_model("Jetson-AGX") == "agx_xavier"
    assert boards.family_from_model("NVIDIA Jetson AGX Orin Developer Kit") == "agx_orin"
    assert boards.family_from_model("Raspberry Pi 5 Model B Rev 1.0") is None


def test_unlisted_sku_of_known_module_falls_back_to_memory_with_warning():
    # p3701-0001 (jetson_stats #864) is not in the table: family from the board id, variant from memory.
    result = classify(model="NVIDIA Jetson AGX Orin Developer Kit", dt_parts=["p3701-0001"],
                      mem_total_bytes=int(61.4 * GIB), soc="tegra234")
    assert result["family"] == "agx_orin"
    assert (result["variant"], result["variant_source"]) == ("agx_orin_64gb", "memory")
    assert any("MemTotal" in w for w in result["warnings"])


def test_thor_board_name_when_tnspec_has_no_sku():
    bc = {"part": None, "board_name": "jetson-agx-thor-t4000"}
    result = classify(model="NVIDIA Jetson AGX Thor Developer Kit", compatible=["nvidia,tegra264"],
                      boot_control=bc, soc="tegra264", mem_total_bytes=int(62 * GIB))
    assert (result["family"], result["variant"], result["variant_source"]) == ("thor", "thor_t4000", "boot_control")


def test_thor_nvidia_smi_then_memory():
    evidence = dict(model="NVIDIA Jetson AGX Thor Developer Kit", compatible=["nvidia,tegra264"], soc="tegra264")
    assert classify(smi_name="NVIDIA Jetson T4000", mem_total_bytes=int(62 * GIB), **evidence)["variant_source"] \
        == "nvidia_smi"
    plain = classify(smi_name="NVIDIA Thor", mem_total_bytes=int(122.8 * GIB), **evidence)
    assert (plain["variant"], plain["variant_source"]) == ("thor_t5000", "memory")


def test_soc_contradicting_family_gives_unknown():
    result = classify(model="NVIDIA Jetson AGX Orin Developer Kit", dt_parts=["p3701-0005"], soc="tegra264")
    assert result["family"] == "unknown"
    assert any("SoC" in w for w in result["warnings"])


def test_industrial_from_model_string():
    result = classify(model="Jetson AGX Orin Industrial", dt_parts=["p3701-0000"], soc="tegra234",
                      mem_total_bytes=int(61 * GIB))
    assert (result["variant"], result["variant_source"]) == ("agx_orin_industrial", "device_tree")


def test_super_from_power_mode_and_bandwidth():
    result = classify(model="NVIDIA Jetson Orin Nano Developer Kit", dt_parts=["p3767-0005"], soc="tegra234",
                      power_mode_name="MAXN_SUPER", mem_total_bytes=int(7.4 * GIB))
    assert result["super"] is True
    assert boards.bandwidth(result["family"], result["variant"], result["super"]) == 102.0
    assert boards.bandwidth("orin_nano", None, False) is None
    assert boards.bandwidth("agx_orin", None, False) == 204.8


def test_nothing_known():
    result = classify()
    assert result["family"] == "unknown" and result["variant"] is None


def test_cuda_arch_table():
    assert boards.cuda_arch("tegra264", "thor") == "11.0"
    assert boards.cuda_arch(None, "agx_xavier") == "7.2"
    assert boards.cuda_arch(None, "unknown") is None
