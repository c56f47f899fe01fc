# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The startup fallback ladder: which speculative launch to try next, from the cause and the sizes.

Standard library only, Python 3.8+.  The skill's error handling, made executable:

- startup OOM: lower ``--gpu-memory-utilization``, then a *strictly smaller* speculation
  (a smaller catalogued same-family draft, then n-gram, which loads no weights), then
  speculation off and a hand-off to memory tuning with what the memory check recommends;
- the KV cache does not fit: a strictly smaller speculation at the utilization that failed (never
  a lower one, which shrinks the KV cache further), then off with the same hand-off;
- vLLM rejects ``--speculative-config`` (or the arguments): straight back to the
  non-speculative command; a lower utilization or another draft would fail the same way;
- the draft or head cannot be found or downloaded: off, naming the download problem;
- a failure the log does not name: off, rather than guessing.

``fallback_rungs`` lists the rungs once, in the order memory trouble walks them;
``next_rung`` says, after a rung failed with a cause, which rung comes next and why.
Each rung carries the role variables that produce it, so the playbook applies it as it is.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.launch.catalog import catalog_model_facts
from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import (
    UTILIZATION_DROP, UTILIZATION_MIN, speculative_utilization,
)
from ansible_collections.jetson.specdec.plugins.module_utils.vllm.failure import failure_evidence

OFF_LABEL = "speculation off (baseline)"
# Causes after which the ladder goes down (the same speculation in less memory, or less speculation).
# A KV-cache shortfall skips the lower-utilization rungs: vLLM sizes the KV cache from what the
# utilization leaves after the weights ("Try increasing `gpu_memory_utilization`"), so a lower one
# leaves less; a smaller drafter frees its weights and its own KV cache instead.
WALK_DOWN_CAUSES = ("out_of_memory", "kv_cache_shortfall")
STEPS = ("planned", "lower_utilization", "smaller_speculation", "off")


def _count(value):
    """A non-negative number from the catalog or a templated variable ('4096' included); else None."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return value


def _footprint(facts, max_model_len):
    """Bytes a drafter adds: weights plus its KV cache at max_model_len; None when the catalog does not say."""
    weight = _count(facts.get("weight_bytes")) if isinstance(facts, dict) else None
    if weight is None:
        return None
    return int(weight + (_count(facts.get("kv_bytes_per_token")) or 0) * (_count(max_model_len) or 0))


def _smaller_drafts(catalog, target, current_bytes, max_model_len):
    """Catalogued same-vocabulary drafts of ``target`` strictly smaller than ``current_bytes``, smallest last."""
    entry = (catalog or {}).get(target) if isinstance(catalog, dict) else None
    if not isinstance(entry, dict) or current_bytes is None:
        return []
    vocab = entry.get("vocab_size")
    found = []
    for draft in entry.get("draft_models") or []:
        if not isinstance(draft, dict) or not draft.get("model"):
            continue
        if vocab and draft.get("vocab_size") and draft["vocab_size"] != vocab:
            continue
        size = _footprint(draft, max_model_len)
        if size is not None and size < current_bytes:
            found.append((size, draft["model"]))
    return sorted(found, reverse=True)


def _rung(step, label, method=None, model="", util=None, drop=None, size=None):
    if step == "off":
        return {"step": step, "label": label, "vllm_server_speculation": False, "drafter_bytes": 0}
    return {"step": step, "label": label, "vllm_server_speculation": True, "vllm_server_speculative_method": method,
            "vllm_server_speculative_model": model or "", "vllm_server_speculative_utilization_drop": drop,
            "gpu_memory_utilization": util, "drafter_bytes": size}


def fallback_rungs(plan, catalog, target, drop=UTILIZATION_DROP, min_utilization=UTILIZATION_MIN, max_model_len=None):
    """The rungs of the ladder for a planned speculative launch, in the order an OOM walks them.

    planned config -> the same at a utilization lowered by another ``drop`` (not below
    ``min_utilization``) -> each catalogued same-family draft strictly smaller than the planned
    drafter (weights + KV cache at ``max_model_len``), largest first -> n-gram (no weights) ->
    speculation off.  Sizes come from the catalog; an uncatalogued drafter gets no draft rung
    (it cannot be shown to be larger) but still the n-gram one.
    """
    cfg = (plan or {}).get("speculative_config") or {}
    util = (plan or {}).get("gpu_memory_utilization")
    rungs = []
    if cfg and isinstance(util, (int, float)) and not isinstance(util, bool):
        method = cfg.get("method")
        model = cfg.get("model", "")
        size = 0 if method == "ngram" else _footprint(catalog_model_facts(catalog, model), max_model_len)
        rungs.append(_rung("planned", "%s at utilization %.2f" % (method, util), method, model,
                           round(util, 2), drop, size))
        lower = speculative_utilization(util, drop)
        smaller_util, smaller_drop = util, drop
        if lower >= min_utilization:
            rungs.append(_rung("lower_utilization", "%s at utilization %.2f" % (method, lower), method, model,
                               lower, round(2 * drop, 2), size))
            smaller_util, smaller_drop = lower, round(2 * drop, 2)
        if method != "ngram":
            for draft_size, draft in _smaller_drafts(catalog, target, size, max_model_len):
                rungs.append(_rung("smaller_speculation", "draft_model %s at utilization %.2f" % (draft, smaller_util),
                                   "draft_model", draft, round(smaller_util, 2), smaller_drop, draft_size))
            rungs.append(_rung("smaller_speculation", "ngram at utilization %.2f" % smaller_util, "ngram", "",
                               round(smaller_util, 2), smaller_drop, 0))
    rungs.append(_rung("off", OFF_LABEL))
    for index, rung in enumerate(rungs):
        rung["rung"] = index
    return rungs


def _memory_hand_off(headroom, kv=False):
    """What the memory check recommends, for the hand-off to memory tuning."""
    headroom = headroom if isinstance(headroom, dict) else {}
    recommended = headroom.get("recommended_gpu_memory_utilization")
    if isinstance(recommended, (int, float)) and not isinstance(recommended, bool):
        advice = "the memory check recommends gpu_memory_utilization %.2f for the speculative launch" % recommended
    elif headroom:
        advice = "the memory check found no gpu_memory_utilization at which target, drafter and KV cache fit"
    else:
        advice = "the memory check's numbers are not available for this host"
    if kv:
        return ("Hand off to memory tuning (jetson-inference-mem-tune): %s; the KV cache needs room after the "
                "weights, so lower vllm_server_max_model_len (its size follows it) or, where memory is free, raise "
                "the utilization (a smaller vllm_server_speculative_utilization_drop), then run the rollout again."
                % advice)
    return ("Hand off to memory tuning (jetson-inference-mem-tune): %s; free memory used by other processes, "
            "lower vllm_server_max_model_len or vllm_server_max_num_seqs, then run the rollout again." % advice)


def next_rung(rungs, failed_rung, cause, message=None, headroom=None):
    """After rung ``failed_rung`` failed with ``cause``: {rung, label, step, cause, why} of the rung to try next.

    ``failed_rung`` is the rung's number, or the rung as it ran (a dict).  After a KV-cache shortfall
    the answer also has ``utilization`` when the next rung runs at the failed one's utilization
    instead of its own lower one (``apply_kept_utilization``).

    ``rungs`` is fallback_rungs' list; ``message`` the failure text (vLLM's lines are quoted);
    ``headroom`` the spec_headroom result of the failed rung (its recommendation goes into
    the hand-off when memory ends the ladder).  The last rung (off) is returned when the ladder stops.
    """
    rungs = [r for r in rungs or [] if isinstance(r, dict)]
    if not rungs:
        raise ValueError("next_rung needs the ladder's rungs (fallback_rungs), got none")
    # The rung as it ran (a dict: with the utilization a KV-cache shortfall kept), or its number.
    ran = failed_rung if isinstance(failed_rung, dict) else None
    if ran is not None:
        failed_rung = ran.get("rung")
    off = rungs[-1]
    position = next((i for i, r in enumerate(rungs) if r.get("rung") == failed_rung), None)
    if position is None:
        raise ValueError("rung %r is not on this ladder (rungs 0..%d)" % (failed_rung, len(rungs) - 1))
    failed = dict(rungs[position], **ran) if ran else rungs[position]
    evidence = failure_evidence(message or "")
    said = ' (vLLM: "%s")' % evidence["line"] if evidence["line"] else ""
    keep = None
    if cause == "kv_cache_shortfall":
        smaller = next((i for i in range(position + 1, len(rungs) - 1)
                        if rungs[i].get("step") == "smaller_speculation"), None)
        if smaller is not None:
            target = rungs[smaller]
            keep = _kept_utilization(failed, target)
            label = keep["label"] if keep else target["label"]
            why = ("The KV cache of %s did not fit at startup%s; a lower utilization would leave it less room, so "
                   "next: %s (smaller speculation, its drafter's weights and KV cache freed)."
                   % (failed["label"], said, label))
        else:
            target = off
            why = ("The KV cache of %s did not fit at startup%s and no smaller speculation is left: speculation is "
                   "off. %s" % (failed["label"], said, _memory_hand_off(headroom, kv=True)))
    elif cause in WALK_DOWN_CAUSES and position + 1 < len(rungs) - 1:
        target = rungs[position + 1]
        why = ("%s ran out of memory at startup%s; next: %s (%s)."
               % (failed["label"], said, target["label"], target["step"].replace("_", " ")))
    elif cause in WALK_DOWN_CAUSES:
        target = off
        why = ("%s ran out of memory at startup%s and no smaller speculation is left: speculation is off. %s"
               % (failed["label"], said, _memory_hand_off(headroom)))
    elif cause in ("rejected_speculative_config", "bad_arguments"):
        target = off
        why = ("vLLM rejected the launch of %s (%s)%s: back to the non-speculative command at once, as the skill "
               "says; a lower utilization or another drafter would be rejected the same way. Check that the "
               "runtime's vLLM supports the method (docs/catalog.md)." % (failed["label"], cause, said))
    elif cause == "model_not_found":
        target = off
        model = failed.get("vllm_server_speculative_model") or "the model"
        why = ("%s could not be loaded for %s%s: speculation is off. Fix the download: the repo id or local path, "
               "the host's access to the Hugging Face Hub (HF_HUB_OFFLINE, proxy), or vllm_server_hf_token for a "
               "gated model." % (model, failed["label"], said))
    else:
        target = off
        why = ("%s failed with cause %s%s, which the ladder does not retry with other speculation: speculation "
               "is off. Read the unit's journal (journalctl -u vllm)." % (failed["label"], cause or "unknown", said))
    out = {"rung": target["rung"], "label": target["label"], "step": target["step"], "cause": cause, "why": why}
    if keep:
        out.update(label=keep["label"], utilization=keep["utilization"])
    return out


def _kept_utilization(failed, target):
    """The smaller speculation at the failed rung's utilization when the ladder's own is lower; else None.

    {label, utilization: {gpu_memory_utilization, vllm_server_speculative_utilization_drop}}: the
    rollout record keeps it with the attempt and rollout_ladder applies it to the rung.
    """
    util, drop = failed.get("gpu_memory_utilization"), failed.get("vllm_server_speculative_utilization_drop")
    if not isinstance(util, (int, float)) or isinstance(util, bool) or util == target.get("gpu_memory_utilization"):
        return None
    label = "%s at utilization %.2f" % (str(target.get("label", "")).rsplit(" at utilization ", 1)[0], util)
    return {"label": label, "utilization": {"gpu_memory_utilization": util,
                                            "vllm_server_speculative_utilization_drop": drop}}


def apply_kept_utilization(rung, utilization):
    """The rung with the utilization a KV-cache shortfall kept (next_rung's ``utilization``), or as it is."""
    if not isinstance(rung, dict) or not isinstance(utilization, dict) or rung.get("step") == "off":
        return rung
    util = utilization.get("gpu_memory_utilization")
    if not isinstance(util, (int, float)) or isinstance(util, bool):
        return rung
    out = dict(rung)
    out.update(utilization)
    out["label"] = "%s at utilization %.2f" % (str(rung.get("label", "")).rsplit(" at utilization ", 1)[0], util)
    return out
