# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filter ``jetson.specdec.spec_decide``; documentation lives in spec_decide.yml (sidecar)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import spec_decide as _spec_decide


def spec_decide(rounds, params=None, **kwargs):
    """``rounds | jetson.specdec.spec_decide(params)`` or ``spec_decide(z=2.0, ...)``."""
    merged = dict(params or {})
    merged.update(kwargs)
    try:
        return _spec_decide(rounds, **merged)
    except ValueError as exc:
        # bad thresholds or a malformed round are a playbook bug: fail the task with the rule and the fix
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    """jetson.specdec sequential verdict filter."""

    def filters(self):
        return {"spec_decide": spec_decide}
