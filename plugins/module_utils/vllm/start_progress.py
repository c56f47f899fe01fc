# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Progress of a vLLM start that jetson.specdec.vllm_wait is waiting for (standard library only).

``snapshot`` is what the module writes to its ``progress_path`` after every probe; ``describe``
is the line jetson.specdec.vllm_job_wait prints on the controller from it.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.bench.progress import VERSION, duration_text


def snapshot(started, now, timeout, last, props, restarts_at_start):
    """One reading of the wait: how long, the unit's state (systemctl show), the last answer."""
    try:
        restarts = int((props or {}).get("NRestarts", "0")) - restarts_at_start
    except ValueError:
        restarts = 0
    return {"version": VERSION, "kind": "start", "started": started, "updated": now, "timeout": timeout,
            "last": last, "active_state": (props or {}).get("ActiveState"),
            "sub_state": (props or {}).get("SubState"), "restarts": restarts}


def describe(snap, now, label=None):
    """"vLLM start: 1 min 10 s of at most 15 min 00 s; unit activating (start), no restart; last: /health ..."."""
    head = "%s: " % label if label else ""
    started = snap.get("started")
    elapsed = max(0.0, now - started) if started is not None else 0.0
    bound = duration_text(snap.get("timeout") or 0)
    text = "waiting for vLLM to serve, %s of at most %s" % (duration_text(elapsed), bound)
    if snap.get("active_state"):
        text += "; unit %s (%s)" % (snap["active_state"], snap.get("sub_state") or "?")
        restarts = snap.get("restarts") or 0
        text += ", %s" % ("no restart" if not restarts else "%d restart%s" % (restarts, "s" if restarts > 1 else ""))
    if snap.get("last"):
        text += "; last answer: %s" % str(snap["last"])[:120]
    return head + text
