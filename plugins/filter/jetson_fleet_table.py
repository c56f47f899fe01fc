# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filter ``jetson.specdec.jetson_fleet_table``; logic in module_utils/jetson/table.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.table import fleet_table


def jetson_fleet_table(hosts, hostvars):
    """``ansible_play_hosts_all | jetson.specdec.jetson_fleet_table(hostvars)``: the table's lines."""
    pairs = []
    for host in hosts or []:
        facts = (hostvars[host].get("ansible_facts") or {}) if host in hostvars else {}
        pairs.append((str(host), plain(facts.get("jetson"))))
    return fleet_table(pairs)


class FilterModule(object):
    """Fleet table filter of jetson.specdec."""

    def filters(self):
        return {"jetson_fleet_table": jetson_fleet_table}
