# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Is a draft model compatible with its target: same vocabulary size, same tokenizer family.

Standard library only, Python 3.8+.  vLLM itself refuses a draft with another vocabulary
size only when the server starts ("Target and draft model should have the same vocabulary
size."), after the target has loaded; this check runs in preflight.  What a model is comes
from its config.json when the model is local (``model_configs``, read on the host), else
from the catalog (vllm_server_model_catalog).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re


def tokenizer_family(name):
    """'llama' from 'llama3' / 'llama', 'qwen' from 'qwen3' / 'qwen2_moe': the letters before the version."""
    match = re.match(r"[a-z]+", str(name or "").lower())
    return match.group(0) if match else None


def _from_config(config):
    if not isinstance(config, dict):
        return None
    vocab = config.get("vocab_size")
    vocab = vocab if isinstance(vocab, int) and not isinstance(vocab, bool) else None
    family = tokenizer_family(config.get("model_type"))
    if vocab is None and family is None:
        return None
    return {"vocab_size": vocab, "family": family, "source": "its config.json"}


def _from_catalog(catalog, model):
    """What the catalog says about ``model`` (as a target, or as a draft of a target)."""
    if not isinstance(catalog, dict):
        return None
    entry = catalog.get(model)
    if isinstance(entry, dict):
        return {"vocab_size": entry.get("vocab_size"), "family": tokenizer_family(entry.get("family")),
                "source": "the catalog"}
    for parent in catalog.values():
        if not isinstance(parent, dict):
            continue
        for draft in parent.get("draft_models") or []:
            if isinstance(draft, dict) and draft.get("model") == model:
                # A catalogued draft belongs to its target's family by the catalog's own rule.
                return {"vocab_size": draft.get("vocab_size", parent.get("vocab_size")),
                        "family": tokenizer_family(draft.get("family") or parent.get("family")),
                        "source": "the catalog"}
    return None


def describe(model, catalog, model_configs):
    """{vocab_size, family, source} for ``model``, config.json first; None when nothing is known."""
    return _from_config((model_configs or {}).get(model)) or _from_catalog(catalog, model)


def draft_mismatch(target, draft, catalog, model_configs=None):
    """(problem, known): the reason ``draft`` cannot draft for ``target``, or None; ``known`` is False
    when either model is unknown to both config.json and the catalog (nothing could be compared)."""
    want = describe(target, catalog, model_configs)
    have = describe(draft, catalog, model_configs)
    if not want or not have:
        return None, False
    if want["vocab_size"] and have["vocab_size"] and want["vocab_size"] != have["vocab_size"]:
        return ("%s has vocab_size %s (%s) and the target %s has %s (%s); vLLM refuses a draft with another "
                "vocabulary (\"Target and draft model should have the same vocabulary size.\")"
                % (draft, have["vocab_size"], have["source"], target, want["vocab_size"], want["source"])), True
    if want["family"] and have["family"] and want["family"] != have["family"]:
        return ("%s is a %s model (%s) and the target %s is %s (%s): a draft must share the target's tokenizer"
                % (draft, have["family"], have["source"], target, want["family"], want["source"])), True
    return None, bool(want["vocab_size"] and have["vocab_size"])
