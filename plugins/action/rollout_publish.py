# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.rollout_publish: finish a host's record, spool it, hand it to the summary callback.

One task on the controller where the rollout had three (finish the record, set_stats, copy to the spool),
twice per host; it also says the check's warnings. Nothing runs on the host, so a host that could not be reached still publishes its record.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.plugin_utils.spool import publish_result

ARGS = dict(
    record=dict(type="dict", required=True),
    spool_dir=dict(type="path", required=True),
    started=dict(type="float"),
    ended=dict(type="float"),
    host=dict(type="str"),
    stats=dict(type="bool", default=True),
    run_id=dict(type="str"),
    notes=dict(type="list", elements="str", default=[]),
)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True  # a report, not managed state: written in check mode too

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGS)
        host = args["host"] or task_vars.get("inventory_hostname")
        out = publish_result(plain(args["record"]), args["spool_dir"], host, args["started"], args["ended"],
                             run_id=args["run_id"], stats=args["stats"])
        result.update(out)
        # what the operator should see before any benchmark starts (the rollout's check: shared machine ids, drift,
        # why a host is evaluated again), said by this task instead of a debug task of its own
        notes = [note for note in args["notes"] if note]
        if notes:
            result.setdefault("warnings", []).extend(notes)
        if not out.get("failed"):
            result["changed"] = False
        return result
