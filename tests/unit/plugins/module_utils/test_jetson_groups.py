# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""A host listed under another board family's inventory group (issue 19, wrong group)."""
from ansible_collections.jetson.specdec.plugins.filter.jetson_groups import FilterModule
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.boards import wrong_family_groups

WRONG = FilterModule().filters()["jetson_wrong_groups"]


def test_only_groups_named_after_another_family_count():
    assert wrong_family_groups(["jetsons", "agx_orin", "thor"], "agx_orin") == ["thor"]
    assert wrong_family_groups(["jetsons", "agx_orin", "line-3", "canary"], "agx_orin") == []
    assert wrong_family_groups(["orin_nx", "thor", "orin_nano"], "orin_nano") == ["orin_nx", "thor"]
    # an unknown board in a family group gets that family's settings too
    assert wrong_family_groups(["thor", "unknown"], "unknown") == ["thor"]
    assert wrong_family_groups([], "thor") == [] and wrong_family_groups(None, "thor") == []


def test_the_filter_reads_ansible_lists():
    assert WRONG(["thor", "agx_orin"], "thor") == ["agx_orin"]
