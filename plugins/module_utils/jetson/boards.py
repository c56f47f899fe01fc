# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The Jetson module table and the rules that turn evidence into family/variant.

Sources: jtop MODULE_NAME_TABLE (part numbers), NVIDIA/jetson-gpio compatible
lists, the r38 nvautoflash board table (3767 SKUs, 3834-0000 = T4000), module
datasheet figures; docs/facts.md ("Module table: sources") lists them and the
figures marked UNVERIFIED here.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

FAMILIES = ("thor", "agx_orin", "orin_nx", "orin_nano", "agx_xavier", "xavier_nx", "unknown")

# variant -> (family, nominal memory GiB, bandwidth GB/s, bandwidth in Super mode)
VARIANTS = {
    "thor_t5000": ("thor", 128, 273.0, None),
    "thor_t4000": ("thor", 64, 273.0, None),
    "agx_orin_64gb": ("agx_orin", 64, 204.8, None),
    "agx_orin_32gb": ("agx_orin", 32, 204.8, None),
    "agx_orin_industrial": ("agx_orin", 64, 204.8, None),  # 64 GB / 204.8: UNVERIFIED
    "orin_nx_16gb": ("orin_nx", 16, 102.4, 102.4),
    "orin_nx_8gb": ("orin_nx", 8, 102.4, 102.4),
    "orin_nano_8gb": ("orin_nano", 8, 68.0, 102.0),
    "orin_nano_4gb": ("orin_nano", 4, 34.0, 51.0),  # Super figure UNVERIFIED
    "agx_xavier_64gb": ("agx_xavier", 64, 136.5, None),  # Xavier bandwidth UNVERIFIED
    "agx_xavier_32gb": ("agx_xavier", 32, 136.5, None),
    "agx_xavier_16gb": ("agx_xavier", 16, 136.5, None),
    "agx_xavier_8gb": ("agx_xavier", 8, 136.5, None),
    "agx_xavier_industrial": ("agx_xavier", 32, 136.5, None),
    "xavier_nx_16gb": ("xavier_nx", 16, None, None),
    "xavier_nx_8gb": ("xavier_nx", 8, None, None),
}

# Module part number -> variant. None: the part names the family but not the
# memory (the AGX Orin devkit device tree p3701-0000 is shared by the 32 GB and
# 64 GB kits, jetson_stats #864 shows a p3701-0001 module running it).
MODULES = {
    "p3834-0008": "thor_t5000",
    "p3834-0005": "thor_t5000",
    "p3834-0000": "thor_t4000",
    "p3701-0005": "agx_orin_64gb",
    "p3701-0004": "agx_orin_32gb",
    "p3701-0008": "agx_orin_industrial",
    "p3701-0000": None,
    "p3767-0000": "orin_nx_16gb",
    "p3767-0001": "orin_nx_8gb",
    "p3767-0003": "orin_nano_8gb",
    "p3767-0005": "orin_nano_8gb",
    "p3767-0004": "orin_nano_4gb",
    "p2888-0001": "agx_xavier_16gb",
    "p2888-0003": "agx_xavier_32gb",
    "p2888-0004": "agx_xavier_32gb",
    "p2888-0005": "agx_xavier_64gb",
    "p2888-0006": "agx_xavier_8gb",
    "p2888-0008": "agx_xavier_industrial",
    "p3668-0000": "xavier_nx_8gb",
    "p3668-0001": "xavier_nx_8gb",
    "p3668-0003": "xavier_nx_16gb",
}

# Module board id -> family. 3767 is shared by Orin NX and Orin Nano: only a
# known SKU (or the model string) can tell them apart.
BOARD_FAMILY = {
    "3834": "thor",
    "3701": "agx_orin",
    "3767": None,
    "2888": "agx_xavier",
    "3668": "xavier_nx",
}
KNOWN_BOARDS = frozenset(BOARD_FAMILY)

# Compatible entries without a module part that still name the family.
COMPATIBLE_FAMILY = {
    "nvidia,p2972-0000": "agx_xavier",
    "nvidia,p2972-0006": "agx_xavier",
    "nvidia,jetson-xavier": "agx_xavier",
    "nvidia,jetson-xavier-industrial": "agx_xavier",
    "nvidia,galen-industrial": "agx_xavier",
}

FAMILY_SOC = {
    "thor": "tegra264",
    "agx_orin": "tegra234",
    "orin_nx": "tegra234",
    "orin_nano": "tegra234",
    "agx_xavier": "tegra194",
    "xavier_nx": "tegra194",
}

SOC_CUDA_ARCH = {
    "tegra264": "11.0",
    "tegra234": "8.7",
    "tegra194": "7.2",
    "tegra186": "6.2",
    "tegra210": "5.3",
}

# Families whose every variant has the same bandwidth (usable when the variant is null).
FAMILY_BANDWIDTH = {"thor": 273.0, "agx_orin": 204.8, "orin_nx": 102.4, "agx_xavier": 136.5}

# Last resort only: rounded GiB of MemTotal (detect_jetson.sh thresholds).
MEMORY_THRESHOLDS = {
    "thor": ((96, "thor_t5000"), (32, "thor_t4000")),
    "agx_orin": ((56, "agx_orin_64gb"), (28, "agx_orin_32gb")),
    "orin_nx": ((14, "orin_nx_16gb"), (7, "orin_nx_8gb")),
    "orin_nano": ((7, "orin_nano_8gb"), (3, "orin_nano_4gb")),
    "agx_xavier": ((56, "agx_xavier_64gb"), (28, "agx_xavier_32gb"), (14, "agx_xavier_16gb"), (7, "agx_xavier_8gb")),
    "xavier_nx": ((14, "xavier_nx_16gb"), (7, "xavier_nx_8gb")),
}

# MemTotal is the module size minus carve-outs (7.4 GiB on 8 GB, 122.8 GiB on
# 128 GB); outside this band the part number and the memory disagree.
MEMORY_RATIO_MIN = 0.70
MEMORY_RATIO_MAX = 1.05

GIB = 1024 ** 3


def board_of(part):
    return part[1:5] if part and len(part) >= 5 else None


def family_of_part(part):
    board = board_of(part)
    family = BOARD_FAMILY.get(board)
    if family:
        return family
    variant = MODULES.get(part)
    return VARIANTS[variant][0] if variant else None


def family_from_model(model):
    """Family named by the device-tree model string, or None.

    The L4T 35 Orin Nano string "NVIDIA Orin Nano Developer Kit" has no
    "Jetson", and AGX Xavier says "Jetson-AGX" (L4T 32.2+) or "jetson-xavier".
    """
    text = (model or "").lower()
    if not text:
        return None
    if "thor" in text:
        return "thor"
    if "orin nano" in text or "orin-nano" in text:
        return "orin_nano"
    if "orin nx" in text or "orin-nx" in text:
        return "orin_nx"
    if "agx orin" in text or "orin agx" in text:
        return "agx_orin"
    if "xavier nx" in text or "xavier-nx" in text:
        return "xavier_nx"
    if "agx xavier" in text or "xavier agx" in text or text.startswith("jetson-agx") or "jetson-xavier" in text:
        return "agx_xavier"
    return None


def variant_hints(family, text):
    """Variant named by free text (model string, TNSPEC board name, GPU name), or None."""
    text = (text or "").lower()
    if family == "thor":
        if "t4000" in text:
            return "thor_t4000"
        if "t5000" in text:
            return "thor_t5000"
    if "industrial" in text:
        if family == "agx_orin":
            return "agx_orin_industrial"
        if family == "agx_xavier":
            return "agx_xavier_industrial"
    return None


def variant_from_memory(family, mem_total_bytes):
    if not mem_total_bytes:
        return None
    gib = int(mem_total_bytes / float(GIB) + 0.5)
    for minimum, variant in MEMORY_THRESHOLDS.get(family, ()):
        if gib >= minimum:
            return variant
    return None


def memory_matches(variant, mem_total_bytes):
    """False only when MemTotal clearly contradicts the variant's module size."""
    nominal = VARIANTS.get(variant, (None, None))[1]
    if not nominal or not mem_total_bytes:
        return True
    ratio = mem_total_bytes / float(nominal * GIB)
    return MEMORY_RATIO_MIN <= ratio <= MEMORY_RATIO_MAX


def bandwidth(family, variant, is_super):
    if variant in VARIANTS:
        normal, boosted = VARIANTS[variant][2], VARIANTS[variant][3]
        return boosted if (is_super and boosted) else normal
    return FAMILY_BANDWIDTH.get(family)


def cuda_arch(soc, family):
    if soc in SOC_CUDA_ARCH:
        return SOC_CUDA_ARCH[soc]
    return SOC_CUDA_ARCH.get(FAMILY_SOC.get(family))


def wrong_family_groups(group_names, family):
    """Inventory groups named after another board family than the one the board reports.

    Such a host gets that group's group_vars (k, utilization, speculation) next to, or over,
    its own family's (the group_by on the reported family adds it to the right group too, and
    groups of one depth merge alphabetically), so the operator's board files are not what
    applies to it."""
    named = set(str(g) for g in group_names or []) & set(f for f in FAMILIES if f != "unknown")
    return sorted(g for g in named if g != family)
