# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.rollout_publish: finish a host's record, spool it, hand it to the summary callback.

One task on the controller where the rollout had three (finish the record, set_stats, copy to the spool),
twice per host. Nothing runs on the host, so a host that could not be reached still publishes its record.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import time

from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_json
from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.record.names import UnsafeName, check_path_component, check_run_id
from ansible_collections.jetson.specdec.plugins.module_utils.record.record import finish

ARGS = dict(
    record=dict(type="dict", required=True),
    spool_dir=dict(type="path", required=True),
    started=dict(type="float"),
    ended=dict(type="float"),
    host=dict(type="str"),
    stats=dict(type="bool", default=True),
    run_id=dict(type="str"),
)
# A spooled record names the host, its model and its errors: the operator's group reads it, others do not.
SPOOL_MODE = 0o640
SPOOL_DIR_MODE = 0o750

# The key the summary callback (jetson.specdec.specdec_summary) reads from the run's custom stats.
STATS_KEY = "jetson_specdec"


def spool_path(spool_dir, host):
    """``<spool_dir>/<host>.json``; a host name that is not one safe file name is refused (UnsafeName)."""
    return os.path.join(spool_dir, check_path_component(host, "the inventory host name") + ".json")


def check_spool_dir(spool_dir, run_id=None):
    """The spool directory stays under the report directory: no '.' or '..' component (a run id of ../../x
    templated into it), and a run id given with it is a plain run id (UnsafeName)."""
    if run_id is not None:
        check_run_id(run_id)
    parts = str(spool_dir).split(os.sep)
    if ".." in parts or "." in parts[1:]:
        raise UnsafeName("input.run_id: the spool directory %r has a '.' or '..' component, so the record would be "
                         "written outside the report directory. Use a plain rollout_run_id (letters, digits and "
                         ". _ : -) and a report directory without '..'." % (spool_dir,))
    return spool_dir


def publish(record, spool_dir, host, started=None, now=None, run_id=None):
    """The finished record, written to the spool (0640). Returns (record, path)."""
    check_spool_dir(spool_dir, run_id)
    path = spool_path(spool_dir, host)
    done = finish(record, started, time.time() if now is None else now)
    atomic_write_json(path, done, mode=SPOOL_MODE, dir_mode=SPOOL_DIR_MODE)
    return done, path


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True  # a report, not managed state: written in check mode too

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGS)
        host = args["host"] or task_vars.get("inventory_hostname")
        try:
            record, path = publish(plain(args["record"]), args["spool_dir"], host, args["started"], args["ended"],
                                   run_id=args["run_id"])
        except UnsafeName as exc:
            return dict(result, failed=True, msg="jetson.specdec.rollout_publish: %s" % exc)
        except (IOError, OSError) as exc:
            return dict(result, failed=True, msg="jetson.specdec.rollout_publish: cannot write the record to %s: %s. "
                                                 "Check rollout_report_dir (space, permissions), then re-run."
                                                 % (args["spool_dir"], exc))
        result.update(changed=False, record=record, path=path)
        if args["stats"]:
            # What set_stats returns (aggregate, not per host): the strategy adds it to the run's custom stats.
            result["ansible_stats"] = {"data": {STATS_KEY: {host: record}}, "per_host": False, "aggregate": True}
        return result
