# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Parse /etc/nv_boot_control.conf.

Real lines (balena-jetson-orin tegra-nv-boot-control-config_35.4.1.bbappend):
  TNSPEC 3701-500-0000-J.0-1-1-jetson-agx-orin-devkit-
  COMPATIBLE_SPEC 3701--0000--1--jetson-agx-orin-devkit-
  TNSPEC 3767-300-0005-K.2-1-1-jetson-orin-nano-devkit-
  TEGRA_CHIPID 0x23
TNSPEC is <board id>-<fab>-<sku>-<rev>-...-<board config name>-<boot dev>,
written from the module EEPROM at flash time, so board id + SKU name the
module (NVIDIA edk2 PreIsoInstaller doc: 3834 SKU 0 is jetson-agx-thor-t4000,
SKU 8 is jetson-agx-thor-devkit, i.e. T5000).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

_SPEC_RE = re.compile(r"^(\d{4})-([^-]*)-(\d{4})-")
_NAME_RE = re.compile(r"(jetson-[a-z0-9-]+)")


def parse_boot_control(text):
    """Return {tnspec, compatible_spec, chip_id, part, board_name} (values may be None)."""
    fields = {}
    for line in (text or "").splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            fields[parts[0]] = parts[1].strip()
    tnspec = fields.get("TNSPEC")
    compat = fields.get("COMPATIBLE_SPEC")
    result = {
        "tnspec": tnspec,
        "compatible_spec": compat,
        "chip_id": fields.get("TEGRA_CHIPID"),
        "part": None,
        "board_name": None,
    }
    # Only TNSPEC carries the module's own SKU; COMPATIBLE_SPEC is a
    # normalised "what firmware fits" spec and is used for the name only.
    match = _SPEC_RE.match(tnspec or "")
    if match:
        result["part"] = "p%s-%s" % (match.group(1), match.group(3))
    for spec in (tnspec, compat):
        name = _NAME_RE.search(spec or "")
        if name:
            result["board_name"] = name.group(1).rstrip("-")
            break
    return result
