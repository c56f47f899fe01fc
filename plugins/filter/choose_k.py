# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filters ``jetson.specdec.spec_choose_k``, ``spec_next_k`` and ``spec_keep_k``; documentation lives in their
sidecars (spec_choose_k.yml, spec_next_k.yml, spec_keep_k.yml)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.choose_k import ChooseKError
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.choose_k import choose_k as _choose_k
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.choose_k import keep_k as _keep_k
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.choose_k import next_k as _next_k


def spec_choose_k(candidate, baseline, k_measured, **params):
    """``candidate | jetson.specdec.spec_choose_k(baseline, k_measured, method=...)``."""
    try:
        return _choose_k(plain(candidate), plain(baseline), plain(k_measured), **plain(params))
    except ChooseKError as exc:
        # missing levels or counters are a playbook problem: fail the task with the fix
        raise AnsibleFilterError("spec_choose_k: %s" % exc)
    except TypeError as exc:
        raise AnsibleFilterError("spec_choose_k: unknown or missing option (%s); options are method, "
                                 "concurrency, tie_tolerance and others" % exc)


def spec_keep_k(rounds, baseline, start_k, **params):
    """``[{k, result}, ...] | jetson.specdec.spec_keep_k(baseline, start_k, predicted_k=..., method=...)``."""
    try:
        return _keep_k(plain(rounds), plain(baseline), plain(start_k), **plain(params))
    except ChooseKError as exc:
        raise AnsibleFilterError("spec_keep_k: %s" % exc)
    except TypeError as exc:
        raise AnsibleFilterError("spec_keep_k: unknown or missing option (%s); options are predicted_k, method, "
                                 "noise, concurrency and tie_tolerance" % exc)


def spec_next_k(rounds, baseline, start_k, **params):
    """``[{k, result}, ...] | jetson.specdec.spec_next_k(baseline, start_k, method=...)``."""
    try:
        return _next_k(plain(rounds), plain(baseline), plain(start_k), **plain(params))
    except ChooseKError as exc:
        raise AnsibleFilterError("spec_next_k: %s" % exc)
    except TypeError as exc:
        raise AnsibleFilterError("spec_next_k: unknown or missing option (%s); options are method, noise, "
                                 "concurrency, max_rounds and margin" % exc)


class FilterModule(object):
    """jetson.specdec k-tuning filter."""

    def filters(self):
        return {"spec_choose_k": spec_choose_k, "spec_next_k": spec_next_k, "spec_keep_k": spec_keep_k}
