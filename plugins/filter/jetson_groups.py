# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filter ``jetson.specdec.jetson_wrong_groups``; documentation lives in jetson_wrong_groups.yml (sidecar)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.boards import wrong_family_groups


def jetson_wrong_groups(group_names, family):
    """``group_names | jetson.specdec.jetson_wrong_groups(ansible_facts.jetson.family)``."""
    return wrong_family_groups(plain(group_names), plain(family))


class FilterModule(object):
    """Inventory-group check of jetson.specdec."""

    def filters(self):
        return {"jetson_wrong_groups": jetson_wrong_groups}
