# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The speculative-decoding policy: every number and family the Jetson rules use, once.

Standard library only, Python 3.8+.  The launch rules, the catalog, the memory
check, the speculative-config validator, the verdict and the modules import these
names instead of writing the numbers again; a unit test checks that the role
defaults and argument_specs agree with them.  docs/catalog.md and docs/verdict.md
say where each number comes from (NVIDIA's jetson-speculative-decoding skill).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

# --- board families -------------------------------------------------------------------------------
# As ansible_facts.jetson.family reports them (module_utils/jetson/boards.py).
# Speculation is enabled on these: they have the memory for a target plus a draft.
SPECULATION_FAMILIES = ("thor", "agx_orin")
# Orin NX / Nano rarely hold a target plus a draft: speculation only when forced, and
# EAGLE-3 never (target and head OOM at startup).
SMALL_ORIN_FAMILIES = ("orin_nx", "orin_nano")
ORIN_FAMILIES = ("agx_orin",) + SMALL_ORIN_FAMILIES
# detect_jetson.sh spells the families differently; accepted as aliases.
FAMILY_ALIASES = {"thor-agx": "thor", "orin-agx": "agx_orin", "orin-nx": "orin_nx", "orin-nano": "orin_nano"}

# --- runtime --------------------------------------------------------------------------------------
# The current --speculative-config shape needs vLLM 0.20+.
MIN_SPECULATIVE_VLLM = (0, 20)
# L4T r39 (JetPack 7.2) is the line for two rules: Orin below it serves speculation with
# the NVIDIA-AI-IOT Orin image (upstream vLLM 0.20+ from r39 on), and below it memory can
# look stuck after a vLLM container exits (the page-cache remedy).
L4T_MODERN_MAJOR = 39

# --- speculative config ---------------------------------------------------------------------------
# Methods the launch plan chooses from ("auto": the catalog decides).
PLAN_METHODS = ("auto", "eagle3", "draft_model", "ngram")
# Starting num_speculative_tokens per family.  The skill's rule is one number per family
# ("start at 5 on Thor, 3 on AGX Orin"), so it is the same for EAGLE-3 and draft_model:
# the 4 in the skill's draft_model template is an unboarded example (it would also
# contradict the rule's 3 on AGX Orin).  docs/catalog.md records the decision.
START_K = {"thor": 5, "agx_orin": 3}
# A forced board outside SPECULATION_FAMILIES starts where the smaller supported board does.
FORCED_START_K = 3
K_RANGE = (1, 10)
# Raise k above the start only when the measured draft acceptance rate is above this.
ACCEPTANCE_FOR_HIGHER_K = 0.6

# --- memory ---------------------------------------------------------------------------------------
# Speculation lowers --gpu-memory-utilization by this much against the baseline.
UTILIZATION_DROP = 0.05
# jetson-inference-mem-tune clamps to [0.30, 0.90]; 0.95 is accepted for boards the
# operator measured; outside the range vLLM has no KV room or the OS starves.
UTILIZATION_MIN = 0.30
UTILIZATION_MAX = 0.95
UTILIZATION_CEILING = 0.90
# "Free at least ~2 GB" outside vLLM.
MEMORY_RESERVE_BYTES = 2 * 1024 ** 3

# --- workload -------------------------------------------------------------------------------------
# Speculation helps single-stream decode. The skill's low-concurrency range ends at 2; at 8 and
# above continuous batching wins, so speculation is refused there. Between the two the skill is
# silent: the collection allows it with a warning, and the rollout measures at the operator's
# expected concurrency and judges there with the concurrency-1 rule (docs/verdict.md).
SKILL_LOW_CONCURRENCY = 2
MAX_SPECULATIVE_CONCURRENCY = 7
# The verdict compares at these levels: speculation must win at 1 and not lose at 8,
# where continuous batching keeps the GPU busy.
LOW_CONCURRENCY = 1
HIGH_CONCURRENCY = 8

# --- verdict --------------------------------------------------------------------------------------
# Keep at >= 30 % more throughput and >= 20 % lower TPOT p50 at low concurrency; revert
# under 10 % gain (or a high-concurrency regression).
KEEP_THROUGHPUT_GAIN = 0.30
KEEP_TPOT_DROP = 0.20
REVERT_THROUGHPUT_GAIN = 0.10


def normalize_family(family):
    """The jetson_facts family name for ``family`` (detect_jetson.sh spellings mapped)."""
    return FAMILY_ALIASES.get(family, family)


def speculation_supported(family):
    """True on the families where speculation is on without a force."""
    return normalize_family(family) in SPECULATION_FAMILIES


def eagle3_forbidden(family):
    """True on the small Orins, where EAGLE-3 never fits."""
    return normalize_family(family) in SMALL_ORIN_FAMILIES


def start_k(family):
    """Starting num_speculative_tokens for ``family``, whatever the method (see START_K)."""
    return START_K.get(normalize_family(family), FORCED_START_K)


def before_modern_l4t(l4t_major):
    """True when an L4T major version is known and older than r39."""
    return isinstance(l4t_major, int) and not isinstance(l4t_major, bool) and l4t_major < L4T_MODERN_MAJOR


def speculative_utilization(baseline, drop=UTILIZATION_DROP):
    """The utilization a speculative launch uses, rounded like the flag is written."""
    return round(baseline - drop, 2)
