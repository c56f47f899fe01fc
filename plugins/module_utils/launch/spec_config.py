# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Validate and render vLLM ``--speculative-config`` values and model references.

Standard library only (this file also runs on the Jetson), Python 3.8+.

Why a validator of our own: vLLM reports a bad speculative config only when the
server starts, after minutes of model loading, and a free-form string would let
a typo or a shell/systemd metacharacter reach the unit file.  Here the config is
always a mapping, every key is checked, and model references follow a strict
pattern so nothing in them can be read by systemd as a specifier (``%``), an
environment variable (``$``), a quote or a separator.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import math
import re

from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import K_RANGE, START_K
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_fields import ANY_VERSION_FIELDS, ENGINE_FIELDS
from ansible_collections.jetson.specdec.plugins.module_utils.launch.batch_schedule import (
    SCHEDULE_KEY, ScheduleError, validate_schedule)

try:  # Python 3.3+; plain dict keeps insertion order only from 3.7, so be explicit.
    from collections import OrderedDict
except ImportError:  # pragma: no cover
    OrderedDict = dict


class SpecConfigError(ValueError):
    """A speculative config or model reference broke a rule."""


# The subset of vLLM's ``SpeculativeMethod`` literal (vllm/config/speculative.py)
# that this collection supports.  Left out on purpose: ``custom_class`` (imports
# arbitrary Python), ``extract_hidden_states``/``dflash``/``ngram_gpu``/``dspark``
# (newer than the vLLM 0.20 runtimes Jetson images ship) and the deprecated
# per-model ``*_mtp`` names (vLLM replaces them with ``mtp``).
SUPPORTED_METHODS = (
    "ngram", "draft_model", "eagle", "eagle3", "medusa", "mlp_speculator", "mtp", "suffix",
)
# ngram and suffix decoding draft from the prompt/generated text, not from a model.
METHODS_WITHOUT_MODEL = ("ngram", "suffix")
# MTP drafts with the target's own MTP layers when no model is given (vLLM sets
# ``model`` to the target), so ``model`` is optional there.
METHODS_MODEL_OPTIONAL = ("mtp",)

# Stable documented key order of the rendered JSON; the remaining keys follow sorted.
KEY_ORDER = ("method", "model", "num_speculative_tokens", "draft_tensor_parallel_size")

NUM_SPECULATIVE_TOKENS_RANGE = K_RANGE
DRAFT_TP_RANGE = (1, 8)

MODEL_REF_RULE = (
    "a model reference must be a Hugging Face repo id 'owner/name' "
    "(each part starts with a letter or digit, then letters, digits, '.', '_' or '-') "
    "or an absolute path made of letters, digits, '.', '_', '/' and '-' without '..' segments"
)
SERVED_NAME_RULE = (
    "a served model name must be 'name' or 'owner/name' made of letters, digits, '.', '_' and '-', "
    "starting with a letter or digit"
)

_HF_PART = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_HF_REPO_RE = re.compile(r"\A" + _HF_PART + "/" + _HF_PART + r"\Z")
_ABS_PATH_RE = re.compile(r"\A/[A-Za-z0-9._/-]+\Z")
_SERVED_NAME_RE = re.compile(r"\A" + _HF_PART + "(?:/" + _HF_PART + r")?\Z")
_QUANT_RE = re.compile(r"\A[a-z0-9][a-z0-9_-]{0,63}\Z")
_REVISION_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._/-]{0,127}\Z")
_EXTRA_KEY_RE = re.compile(r"\A[a-z][a-z0-9_]{0,63}\Z")
_EXTRA_STR_RE = re.compile(r"\A[A-Za-z0-9._:/+-]{0,256}\Z")
_MAX_REF_LEN = 256

# Characters named in error messages so the user sees *why* a value is refused.
_NAMED_BAD_CHARS = (
    (";", "a ';'"), ("$", "a '$'"), ("`", "a backtick"), ('"', "a double quote"),
    ("'", "a single quote"), (" ", "a space"), ("\t", "a tab"), ("\n", "a newline"),
    ("\r", "a carriage return"), ("%", "a '%'"), ("\\", "a backslash"),
)


def _describe_bad_char(value):
    for char, name in _NAMED_BAD_CHARS:
        if char in value:
            return name
    for char in value:
        if not (char.isalnum() and ord(char) < 128) and char not in "._/-":
            return "the character %r" % (char,)
    return None


def _is_int(value):
    # bool is a subclass of int in Python: "true" must not pass as 1.
    return isinstance(value, int) and not isinstance(value, bool)


def _check_int(key, value, low, high=None):
    if not _is_int(value):
        raise SpecConfigError(
            "speculative_config.%s must be an integer, got %s %r" % (key, type(value).__name__, value))
    if value < low or (high is not None and value > high):
        bounds = ">= %d" % low if high is None else "between %d and %d" % (low, high)
        raise SpecConfigError("speculative_config.%s must be %s, got %d" % (key, bounds, value))
    return value


def validate_model_ref(ref, what="model"):
    """Return ``ref`` if it is a safe HF repo id or absolute path, else raise SpecConfigError."""
    if not isinstance(ref, str):
        raise SpecConfigError("%s must be a string, got %s; %s" % (what, type(ref).__name__, MODEL_REF_RULE))
    if not ref:
        raise SpecConfigError("%s is empty; %s" % (what, MODEL_REF_RULE))
    if len(ref) > _MAX_REF_LEN:
        raise SpecConfigError("%s is longer than %d characters; %s" % (what, _MAX_REF_LEN, MODEL_REF_RULE))
    if ref.startswith("/"):
        if _ABS_PATH_RE.match(ref):
            if ".." in ref.split("/"):
                raise SpecConfigError("%s %r has a '..' segment; %s" % (what, ref, MODEL_REF_RULE))
            return ref
    elif _HF_REPO_RE.match(ref):
        return ref
    bad = _describe_bad_char(ref)
    if bad:
        raise SpecConfigError("%s %r contains %s; %s" % (what, ref, bad, MODEL_REF_RULE))
    raise SpecConfigError("%s %r is neither 'owner/name' nor an absolute path; %s" % (what, ref, MODEL_REF_RULE))


def validate_served_name(name):
    """Return ``name`` if it is a safe ``--served-model-name``, else raise SpecConfigError."""
    if not isinstance(name, str) or not _SERVED_NAME_RE.match(name) or len(name) > _MAX_REF_LEN:
        detail = _describe_bad_char(name) if isinstance(name, str) else None
        suffix = " (it contains %s)" % detail if detail else ""
        raise SpecConfigError("served model name %r is refused%s; %s" % (name, suffix, SERVED_NAME_RULE))
    return name


def _validate_extra(extra, known):
    if extra is None:
        return OrderedDict()
    if not isinstance(extra, dict):
        raise SpecConfigError("extra must be a mapping of additional speculative_config keys, got %s"
                              % type(extra).__name__)
    out = OrderedDict()
    for key in sorted(extra):
        value = extra[key]
        if not isinstance(key, str) or not _EXTRA_KEY_RE.match(key):
            raise SpecConfigError("extra key %r must be lower_snake_case (e.g. disable_padded_drafter_batch)" % (key,))
        if key in known or key == "tensor_parallel_size":
            raise SpecConfigError("extra key %r is a regular speculative_config key; set it there instead" % key)
        if key == SCHEDULE_KEY:
            # the one list a SpeculativeConfig takes from a launch: vLLM's batch-size schedule, checked by vLLM's rules
            try:
                out[key] = validate_schedule(value)
            except ScheduleError as exc:
                raise SpecConfigError("extra.%s: %s" % (key, exc))
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise SpecConfigError("extra.%s must be a finite number, got %r" % (key, value))
        if isinstance(value, str):
            if not _EXTRA_STR_RE.match(value):
                raise SpecConfigError(
                    "extra.%s=%r: string values may only contain letters, digits and . _ : / + -" % (key, value))
        elif not isinstance(value, (bool, int, float)):
            raise SpecConfigError(
                "extra.%s must be a scalar JSON value (string, number or boolean), got %s"
                % (key, type(value).__name__))
        out[key] = value
    return out


def validate_spec_config(cfg, extra=None):
    """Validate a speculative config mapping; return a normalised copy (extras merged in).

    ``cfg`` must be a mapping with the keys documented in docs/catalog.md; ``extra``
    is an optional mapping of additional vLLM keys the caller explicitly allows.
    """
    if isinstance(cfg, str):
        raise SpecConfigError(
            "speculative_config must be a mapping, not a string: set the structured variable "
            "(e.g. {method: eagle3, model: owner/head, num_speculative_tokens: 3}) and let "
            "the collection render the JSON")
    if not isinstance(cfg, dict):
        raise SpecConfigError("speculative_config must be a mapping, got %s" % type(cfg).__name__)
    if "tensor_parallel_size" in cfg:
        # Same wording as vLLM's own error (vllm/config/speculative.py).
        raise SpecConfigError(
            "'tensor_parallel_size' is not a valid argument in the speculative_config. "
            "Please pass 'draft_tensor_parallel_size' instead.")
    known = ("method", "model", "num_speculative_tokens", "draft_tensor_parallel_size",
             "prompt_lookup_max", "prompt_lookup_min", "max_model_len", "quantization",
             "revision", "enforce_eager")
    # Other keys are vLLM's own SpeculativeConfig fields (vllm_server_speculative_extra; the launch plan
    # checks them against the serving version's table): scalar values, validated like ``extra``.
    passed = dict((k, cfg[k]) for k in cfg if k not in known)
    unknown = sorted(str(k) for k in passed if k not in ANY_VERSION_FIELDS or k in ENGINE_FIELDS)
    if unknown:
        raise SpecConfigError(
            "speculative_config has key(s) %s that no vLLM SpeculativeConfig this collection knows accepts from a "
            "launch; the keys are %s and vLLM's other fields: %s"
            % (", ".join(unknown), ", ".join(known), ", ".join(sorted(ANY_VERSION_FIELDS - ENGINE_FIELDS - set(known)))))
    if passed:
        extra = dict(passed, **(extra or {}))

    method = cfg.get("method")
    if method not in SUPPORTED_METHODS:
        raise SpecConfigError("speculative_config.method must be one of %s, got %r"
                              % (", ".join(SUPPORTED_METHODS), method))
    out = OrderedDict([("method", method)])

    model = cfg.get("model")
    if method in METHODS_WITHOUT_MODEL:
        if model is not None:
            raise SpecConfigError("speculative_config.model must not be set for method %s: it drafts "
                                  "from text, not from a model; remove 'model'" % method)
    elif model is None:
        if method not in METHODS_MODEL_OPTIONAL:
            raise SpecConfigError("speculative_config.model is required for method %s (the draft model "
                                  "or EAGLE head repo id)" % method)
    else:
        out["model"] = validate_model_ref(model, "speculative_config.model")

    if "num_speculative_tokens" not in cfg:
        raise SpecConfigError("speculative_config.num_speculative_tokens is required (start at %d on "
                              "Thor, %d on AGX Orin)" % (START_K["thor"], START_K["agx_orin"]))
    out["num_speculative_tokens"] = _check_int(
        "num_speculative_tokens", cfg["num_speculative_tokens"], *NUM_SPECULATIVE_TOKENS_RANGE)
    if cfg.get("draft_tensor_parallel_size") is not None:
        out["draft_tensor_parallel_size"] = _check_int(
            "draft_tensor_parallel_size", cfg["draft_tensor_parallel_size"], *DRAFT_TP_RANGE)

    lookup = [k for k in ("prompt_lookup_max", "prompt_lookup_min") if cfg.get(k) is not None]
    if lookup and method != "ngram":
        raise SpecConfigError("speculative_config.%s only applies to method ngram (method is %s)"
                              % (lookup[0], method))
    for key in lookup:
        out[key] = _check_int(key, cfg[key], 1)
    if len(lookup) == 2 and out["prompt_lookup_min"] > out["prompt_lookup_max"]:
        raise SpecConfigError("prompt_lookup_min=%d must be <= prompt_lookup_max=%d"
                              % (out["prompt_lookup_min"], out["prompt_lookup_max"]))

    if cfg.get("max_model_len") is not None:
        out["max_model_len"] = _check_int("max_model_len", cfg["max_model_len"], 1)
    if cfg.get("quantization") is not None:
        quant = cfg["quantization"]
        if not isinstance(quant, str) or not _QUANT_RE.match(quant):
            raise SpecConfigError("speculative_config.quantization %r must be a vLLM quantization name "
                                  "(lowercase letters, digits, '_' or '-', e.g. fp8, awq)" % (quant,))
        out["quantization"] = quant
    if cfg.get("revision") is not None:
        rev = cfg["revision"]
        if not isinstance(rev, str) or not _REVISION_RE.match(rev) or ".." in rev:
            raise SpecConfigError("speculative_config.revision %r must be a branch, tag or commit "
                                  "(letters, digits, '.', '_', '/', '-'; no '..')" % (rev,))
        out["revision"] = rev
    if cfg.get("enforce_eager") is not None:
        if not isinstance(cfg["enforce_eager"], bool):
            raise SpecConfigError("speculative_config.enforce_eager must be a boolean, got %r"
                                  % (cfg["enforce_eager"],))
        out["enforce_eager"] = cfg["enforce_eager"]

    for key, value in _validate_extra(extra, known).items():
        out[key] = value
    return out


def render_spec_config_json(cfg, extra=None):
    """Validate ``cfg`` and return compact JSON with keys in KEY_ORDER, then the rest sorted."""
    valid = validate_spec_config(cfg, extra)
    ordered = OrderedDict((k, valid[k]) for k in KEY_ORDER if k in valid)
    for key in sorted(k for k in valid if k not in KEY_ORDER):
        ordered[key] = valid[key]
    # ensure_ascii keeps the unit file pure ASCII; allow_nan=False because JSON has no NaN.
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
