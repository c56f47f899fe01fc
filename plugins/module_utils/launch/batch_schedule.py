# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""vLLM's batch-size schedule of speculation (``num_speculative_tokens_per_batch_size``), pure stdlib.

vLLM 0.32's ``SpeculativeConfig`` takes a list of ``(range_start, range_end, k)`` entries, inclusive
batch-size ranges (the number of requests a step schedules): k drafts at the batch sizes of a range, none
where k is 0. ``num_speculative_tokens`` stays the start-up maximum (every k is clamped to it). The rules and
the error texts below are vLLM's own (``validate_and_normalize_dynamic_sd_schedule`` in
``vllm/v1/spec_decode/dynamic/utils.py``, 0.32): vLLM checks them when the engine core starts, minutes
into a start; the collection checks them before anything changes.

The third arm of the rollout (docs/verdict.md) is one such schedule: k up to a threshold, 0 above it.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_fields import speculative_fields

SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"

# Methods whose proposer asserts k == num_speculative_tokens: vLLM 0.32 crashes on any smaller k
# (ngram_gpu, suffix, medusa, extract_hidden_states; vLLM PR #46399 proposes disabling the schedule for them).
FIXED_K_METHODS = ("ngram_gpu", "suffix", "medusa", "extract_hidden_states")


class ScheduleError(ValueError):
    """A schedule vLLM would refuse (its own message)."""


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def validate_schedule(value):
    """The schedule as vLLM normalises it (entries as [start, end, k], sorted by start), or ScheduleError
    with vLLM's message."""
    if value is None:
        raise ScheduleError("num_speculative_tokens_per_batch_size is required for dynamic speculative decoding.")
    if not isinstance(value, (list, tuple)):
        raise ScheduleError("num_speculative_tokens_per_batch_size must be a non-empty list of (range_start, "
                            "range_end, num_speculative_tokens) entries.")
    if not value:
        raise ScheduleError("num_speculative_tokens_per_batch_size must not be empty.")
    entries = []
    for entry in value:
        if not isinstance(entry, (list, tuple)) or len(entry) != 3 or not all(_is_int(v) for v in entry):
            raise ScheduleError("Each num_speculative_tokens_per_batch_size entry must be a 3-item sequence: "
                                "(range_start, range_end, num_speculative_tokens).")
        start, end, k = entry
        if start <= 0 or end <= 0:
            raise ScheduleError("Batch-size range (%d, %d) must be positive." % (start, end))
        if start > end:
            raise ScheduleError("Batch-size range start must be <= end for (%d, %d, %d)." % (start, end, k))
        if k < 0:
            raise ScheduleError("num_speculative_tokens_per_batch_size values must be >= 0.")
        entries.append([start, end, k])
    entries.sort(key=lambda e: e[0])
    for before, after in zip(entries, entries[1:]):
        if after[0] <= before[1]:
            raise ScheduleError("Batch-size ranges must be non-overlapping and sorted.")
    if entries[0][0] != 1:
        raise ScheduleError("The first batch-size range must start at 1 so every runtime batch size has a "
                            "defined schedule.")
    return entries


def k_at(schedule, batch_size, max_k):
    """The k vLLM drafts at ``batch_size`` (its dense lookup: gaps take the previous k, sizes after the last
    range its k, every k clamped to the start-up maximum ``max_k``)."""
    k = None
    for start, end, value in validate_schedule(schedule):
        if start <= batch_size:
            k = value
    return min(int(max_k), k if k is not None else int(max_k))


def build_schedule(threshold, k, max_batch):
    """Speculate with ``k`` at batch sizes 1..threshold, not at all (k = 0) from threshold + 1 to
    ``max_batch`` (vllm_server_max_num_seqs; a larger batch cannot run)."""
    if not _is_int(threshold) or threshold < 1:
        raise ScheduleError("schedule.threshold: the threshold must be a batch size of at least 1, got %r"
                            % (threshold,))
    if not _is_int(k) or k < 1:
        raise ScheduleError("schedule.k: the schedule's k must be at least 1 (vLLM needs num_speculative_tokens "
                            "> 0 even when every entry is 0), got %r" % (k,))
    max_batch = max(int(max_batch or 0), threshold + 1)
    return validate_schedule([[1, threshold, k], [threshold + 1, max_batch, 0]])


def supports_schedule(version, method):
    """None when the serving vLLM can run a batch-size schedule for ``method``, else why not (rule id first).

    ``version``: (major, minor, patch) or None (unknown)."""
    if not version:
        return ("schedule.vllm_unknown: the serving vLLM's version is unknown, so whether its SpeculativeConfig "
                "has %s cannot be checked. Fix: pin vllm_server_vllm_version or a versioned image" % SCHEDULE_KEY)
    fields, label = speculative_fields(version)
    if SCHEDULE_KEY not in fields:
        return ("schedule.vllm_too_old: vLLM %s (%s) has no %s (it came with vLLM 0.32). Fix: upgrade vLLM to "
                "0.32 or newer" % (".".join(str(p) for p in version), label, SCHEDULE_KEY))
    if method in FIXED_K_METHODS:
        return ("schedule.method_fixed_k: vLLM's %s proposer needs k to stay at num_speculative_tokens, so a "
                "schedule with k = 0 would crash it" % method)
    return None


def describe(threshold):
    """The sentence the record and the report say about a schedule with this threshold."""
    return ("speculates up to batch %d; above that it runs the baseline's path" % threshold)
