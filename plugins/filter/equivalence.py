# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filter ``jetson.specdec.rollout_equivalence``; documentation in rollout_equivalence.yml (sidecar).
The logic lives in module_utils/bench/equivalence.py."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.bench.equivalence import EquivalenceError, gate
from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain


def rollout_equivalence(verdict, rounds, settings=None):
    """``rollout_verdict | jetson.specdec.rollout_equivalence(rounds, rollout_settings.equivalence)``."""
    try:
        return gate(plain(verdict), plain(rounds), plain(settings))
    except EquivalenceError as exc:
        raise AnsibleFilterError("jetson.specdec.rollout_equivalence: %s" % exc)


class FilterModule(object):
    """jetson.specdec equivalence filter."""

    def filters(self):
        return {"rollout_equivalence": rollout_equivalence}
