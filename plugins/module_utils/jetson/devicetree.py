# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Parse device-tree properties: model, compatible, nvidia,boardids.

Real shapes (jetson_stats issues #711, #864, jetson-gpio #125, #135):
  model       b"NVIDIA Jetson AGX Thor Developer Kit\\x00"
  compatible  b"nvidia,p4071-0000+p3834-0008\\x00nvidia,p3834-0008\\x00nvidia,tegra264\\x00"
              b"nvidia,p3737-0000+p3701-0005\\x00nvidia,p3701-0005\\x00nvidia,tegra234\\x00nvidia,tegra23x\\x00"
              b"nvidia,p3768-0000+p3767-0005-super\\x00nvidia,p3767-0005\\x00nvidia,tegra234\\x00"
  boardids    b"2595:0000:A0" (board:sku:rev; absent on Orin R39 and on Thor)
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# "pCCCC-CCCC+pMMMM-SSSS[-super]" or a bare "pMMMM-SSSS"; the suffix (if any)
# stays in the token so callers can see "-super".
_PART_RE = re.compile(r"p(\d{4})-(\d{4})")
_SOC_RE = re.compile(r"^nvidia,(tegra\d{3})$")
_BOARDID_RE = re.compile(r"(\d{4})[:\-](\d{4})")

DT_DIRS = ("proc/device-tree", "sys/firmware/devicetree/base")


def _printable(text):
    return all(ch.isprintable() for ch in text)


def parse_model(data):
    """Return (model, problem). NULs are stripped; binary junk gives (None, reason)."""
    if data is None:
        return None, None
    raw = data.rstrip(b"\x00")
    if not raw.strip():
        return None, "is empty"
    if b"\x00" in raw:
        return None, "holds NUL bytes inside the text (binary junk)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "is not valid text (binary junk)"
    text = text.strip()
    if not _printable(text):
        return None, "holds control characters (binary junk)"
    return text, None


def parse_compatible(data):
    """Return (entries, problem). Entries are the NUL-separated strings, in order."""
    if data is None:
        return [], None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [], "is not valid text (binary junk)"
    entries = [item.strip() for item in text.split("\x00") if item.strip()]
    if any(not _printable(item) for item in entries):
        return [], "holds control characters (binary junk)"
    return entries, None


def module_parts(entries, known_boards):
    """Module part numbers ("p3701-0005") named by compatible entries.

    Only board ids in ``known_boards`` count as modules: carriers (p3737,
    p3768, p3509, p4071...) share the same syntax but say nothing about the
    module. The module sits after "+" in "carrier+module" entries.
    """
    found = []
    for entry in entries:
        if not entry.startswith("nvidia,"):
            continue
        body = entry[len("nvidia,"):]
        candidates = body.split("+")
        for candidate in reversed(candidates):
            match = _PART_RE.match(candidate)
            if match and match.group(1) in known_boards:
                part = "p%s-%s" % (match.group(1), match.group(2))
                if part not in found:
                    found.append(part)
                break
    return found


def soc(entries):
    """First "nvidia,tegraNNN" entry (tegra23x-style aliases are skipped)."""
    for entry in entries:
        match = _SOC_RE.match(entry)
        if match:
            return match.group(1)
    return None


def is_super(entries):
    return any(entry.endswith("-super") for entry in entries)


def parse_boardids(data, known_boards):
    """Module part numbers from nvidia,boardids ("3701:0000:..."), known boards only."""
    if data is None:
        return []
    text = data.decode("utf-8", "replace").replace("\x00", " ")
    parts = []
    for board, sku in _BOARDID_RE.findall(text):
        if board in known_boards:
            part = "p%s-%s" % (board, sku)
            if part not in parts:
                parts.append(part)
    return parts
