# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filter ``jetson.specdec.spec_verdict``; documentation lives in spec_verdict.yml (sidecar)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.rule import spec_verdict as _spec_verdict


def spec_verdict(baseline, candidate, **params):
    """``baseline | jetson.specdec.spec_verdict(candidate, noise_cv=..., final=...)``."""
    try:
        return _spec_verdict(baseline, candidate, **params)
    except ValueError as exc:
        # bad thresholds are a playbook bug: fail the task with the rule and the fix
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    """jetson.specdec verdict filters."""

    def filters(self):
        return {"spec_verdict": spec_verdict}
