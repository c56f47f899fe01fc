# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filter ``jetson.specdec.rollout_third_arm``; documentation lives in rollout_third_arm.yml (sidecar)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.verdict.third_arm import plan


def rollout_third_arm(verdict, settings, method, k, max_batch=256, probe=None):
    """``rollout_verdict | jetson.specdec.rollout_third_arm(rollout_settings, method, k, max_batch, probe)``."""
    settings = plain(settings) or {}
    third = settings.get("third_arm") or {}
    out = plan(plain(verdict), settings.get("verdict") or {}, bool(third.get("enabled")), third.get("vllm_version"),
               method, k, max_batch, probe=plain(probe) or None, measure_between=bool(third.get("measure_between", True)))
    out["candidate_verdict"] = plain(verdict)
    return out


class FilterModule(object):
    """jetson.specdec third-arm filter."""

    def filters(self):
        return {"rollout_third_arm": rollout_third_arm}
