# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The Jetson speculative-decoding rules as one pure function: what to launch, or why not.

``plan_launch`` takes the board facts and the role's variables and returns the
speculative config to render (or None), the gpu_memory_utilization to use, and
``refusals``: each one names the rule that refused and the fix.  The role runs it in
preflight, before anything on the host changes.  Rules (NVIDIA's
jetson-speculative-decoding skill, made executable):

- family: speculation on Thor and AGX Orin only; Orin NX / Nano / others only with
  an explicit force; EAGLE-3 only on Thor and AGX Orin, force or not (OOM at startup);
- runtime (launch/gates.py): vLLM >= 0.20 for the current --speculative-config shape on
  Thor and on Orin with L4T >= 39; older Orin uses the JetPack-matched NVIDIA-AI-IOT image
  whose vLLM has the method; an Orin image never runs on Thor; an Orin whose L4T cannot be
  read gets no speculation; the container path needs the NVIDIA container runtime;
- concurrency: speculation helps at low concurrency only (<= 2); batching wins at 8;
- k: 5 on Thor, 3 on AGX Orin, for EAGLE-3 and draft models alike; more only with a
  measured acceptance > 0.6, k tuning on, or force;
- gpu_memory_utilization: lowered by 0.05 whenever speculation is on;
- heads: EAGLE-3 only where the catalog lists a published head, else a catalogued
  same-family draft model, else off; an operator-named draft must share the target's
  vocabulary and tokenizer family (launch/compat.py); vllm_server_speculative_extra
  cannot set what the role decides (method, model, k, draft TP).

The numbers and families live in common/policy.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.launch.catalog import select_speculation
from ansible_collections.jetson.specdec.plugins.module_utils.launch.compat import draft_mismatch
from ansible_collections.jetson.specdec.plugins.module_utils.launch.gates import check_runtime, serving_version
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_fields import settable_fields
from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import (
    ACCEPTANCE_FOR_HIGHER_K, K_RANGE, MAX_SPECULATIVE_CONCURRENCY, PLAN_METHODS, SKILL_LOW_CONCURRENCY, SMALL_ORIN_FAMILIES,
    SPECULATION_FAMILIES, UTILIZATION_DROP, UTILIZATION_MAX, UTILIZATION_MIN, speculative_utilization, start_k,
)

# Keys of the speculative config the role decides; vllm_server_speculative_extra must not
# set them (it would launch an unpublished head, or a k the rules never saw).
ROLE_OWNED_SPEC_KEYS = ("method", "model", "num_speculative_tokens", "draft_tensor_parallel_size",
                        "tensor_parallel_size")


def _refuse(refusals, rule, message):
    refusals.append({"rule": rule, "message": message})


def _check_family(inp, refusals, method):
    family = inp.get("family") or "unknown"
    if family in SPECULATION_FAMILIES:
        return
    if method == "eagle3":
        # Force lifts the family rule for a small draft, never for EAGLE-3: on Orin NX / Nano
        # target and head do not fit, and an unknown board or a Xavier has no measured headroom.
        _refuse(refusals, "family.no_eagle3_on_small_orin" if family in SMALL_ORIN_FAMILIES else
                "family.eagle3_needs_thor_or_agx_orin",
                "EAGLE-3 runs only on Thor and AGX Orin (this host's board family is %s), even with "
                "vllm_server_force_speculation: the head and the target run out of memory at startup on smaller "
                "boards. Fix: keep speculation off (vllm_server_speculation: false) or, with "
                "vllm_server_force_speculation, use a small draft_model or ngram." % family)
        return
    if not inp.get("force"):
        _refuse(refusals, "family.speculation_not_supported",
                "Speculative decoding is only enabled on Thor and AGX Orin; this host's board family is %s. "
                "Fix: set vllm_server_speculation: false for this group, or vllm_server_force_speculation: true "
                "if you have measured that it fits and helps." % family)


def _check_extra(inp, refusals):
    """vllm_server_speculative_extra may add the serving vLLM's SpeculativeConfig keys, never the ones the role
    decides (launch/spec_fields.py: one table per vLLM version, read from vLLM's source)."""
    extra = inp.get("spec_extra") or {}
    owned = sorted(key for key in extra if key in ROLE_OWNED_SPEC_KEYS) if isinstance(extra, dict) else []
    if owned:
        _refuse(refusals, "config.speculative_extra_owned_key",
                "vllm_server_speculative_extra sets %s, which the role decides from the rules and the catalog "
                "(an extra 'model' would launch a head nobody published). Fix: use vllm_server_speculative_method, "
                "vllm_server_speculative_model, vllm_server_num_speculative_tokens or "
                "vllm_server_draft_tensor_parallel_size instead." % ", ".join(owned))
        return False
    if not isinstance(extra, dict):
        return True
    version, source = serving_version(inp, [])
    fields, label = settable_fields(version)
    unknown = sorted(str(key) for key in extra if key not in fields)
    if unknown:
        _refuse(refusals, "config.speculative_extra_unknown_key",
                "vllm_server_speculative_extra sets %s, which %s's SpeculativeConfig (vLLM %s, from %s) does not "
                "accept from a launch; vLLM would refuse the start. Fix: remove the key, or use one of %s."
                % (", ".join(unknown), label, ".".join(str(p) for p in version) if version else "unknown", source,
                   ", ".join(sorted(fields - set(ROLE_OWNED_SPEC_KEYS)))))
        return False
    return True


def _check_draft(inp, refusals, warnings, draft):
    """An operator-named draft must share the target's vocabulary and tokenizer family."""
    problem, compared = draft_mismatch(inp.get("model"), draft, inp.get("catalog"), inp.get("model_configs"))
    if problem:
        _refuse(refusals, "draft.incompatible",
                "%s. Fix: name a draft from the target's family with the same vocabulary (the catalog lists them), "
                "or use method ngram." % problem)
        return False
    if not compared:
        warnings.append("The vocabulary of draft %s could not be compared with the target's (neither a local "
                        "config.json nor the catalog describes both); vLLM checks it at startup and a mismatch "
                        "sends the host straight back to the baseline." % draft)
    return True


def _choose(inp, refusals, warnings):
    """The speculative config dict (without k) from the method and the catalog, and why."""
    method = inp.get("method") or "auto"
    if not _check_extra(inp, refusals):
        return None, "role-owned key in vllm_server_speculative_extra"
    if method not in PLAN_METHODS:
        _refuse(refusals, "config.method", "vllm_server_speculative_method must be one of %s, got %r."
                % (", ".join(PLAN_METHODS), method))
        return None, "invalid method"
    if method == "ngram":
        cfg = {"method": "ngram"}
        cfg.update(inp.get("spec_extra") or {})
        return cfg, "ngram prompt lookup (no draft model)"
    family = inp.get("family")
    explicit = inp.get("spec_model")
    if explicit:
        heads = _catalog_heads(inp)
        if method == "eagle3" and explicit not in heads:
            _refuse(refusals, "catalog.unpublished_head",
                    "%s is not a published EAGLE-3 head for %s in vllm_server_model_catalog; never use an ad-hoc "
                    "head. Fix: add the published head to the catalog, or use method draft_model."
                    % (explicit, inp.get("model")))
            return None, "unpublished head"
        if explicit in heads:
            cfg = {"method": "eagle3", "model": explicit}
        elif method == "auto" and explicit not in _catalog_drafts(inp):
            # vLLM would load an EAGLE head given as draft_model as a draft and fail, or
            # guess the method from the name: method auto only picks what the catalog lists.
            _refuse(refusals, "catalog.uncatalogued_speculator",
                    "%s is neither a published EAGLE-3 head nor a draft model catalogued for %s, and "
                    "vllm_server_speculative_method is auto, so what it is would be a guess. Fix: set "
                    "vllm_server_speculative_method: draft_model for a same-family draft model, or add the published "
                    "head or the draft to vllm_server_model_catalog." % (explicit, inp.get("model")))
            return None, "uncatalogued speculator"
        else:
            if not _check_draft(inp, refusals, warnings, explicit):
                return None, "incompatible draft"
            cfg = {"method": "draft_model", "model": explicit}
        reason = "operator-selected %s" % explicit
    else:
        # The family rules are enforced by _check_family; here we only ask the catalog,
        # as an AGX Orin would, when the operator forced speculation on another board
        # (a draft model there: EAGLE-3 stays on Thor and AGX Orin).
        preferred = "draft_model" if method == "draft_model" or family not in SPECULATION_FAMILIES else "eagle3"
        try:
            selection = select_speculation(inp.get("catalog") or {}, inp.get("model"), preferred,
                                           family if family in SPECULATION_FAMILIES else "agx_orin")
        except ValueError as exc:
            _refuse(refusals, "catalog.invalid", "%s" % exc)
            return None, "invalid catalog"
        # Outside Thor and AGX Orin only a draft can run (EAGLE-3 is refused by the family rule, force or
        # not): the catalog's heads are not asked, so nothing here may say the target has none.
        draft_only = family not in SPECULATION_FAMILIES
        if not selection.get("method"):
            _refuse(refusals, "catalog.no_speculator", "No speculator for %s: %s. Fix: %s to "
                    "vllm_server_model_catalog, or keep speculation off."
                    % (inp.get("model"), selection.get("reason"),
                       "add a same-family draft (a forced %s runs a draft, never an EAGLE-3 head)" % family
                       if draft_only else "add a published head or a same-family draft"))
            return None, selection.get("reason")
        if method == "eagle3" and selection["method"] != "eagle3":
            if draft_only:
                # family.* already refused EAGLE-3 on this board and says why; a second refusal about the
                # catalog would be false (the head may well be published).
                return None, "EAGLE-3 is not run on %s" % family
            _refuse(refusals, "catalog.no_published_head",
                    "vllm_server_speculative_method is eagle3 but %s has no published EAGLE-3 head in the catalog. "
                    "Fix: use method auto or draft_model (catalogued same-family draft)." % inp.get("model"))
            return None, selection.get("reason")
        cfg = {"method": selection["method"], "model": selection["model"]}
        reason = selection.get("reason")
    if inp.get("draft_tensor_parallel_size"):
        cfg["draft_tensor_parallel_size"] = inp["draft_tensor_parallel_size"]
    cfg.update(inp.get("spec_extra") or {})
    return cfg, reason


def _catalog_heads(inp):
    entry = (inp.get("catalog") or {}).get(inp.get("model")) or {}
    return [head.get("model") for head in entry.get("eagle3_heads") or [] if isinstance(head, dict)]


def _catalog_drafts(inp):
    entry = (inp.get("catalog") or {}).get(inp.get("model")) or {}
    return [draft.get("model") for draft in entry.get("draft_models") or [] if isinstance(draft, dict)]


def _check_k(inp, refusals, warnings):
    """k from the variable or the board's start; above the start only with evidence (or tuning, or force)."""
    family = inp.get("family")
    start = start_k(family)
    k = inp.get("k") or start
    if isinstance(k, bool) or not isinstance(k, int) or not K_RANGE[0] <= k <= K_RANGE[1]:
        _refuse(refusals, "config.num_speculative_tokens",
                "vllm_server_num_speculative_tokens must be an integer from %d to %d, got %r."
                % (K_RANGE[0], K_RANGE[1], k))
        return None
    if k <= start:
        return k
    acceptance = inp.get("measured_acceptance")
    if isinstance(acceptance, str):  # a templated variable: "0.72", or "" / "None" for none
        try:
            acceptance = float(acceptance)
        except ValueError:
            acceptance = None
    measured = (isinstance(acceptance, (int, float)) and not isinstance(acceptance, bool)
                and 0.0 <= acceptance <= 1.0)
    if measured and acceptance > ACCEPTANCE_FOR_HIGHER_K:
        warnings.append("num_speculative_tokens %d is above the %s start %d; allowed by the measured acceptance "
                        "rate %.2f (> %s)." % (k, family, start, acceptance, ACCEPTANCE_FOR_HIGHER_K))
    elif inp.get("k_tuning") or inp.get("force"):
        warnings.append("num_speculative_tokens %d is above the %s start %d without a measured acceptance rate "
                        "above %s (%s is on)." % (k, family, start, ACCEPTANCE_FOR_HIGHER_K,
                                                  "k tuning" if inp.get("k_tuning") else "force"))
    else:
        _refuse(refusals, "config.k_above_start",
                "num_speculative_tokens %d is above the %s start %d, and higher k pays off only when the draft "
                "acceptance rate is above %s; %s. Fix: leave vllm_server_num_speculative_tokens at the start, let "
                "k tuning raise it on measured acceptance, or set vllm_server_force_speculation."
                % (k, family, start, ACCEPTANCE_FOR_HIGHER_K,
                   "the measured rate is %.2f" % acceptance if measured else "none was measured on this host"))
    return k


def plan_launch(inp):
    """Decide the launch (see the module docstring) and explain any refusal in one text."""
    result = _plan(inp)
    result["refusal_text"] = "\n".join("%s: %s" % (r["rule"], r["message"]) for r in result["refusals"])
    return result


def _plan(inp):
    """Never raises on bad input: refuses."""
    refusals, warnings = [], []
    speculation = bool(inp.get("speculation"))
    base_util = inp.get("gpu_memory_utilization")
    ceiling = inp.get("gpu_memory_utilization_max", UTILIZATION_MAX)
    if isinstance(base_util, bool) or not isinstance(base_util, (int, float)):
        _refuse(refusals, "config.gpu_memory_utilization",
                "vllm_server_gpu_memory_utilization must be a number between %.2f and %.2f, got %r."
                % (UTILIZATION_MIN, ceiling, base_util))
        base_util = None
    elif not UTILIZATION_MIN <= base_util <= ceiling:
        _refuse(refusals, "config.gpu_memory_utilization",
                "vllm_server_gpu_memory_utilization %.2f is outside %.2f..%.2f (the ceiling leaves %d%% of the "
                "board's memory outside vLLM: %.1f GiB on an 8 GB Orin Nano, %.1f GiB on a 64 GB AGX Orin; the ~2 GiB "
                "the rules keep free is checked against MemAvailable by the headroom check). Fix: choose a value in "
                "that range." % (base_util, UTILIZATION_MIN, ceiling, round((1 - ceiling) * 100), (1 - ceiling) * 7.4,
                                 (1 - ceiling) * 61.4))
    if not speculation:
        check_runtime(inp, refusals, warnings, False)
    result = {"speculation": speculation, "speculative_config": None, "gpu_memory_utilization": base_util,
              "refusals": refusals, "warnings": warnings, "selection_reason": "speculation is off"}
    if not speculation:
        return result
    method = inp.get("method") or "auto"
    _check_family(inp, refusals, method)
    concurrency = inp.get("expected_concurrency", 1)
    max_conc = inp.get("max_spec_concurrency", MAX_SPECULATIVE_CONCURRENCY)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        _refuse(refusals, "config.expected_concurrency",
                "vllm_server_expected_concurrency must be a positive integer, got %r." % (concurrency,))
    elif concurrency > max_conc:
        _refuse(refusals, "workload.concurrency",
                "Expected concurrency %d is above %d: speculation helps single-stream decode, and at >= 8 "
                "concurrent streams continuous batching wins while the draft only takes memory. Fix: keep "
                "speculation off for this service, or lower vllm_server_expected_concurrency if the workload "
                "really is low-concurrency." % (concurrency, max_conc))
    elif concurrency > SKILL_LOW_CONCURRENCY:
        warnings.append("Expected concurrency %d is above the skill's low-concurrency range (1-%d), where nothing "
                        "says speculation helps: jetson.specdec.rollout benchmarks at concurrency %d too and keeps it "
                        "only if it wins there by the concurrency-1 rule; a deploy without the rollout has no such "
                        "proof." % (concurrency, SKILL_LOW_CONCURRENCY, concurrency))
    if any(r["rule"].startswith("family.") for r in refusals):
        # The board family decides: the catalog, runtime and memory rules of a speculation this board does not run
        # would only add refusals that its fix makes moot. The baseline's own runtime checks still apply.
        check_runtime(inp, refusals, warnings, False)
        result["selection_reason"] = "speculation is not run on this board family"
        return result
    cfg, reason = _choose(inp, refusals, warnings)
    check_runtime(inp, refusals, warnings, True, (cfg or {}).get("method") or method)
    if cfg is not None:
        if cfg.get("method") == "eagle3" and method != "eagle3":
            _check_family(inp, refusals, "eagle3")
        k = _check_k(inp, refusals, warnings)
        if k is not None:
            cfg["num_speculative_tokens"] = k
    if base_util is not None:
        drop = inp.get("utilization_drop", UTILIZATION_DROP)
        spec_util = speculative_utilization(base_util, drop)
        if spec_util < UTILIZATION_MIN:
            _refuse(refusals, "memory.utilization_floor",
                    "With speculation the utilization drops by %.2f to %.2f, below %.2f. Fix: raise "
                    "vllm_server_gpu_memory_utilization or keep speculation off." % (drop, spec_util, UTILIZATION_MIN))
        result["gpu_memory_utilization"] = spec_util
    result.update(speculative_config=cfg, selection_reason=reason)
    return result
