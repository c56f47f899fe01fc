# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import devicetree as dt
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.boards import KNOWN_BOARDS

THOR = b"nvidia,p4071-0000+p3834-0008\x00nvidia,p3834-0008\x00nvidia,tegra264\x00"
SUPER = b"nvidia,p3768-0000+p3767-0005-super\x00nvidia,p3767-0005\x00nvidia,tegra234\x00"
ORIN_R35 = b"nvidia,p3737-0000+p3701-0000\x00nvidia,tegra234\x00nvidia,tegra23x\x00"


def test_model_strips_trailing_nul():
    assert dt.parse_model(b"NVIDIA Jetson AGX Thor Developer Kit\x00") == ("NVIDIA Jetson AGX Thor Developer Kit", None)


def test_model_rejects_binary_junk():
    model, problem = dt.parse_model(b"\x89PNG\r\n\x1a\n\x00\x00IHDR")
    assert model is None and "junk" in problem
    model, problem = dt.parse_model(b"\xff\xfe\xfd")
    assert model is None and problem
    assert dt.parse_model(b"\x00")[0] is None
    assert dt.parse_model(None) == (None, None)


def test_compatible_split_and_soc():
    entries, problem = dt.parse_compatible(THOR)
    assert problem is None
    assert entries == ["nvidia,p4071-0000+p3834-0008", "nvidia,p3834-0008", "nvidia,tegra264"]
    assert dt.soc(entries) == "tegra264"
    # tegra23x is an alias, never the SoC
    assert dt.soc(dt.parse_compatible(ORIN_R35)[0]) == "tegra234"


def test_module_parts_skip_carriers_and_keep_module():
    assert dt.module_parts(dt.parse_compatible(THOR)[0], KNOWN_BOARDS) == ["p3834-0008"]
    assert dt.module_parts(dt.parse_compatible(SUPER)[0], KNOWN_BOARDS) == ["p3767-0005"]
    assert dt.module_parts(dt.parse_compatible(ORIN_R35)[0], KNOWN_BOARDS) == ["p3701-0000"]
    # Xavier devkit: p2972 is the carrier/devkit id, not a module part
    assert dt.module_parts(["nvidia,p2972-0000", "nvidia,tegra194"], KNOWN_BOARDS) == []


def test_super_suffix():
    assert dt.is_super(dt.parse_compatible(SUPER)[0])
    assert not dt.is_super(dt.parse_compatible(THOR)[0])


def test_boardids_known_modules_only():
    assert dt.parse_boardids(b"3701:0004:500\x00", KNOWN_BOARDS) == ["p3701-0004"]
    assert dt.parse_boardids(b"2595:0000:A0", KNOWN_BOARDS) == []
    assert dt.parse_boardids(None, KNOWN_BOARDS) == []
