# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.bootcontrol import parse_boot_control

ORIN = ("TNSPEC 3701-500-0000-J.0-1-1-jetson-agx-orin-devkit-\n"
        "COMPATIBLE_SPEC 3701--0000--1--jetson-agx-orin-devkit-\n"
        "TEGRA_LEGACY_UPDATE true\nTEGRA_CHIPID 0x23\n")


def test_tnspec_gives_part_and_board_name():
    parsed = parse_boot_control(ORIN)
    assert parsed["part"] == "p3701-0000"
    assert parsed["board_name"] == "jetson-agx-orin-devkit"
    assert parsed["chip_id"] == "0x23"
    assert parsed["compatible_spec"] == "3701--0000--1--jetson-agx-orin-devkit-"


def test_nano_tnspec_with_boot_device():
    parsed = parse_boot_control("TNSPEC 3767-300-0005-K.2-1-1-jetson-orin-nano-devkit-\n")
    assert parsed["part"] == "p3767-0005"


def test_compatible_spec_alone_gives_name_but_no_part():
    parsed = parse_boot_control("COMPATIBLE_SPEC 3834--0000--1--jetson-agx-thor-t4000-\n")
    assert parsed["part"] is None
    assert parsed["board_name"] == "jetson-agx-thor-t4000"


def test_garbage_and_missing():
    assert parse_boot_control(None)["part"] is None
    assert parse_boot_control("TNSPEC garbage\n")["part"] is None
