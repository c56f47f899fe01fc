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
  an explicit force, and never EAGLE-3 there (OOM at startup);
- runtime: vLLM >= 0.20 for the current --speculative-config shape on Thor and on
  Orin with L4T >= 39; older Orin uses the NVIDIA-AI-IOT Orin image; that image
  never runs on Thor;
- concurrency: speculation helps at low concurrency only (<= 2); batching wins at 8;
- k: 5 on Thor, 3 on AGX Orin, for EAGLE-3 and draft models alike; more only when
  acceptance > 0.6 (advisory);
- gpu_memory_utilization: lowered by 0.05 whenever speculation is on;
- heads: EAGLE-3 only where the catalog lists a published head, else a catalogued
  same-family draft model, else off.

The numbers and families live in launch/policy.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.jetson.specdec.plugins.module_utils.launch.catalog import select_speculation
from ansible_collections.jetson.specdec.plugins.module_utils.launch.policy import (
    ACCEPTANCE_FOR_HIGHER_K, K_RANGE, MAX_SPECULATIVE_CONCURRENCY, MIN_SPECULATIVE_VLLM, ORIN_FAMILIES,
    PLAN_METHODS, SMALL_ORIN_FAMILIES, SPECULATION_FAMILIES, START_K, UTILIZATION_DROP, UTILIZATION_MAX,
    UTILIZATION_MIN, before_modern_l4t, speculative_utilization, start_k,
)


def parse_version(text):
    """(major, minor, patch) from '0.20.1', 'v0.20.1', '0.11.0+jetson'; None when unknown."""
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", str(text or ""))
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def is_orin_image(image):
    """NVIDIA-AI-IOT's Jetson Orin vLLM images (e.g. .../nvidia-ai-iot/vllm:latest-jetson-orin)."""
    image = (image or "").lower()
    return "nvidia-ai-iot" in image and "orin" in image


def image_vllm_version(image):
    """The vLLM version an image tag states (vllm/vllm-openai:v0.20.1), or None."""
    tag = (image or "").split("@")[0].rsplit(":", 1)
    if len(tag) != 2 or "/" in tag[1]:
        return None
    return parse_version(tag[1]) if re.match(r"^v?\d+\.\d+", tag[1]) else None


def _runtime_version(inp, warnings):
    """The vLLM version that will serve: operator override, image tag, or installed CLI."""
    if inp.get("vllm_version"):
        return parse_version(inp["vllm_version"])
    if inp.get("runtime") == "container":
        version = image_vllm_version(inp.get("image"))
        if version is None and (inp.get("image") or "").endswith(":latest"):
            warnings.append("The image %s is a moving tag; pin a digest or set vllm_server_vllm_version so "
                            "the version rule is checked against what really runs." % inp.get("image"))
        return version
    return parse_version(inp.get("installed_vllm_version"))


def _refuse(refusals, rule, message):
    refusals.append({"rule": rule, "message": message})


def _check_runtime(inp, refusals, warnings, speculation):
    family = inp.get("family")
    l4t_major = inp.get("l4t_major")
    image = inp.get("image") if inp.get("runtime") == "container" else None
    if family == "thor" and is_orin_image(image):
        _refuse(refusals, "runtime.orin_image_on_thor",
                "The NVIDIA-AI-IOT Orin image %s must never run on Thor. Fix: use upstream vLLM >= 0.20 "
                "(vllm/vllm-openai) or a validated native vLLM >= 0.20 on Thor." % image)
    if not speculation:
        return
    old_orin = family in ORIN_FAMILIES and before_modern_l4t(l4t_major)
    if old_orin:
        if not is_orin_image(image):
            _refuse(refusals, "runtime.old_orin_needs_orin_image",
                    "Orin on L4T r%s (< r39) serves speculative decoding with the NVIDIA-AI-IOT Orin vLLM image. "
                    "Fix: vllm_server_runtime: container with vllm_server_container_image set to the JetPack-matched "
                    "NVIDIA-AI-IOT image, or upgrade the board to JetPack 7.2 / L4T r39+." % l4t_major)
        return
    version = _runtime_version(inp, warnings)
    if version is None:
        _refuse(refusals, "runtime.vllm_version_unknown",
                "The vLLM version on this host is unknown, so the --speculative-config shape cannot be checked "
                "(vLLM >= 0.20 is required on %s). Fix: set vllm_server_vllm_version, or pin an image tag "
                "with a version." % (family or "this board"))
    elif version[:2] < MIN_SPECULATIVE_VLLM:
        _refuse(refusals, "runtime.vllm_too_old",
                "vLLM %s is older than 0.20, which the current --speculative-config shape needs on %s. "
                "Fix: upgrade to vLLM >= 0.20 (upstream image or native)." % (".".join(map(str, version)), family))


def _check_family(inp, refusals, method):
    family = inp.get("family") or "unknown"
    if family in SPECULATION_FAMILIES:
        return
    if family in SMALL_ORIN_FAMILIES and method == "eagle3":
        _refuse(refusals, "family.no_eagle3_on_small_orin",
                "EAGLE-3 is never used on %s: target and head do not fit and vLLM runs out of memory at startup. "
                "Fix: keep speculation off (vllm_server_speculation: false) or, with vllm_server_force_speculation, "
                "use a small draft_model or ngram." % family)
        return
    if not inp.get("force"):
        _refuse(refusals, "family.speculation_not_supported",
                "Speculative decoding is only enabled on Thor and AGX Orin; this host's board family is %s. "
                "Fix: set vllm_server_speculation: false for this group, or vllm_server_force_speculation: true "
                "if you have measured that it fits and helps." % family)


def _choose(inp, refusals):
    """The speculative config dict (without k) from the method and the catalog, and why."""
    method = inp.get("method") or "auto"
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
        cfg = {"method": "eagle3" if explicit in heads else "draft_model", "model": explicit}
        reason = "operator-selected %s" % explicit
    else:
        # The family rules are enforced by _check_family; here we only ask the catalog,
        # as an AGX Orin would, when the operator forced speculation on another board.
        preferred = "draft_model" if method == "draft_model" or family in SMALL_ORIN_FAMILIES else "eagle3"
        try:
            selection = select_speculation(inp.get("catalog") or {}, inp.get("model"), preferred,
                                           family if family in SPECULATION_FAMILIES else "agx_orin")
        except ValueError as exc:
            _refuse(refusals, "catalog.invalid", "%s" % exc)
            return None, "invalid catalog"
        if not selection.get("method"):
            _refuse(refusals, "catalog.no_speculator", "No speculator for %s: %s. Fix: add a published head or a "
                    "same-family draft to vllm_server_model_catalog, or keep speculation off."
                    % (inp.get("model"), selection.get("reason")))
            return None, selection.get("reason")
        if method == "eagle3" and selection["method"] != "eagle3":
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
                "vllm_server_gpu_memory_utilization %.2f is outside %.2f..%.2f (this board's ceiling keeps ~2 GiB "
                "outside vLLM). Fix: choose a value in that range." % (base_util, UTILIZATION_MIN, ceiling))
    _check_runtime(inp, refusals, warnings, speculation)
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
    cfg, reason = _choose(inp, refusals)
    if cfg is not None:
        if cfg.get("method") == "eagle3":
            _check_family(inp, refusals, "eagle3")
        k = inp.get("k") or start_k(inp.get("family"))
        if isinstance(k, bool) or not isinstance(k, int) or not K_RANGE[0] <= k <= K_RANGE[1]:
            _refuse(refusals, "config.num_speculative_tokens",
                    "vllm_server_num_speculative_tokens must be an integer from %d to %d, got %r."
                    % (K_RANGE[0], K_RANGE[1], k))
        else:
            default_k = START_K.get(inp.get("family"))
            if default_k and k > default_k:
                warnings.append("num_speculative_tokens %d is above the %s starting point %d; raise k only "
                                "when the measured acceptance rate is above %s."
                                % (k, inp.get("family"), default_k, ACCEPTANCE_FOR_HIGHER_K))
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

