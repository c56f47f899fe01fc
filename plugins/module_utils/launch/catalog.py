# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Pick a speculation method from the model catalog.

Standard library only, Python 3.8+.  The catalog is the role variable
``vllm_server_model_catalog`` (roles/vllm_server/defaults/main/catalog.yml):
target model id -> {family, params_b, weight_bytes, kv_bytes_per_token,
vocab_size, eagle3_heads: [...], draft_models: [...]}.

Rules encoded (jetson-speculative-decoding skill):
- EAGLE-3 only with a *published* head listed in the catalog; never invent one.
- Otherwise a catalogued same-family draft model (same vocabulary), else off.
- Speculation only on Thor and AGX Orin; Orin Nano/NX lack the headroom.
- num_speculative_tokens starts at 5 on Thor, 3 on AGX Orin, for both methods.

The families and numbers come from common/policy.py.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import (
    SMALL_ORIN_FAMILIES, SPECULATION_FAMILIES, normalize_family, start_k,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import (
    SpecConfigError, validate_model_ref,
)

CATALOG_VAR = "vllm_server_model_catalog"
PREFERRED_METHODS = ("eagle3", "draft_model", "off")


def _off(reason):
    return {"method": None, "model": None, "weight_bytes": None, "kv_bytes_per_token": None,
            "num_speculative_tokens": None, "reason": reason}


def _positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def catalog_entry(catalog, target):
    """Return the catalog entry for ``target`` or None; raise if the catalog is not a mapping."""
    if not isinstance(catalog, dict):
        raise SpecConfigError("%s must be a mapping of target model id -> entry, got %s"
                              % (CATALOG_VAR, type(catalog).__name__))
    entry = catalog.get(target)
    if entry is not None and not isinstance(entry, dict):
        raise SpecConfigError("%s[%r] must be a mapping, got %s" % (CATALOG_VAR, target, type(entry).__name__))
    return entry


def _usable(candidates, target, target_vocab, kind, skipped):
    """Yield well-formed catalog candidates; note the ones skipped and why."""
    if not isinstance(candidates, list):
        if candidates is not None:
            skipped.append("%s[%r].%s is not a list" % (CATALOG_VAR, target, kind))
        return
    for item in candidates:
        if not isinstance(item, dict):
            skipped.append("%s entry %r is not a mapping" % (kind, item))
            continue
        try:
            validate_model_ref(item.get("model"), "%s model" % kind)
        except SpecConfigError as exc:
            skipped.append(str(exc))
            continue
        if not _positive_int(item.get("weight_bytes")):
            skipped.append("%s %s has no positive integer weight_bytes" % (kind, item.get("model")))
            continue
        vocab = item.get("vocab_size")
        if target_vocab and vocab and vocab != target_vocab:
            # vLLM refuses this pairing ("Target and draft model should have the same vocabulary size").
            skipped.append("%s %s has vocab_size %s, target has %s" % (kind, item["model"], vocab, target_vocab))
            continue
        yield item


def _chosen(method, item, family_board, reason):
    return {"method": method, "model": item["model"], "weight_bytes": item["weight_bytes"],
            "kv_bytes_per_token": item.get("kv_bytes_per_token"),
            "num_speculative_tokens": start_k(family_board), "reason": reason}


def select_speculation(catalog, target, preferred_method="eagle3", family_board=None):
    """Return {method, model, weight_bytes, kv_bytes_per_token, num_speculative_tokens, reason}.

    ``method`` is None (speculation off) when the board, the catalog or the
    preference rules it out; ``reason`` always says why, with names to act on.
    """
    if preferred_method not in PREFERRED_METHODS:
        raise SpecConfigError("preferred_method must be one of %s, got %r"
                              % (", ".join(PREFERRED_METHODS), preferred_method))
    entry = catalog_entry(catalog, target)
    family_board = normalize_family(family_board)
    if preferred_method == "off":
        return _off("speculation is off because preferred_method is 'off'")
    if family_board in SMALL_ORIN_FAMILIES:
        return _off("board family %s: Orin Nano/NX rarely have the memory for a target plus a draft or "
                    "EAGLE-3 head and OOM at startup; speculation is only enabled on Thor and AGX Orin"
                    % family_board)
    if family_board not in SPECULATION_FAMILIES:
        return _off("board family %r is not one of %s; pass the family from the Jetson facts "
                    "(speculation is only enabled on Thor and AGX Orin)"
                    % (family_board, ", ".join(SPECULATION_FAMILIES)))
    if entry is None:
        return _off("target %s is not in %s; add an entry (family, weight_bytes, kv_bytes_per_token, "
                    "eagle3_heads, draft_models) to enable speculation for it" % (target, CATALOG_VAR))

    skipped = []
    vocab = entry.get("vocab_size")
    if preferred_method == "eagle3":
        for head in _usable(entry.get("eagle3_heads"), target, None, "eagle3_heads", skipped):
            return _chosen("eagle3", head, family_board,
                           "published EAGLE-3 head %s is catalogued for %s" % (head["model"], target))
    for draft in _usable(entry.get("draft_models"), target, vocab, "draft_models", skipped):
        why = "no published EAGLE-3 head is catalogued for %s" % target if preferred_method == "eagle3" \
            else "preferred_method is draft_model"
        return _chosen("draft_model", draft, family_board,
                       "%s; using same-family draft model %s" % (why, draft["model"]))
    reason = ("no published EAGLE-3 head and no same-family draft model are catalogued for %s "
              "(do not train a head ad hoc; add a published one to %s)" % (target, CATALOG_VAR))
    if preferred_method == "draft_model":
        reason = "no same-family draft model is catalogued for %s in %s" % (target, CATALOG_VAR)
    if skipped:
        reason += "; skipped: " + "; ".join(skipped)
    return _off(reason)


def catalog_model_facts(catalog, model):
    """Find ``model`` anywhere in the catalog (target, head or draft): {weight_bytes, kv_bytes_per_token}.

    Returns None when the catalog does not know the model.
    """
    if not isinstance(catalog, dict):
        return None
    if isinstance(catalog.get(model), dict):
        entry = catalog[model]
        return {"weight_bytes": entry.get("weight_bytes"), "kv_bytes_per_token": entry.get("kv_bytes_per_token")}
    for entry in catalog.values():
        if not isinstance(entry, dict):
            continue
        for kind in ("eagle3_heads", "draft_models"):
            for item in entry.get(kind) or []:
                if isinstance(item, dict) and item.get("model") == model:
                    return {"weight_bytes": item.get("weight_bytes"),
                            "kv_bytes_per_token": item.get("kv_bytes_per_token")}
    return None
