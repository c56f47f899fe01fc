# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The fleet table of playbooks/facts.yml."""
from ansible_collections.jetson.specdec.plugins.filter.jetson_fleet_table import jetson_fleet_table
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.table import HEADER, fleet_table

THOR = {"family": "thor", "variant": "t5000", "l4t": {"release": "39.2"}, "jetpack": "7.1",
        "memory_total_bytes": 131072 * 1024 * 1024, "power_mode": {"name": "MAXN"}, "warnings": ["fan: no tach"]}


def test_table_lines_warnings_and_unreachable_hosts():
    rows = fleet_table([("thor-01", THOR), ("gone", None), ("nano", {"family": "orin-nano", "l4t": None})])
    assert rows == [HEADER,
                    "thor-01 | thor | t5000 | 39.2 | 7.1 | 128.0 | MAXN | 1 warning(s)",
                    "    thor-01: fan: no tach",
                    "gone | unreachable | - | - | - | - | - | 0 warning(s)",
                    "nano | orin-nano | - | - | - | - | - | 0 warning(s)"]


def test_filter_reads_hostvars_in_play_order():
    hostvars = {"b": {"ansible_facts": {"jetson": THOR}}, "a": {}}
    rows = jetson_fleet_table(["b", "a", "c"], hostvars)
    assert [r.split(" | ")[0] for r in rows[1:] if not r.startswith("    ")] == ["b", "a", "c"]
    assert rows[-1].startswith("c | unreachable")
