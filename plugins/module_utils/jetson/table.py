# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The fleet table playbooks/facts.yml prints: one line per host, then its warnings."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

HEADER = "host | board | variant | L4T | JetPack | memory GiB | power mode | warnings"
GIB = 1073741824


def host_line(host, jetson):
    """One table line for ``host``; a host without facts shows as unreachable."""
    j = jetson if isinstance(jetson, dict) else {}
    memory = j.get("memory_total_bytes")
    mode = j.get("power_mode") or {}
    l4t = j.get("l4t") or {}
    warnings = j.get("warnings") or []
    return " | ".join([
        str(host), str(j.get("family") or "unreachable"), str(j.get("variant") or "-"),
        str(l4t.get("release") or "-") if isinstance(l4t, dict) else "-", str(j.get("jetpack") or "-"),
        "%.1f" % (float(memory) / GIB) if memory else "-",
        str(mode.get("name") or "-") if isinstance(mode, dict) else "-",
        "%d warning(s)" % len(warnings),
    ])


def fleet_table(facts_by_host):
    """Header, then per host (in the given order) its line and one indented line per warning.

    ``facts_by_host``: [(host, ansible_facts.jetson or None)].
    """
    rows = [HEADER]
    for host, jetson in facts_by_host:
        rows.append(host_line(host, jetson))
        warnings = jetson.get("warnings") if isinstance(jetson, dict) else None
        rows.extend("    %s: %s" % (host, warning) for warning in warnings or [])
    return rows
