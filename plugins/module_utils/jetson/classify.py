# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Decide family, variant and module part from collected evidence.

Rules (strong evidence first, memory last, conflicts give null + a warning):
  family  <- module part numbers (TNSPEC, compatible, boardids), family-naming
             compatible entries, the model string; all must agree, and agree
             with the SoC.
  variant <- boot_control (TNSPEC SKU, board name) > device_tree (part table,
             model hints) > nvidia_smi (Thor only) > memory thresholds.
             Two sources naming different variants, or a variant whose module
             size MemTotal contradicts, leave the variant null.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import boards


def _family_votes(model, compatible, dt_parts, bc_part):
    votes = []
    if bc_part and boards.board_of(bc_part) in boards.KNOWN_BOARDS:
        votes.append((boards.family_of_part(bc_part), "nv_boot_control.conf TNSPEC %s" % bc_part))
    for part in dt_parts:
        votes.append((boards.family_of_part(part), "device-tree part %s" % part))
    for entry in compatible:
        if entry in boards.COMPATIBLE_FAMILY:
            votes.append((boards.COMPATIBLE_FAMILY[entry], "compatible %s" % entry))
    model_family = boards.family_from_model(model)
    if model_family:
        votes.append((model_family, "model %r" % model))
    return [(family, why) for family, why in votes if family]


def _decide_family(votes, soc, warnings):
    families = sorted(set(family for family, dummy in votes))
    if not families:
        return "unknown"
    if len(families) > 1:
        warnings.append(
            "The board evidence disagrees (%s), so the family is left unknown rather than guessed."
            % "; ".join("%s says %s" % (why, family) for family, why in votes))
        return "unknown"
    family = families[0]
    expected_soc = boards.FAMILY_SOC.get(family)
    if soc and expected_soc and soc != expected_soc:
        warnings.append(
            "The SoC %s does not match the %s family named by %s, so the family is left unknown."
            % (soc, family, votes[0][1]))
        return "unknown"
    return family


def _variant_candidates(family, model, dt_parts, bc, smi_name):
    candidates = []
    bc_part = bc.get("part")
    if bc_part and boards.family_of_part(bc_part) == family and boards.MODULES.get(bc_part):
        candidates.append((boards.MODULES[bc_part], "boot_control", "TNSPEC part %s" % bc_part))
    elif bc.get("board_name"):
        name = bc["board_name"]
        hint = boards.variant_hints(family, name)
        # NVIDIA's board config for the T5000 devkit module is jetson-agx-thor-devkit;
        # T4000 has its own (jetson-agx-thor-t4000).
        if hint is None and family == "thor" and "jetson-agx-thor-devkit" in name:
            hint = "thor_t5000"
        if hint:
            candidates.append((hint, "boot_control", "board config %s" % name))
    for part in dt_parts:
        variant = boards.MODULES.get(part)
        if variant and boards.VARIANTS[variant][0] == family:
            candidates.append((variant, "device_tree", "device-tree part %s" % part))
    hint = boards.variant_hints(family, model)
    if hint:
        candidates.append((hint, "device_tree", "model %r" % model))
    if family == "thor" and smi_name:
        hint = boards.variant_hints(family, smi_name)
        if hint:
            candidates.append((hint, "nvidia_smi", "nvidia-smi name %r" % smi_name))
    return candidates


def _pick_part(bc_part, dt_parts):
    if bc_part and boards.board_of(bc_part) in boards.KNOWN_BOARDS:
        return bc_part
    specific = [part for part in dt_parts if boards.MODULES.get(part)]
    if specific:
        return specific[0]
    return dt_parts[0] if dt_parts else None


def classify(model=None, compatible=(), dt_parts=(), boot_control=None, smi_name=None,
             mem_total_bytes=None, soc=None, power_mode_name=None):
    """Return {family, variant, variant_source, module_part, super, warnings}."""
    warnings = []
    compatible = list(compatible or [])
    dt_parts = list(dt_parts or [])
    bc = boot_control or {}
    bc_part = bc.get("part")

    family = _decide_family(_family_votes(model, compatible, dt_parts, bc_part), soc, warnings)
    result = {
        "family": family,
        "variant": None,
        "variant_source": None,
        "module_part": None,
        "super": False,
        "warnings": warnings,
    }
    result["super"] = bool(
        any(entry.endswith("-super") for entry in compatible)
        or "super" in (model or "").lower().split()
        or "super" in (bc.get("board_name") or "")
        or (power_mode_name or "").upper() == "MAXN_SUPER")
    if family == "unknown":
        return result

    result["module_part"] = _pick_part(bc_part, dt_parts)
    candidates = _variant_candidates(family, model, dt_parts, bc, smi_name)
    named = sorted(set(variant for variant, dummy, dummy in candidates))
    if len(named) > 1:
        warnings.append(
            "The variant evidence disagrees (%s), so the variant and module part are left null."
            % "; ".join("%s says %s" % (why, variant) for variant, dummy, why in candidates))
        result["module_part"] = None
        return result
    if named:
        variant, source, why = candidates[0]
        if not boards.memory_matches(variant, mem_total_bytes):
            warnings.append(
                "%s names %s but MemTotal is %.1f GiB, which does not fit that module, "
                "so the variant is left null." % (why, variant, mem_total_bytes / float(boards.GIB)))
            return result
        result["variant"], result["variant_source"] = variant, source
        return result

    variant = boards.variant_from_memory(family, mem_total_bytes)
    if variant:
        result["variant"], result["variant_source"] = variant, "memory"
        warnings.append(
            "No part number names the %s variant, so %s was inferred from MemTotal (%.1f GiB) only."
            % (family, variant, mem_total_bytes / float(boards.GIB)))
    else:
        warnings.append(
            "No part number or usable MemTotal names the %s variant, so it is left null." % family)
    return result
