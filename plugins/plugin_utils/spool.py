# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""A host's finished record in the run's spool and in the run's custom stats (on the controller).

Shared by jetson.specdec.rollout_publish (the check's record, an off, refused, drift-corrected or failed host's)
and jetson.specdec.rollout_evaluate (an evaluated host's, published by the evaluation itself when it is done).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import time

from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_json
from ansible_collections.jetson.specdec.plugins.module_utils.record.names import UnsafeName, check_path_component, check_run_id
from ansible_collections.jetson.specdec.plugins.module_utils.record.record import finish

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


def publish_result(record, spool_dir, host, started=None, ended=None, run_id=None, stats=True, who="rollout_publish"):
    """What the publishing task returns: ``{record, path}`` and, with ``stats``, the ``ansible_stats`` the
    strategy adds to the run's custom stats (aggregate, not per host); or ``{failed, msg}`` naming the fix."""
    try:
        done, path = publish(record, spool_dir, host, started, ended, run_id=run_id)
    except UnsafeName as exc:
        return {"failed": True, "msg": "jetson.specdec.%s: %s" % (who, exc)}
    except (IOError, OSError) as exc:
        return {"failed": True, "msg": "jetson.specdec.%s: cannot write the record to %s: %s. Check rollout_report_dir "
                                       "(space, permissions), then re-run." % (who, spool_dir, exc)}
    out = {"record": done, "path": path}
    if stats:
        out["ansible_stats"] = {"data": {STATS_KEY: {host: done}}, "per_host": False, "aggregate": True}
    return out
