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


def _run(name, options, function, *args, **params):
    """``function`` on plain copies of the filter's input and options; its ChooseKError (missing levels or counters,
    a playbook problem) or a wrong option fails the task with the fix."""
    try:
        return function(*[plain(arg) for arg in args], **plain(params))
    except ChooseKError as exc:
        raise AnsibleFilterError("%s: %s" % (name, exc))
    except TypeError as exc:
        raise AnsibleFilterError("%s: unknown or missing option (%s); options are %s" % (name, exc, options))


def spec_choose_k(candidate, baseline, k_measured, **params):
    """``candidate | jetson.specdec.spec_choose_k(baseline, k_measured, method=...)``."""
    return _run("spec_choose_k", "method, concurrency, tie_tolerance and others", _choose_k,
                candidate, baseline, k_measured, **params)


def spec_keep_k(rounds, baseline, start_k, **params):
    """``[{k, result}, ...] | jetson.specdec.spec_keep_k(baseline, start_k, predicted_k=..., method=...)``."""
    return _run("spec_keep_k", "predicted_k, method, noise, concurrency and tie_tolerance", _keep_k,
                rounds, baseline, start_k, **params)


def spec_next_k(rounds, baseline, start_k, **params):
    """``[{k, result}, ...] | jetson.specdec.spec_next_k(baseline, start_k, method=...)``."""
    return _run("spec_next_k", "method, noise, concurrency, max_rounds and margin", _next_k,
                rounds, baseline, start_k, **params)


class FilterModule(object):
    """jetson.specdec k-tuning filter."""

    def filters(self):
        return {"spec_choose_k": spec_choose_k, "spec_next_k": spec_next_k, "spec_keep_k": spec_keep_k}
