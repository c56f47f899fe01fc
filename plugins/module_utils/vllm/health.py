# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Readiness of a vLLM server: HTTP probes and the systemd unit's crash-loop state (stdlib only)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re
import socket

try:
    from http.client import HTTPConnection, HTTPException
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not a target
    raise


def split_url(url):
    """(host, port) of an http:// base URL; raises ValueError on anything else."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError("url must look like http://HOST:PORT, got %r" % (url,))
    return parts.hostname, parts.port or 80


def http_get(url, path, api_key=None, timeout=5.0):
    """(status, body text) or (None, error text) when the server does not answer."""
    host, port = split_url(url)
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer %s" % api_key
    conn = HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(1 << 20).decode("utf-8", "replace")
    except (socket.error, HTTPException, OSError) as exc:
        return None, "%s: %s" % (type(exc).__name__, exc)
    finally:
        conn.close()


def served_models(body):
    """Model ids from a /v1/models body, or None when it is not vLLM's list shape."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return None
    return [item.get("id") for item in data["data"] if isinstance(item, dict)]


def parse_systemctl_show(text):
    """`systemctl show -p A -p B unit` output as a dict."""
    props = {}
    for line in (text or "").splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            props[key.strip()] = value.strip()
    return props


# A restart this recent (before the wait began) is the one the wait follows.
GAP_START_WINDOW_S = 120.0


def serving_gap(props, wait_started_mono, healthy_mono):
    """Seconds the service did not serve across the restart this wait followed, or None.

    ``props``: ``systemctl show`` with ``ActiveExitTimestampMonotonic`` (the old server left
    the active state: it stops answering) and ``ActiveEnterTimestampMonotonic`` (the new one
    started), in microseconds of CLOCK_MONOTONIC, the clock of ``time.monotonic()``. The gap
    ends at ``healthy_mono``, the first healthy answer. None when the unit did not restart
    shortly before or during this wait (first start, unchanged unit, or an old restart).
    """
    try:
        left = int(props.get("ActiveExitTimestampMonotonic") or 0) / 1e6
        entered = int(props.get("ActiveEnterTimestampMonotonic") or 0) / 1e6
    except ValueError:
        return None
    if left <= 0 or entered < left or entered < wait_started_mono - GAP_START_WINDOW_S or healthy_mono < left:
        return None
    return {"seconds": round(healthy_mono - left, 1), "stopped_at_monotonic": round(left, 3)}


def unit_verdict(props, restarts_at_start, crash_loop_restarts):
    """None while the unit may still come up, else a sentence saying why it will not."""
    state = props.get("ActiveState")
    try:
        restarts = int(props.get("NRestarts", "0")) - restarts_at_start
    except ValueError:
        restarts = 0
    if state == "failed":
        return "the unit failed (%s, exit status %s)" % (props.get("Result", "?"), props.get("ExecMainStatus", "?"))
    if restarts >= crash_loop_restarts:
        return "the unit restarted %d times while starting (crash loop; last exit status %s)" % (
            restarts, props.get("ExecMainStatus", "?"))
    if state == "inactive" and props.get("SubState") == "dead":
        return "the unit is not running (inactive)"
    return None


# How many journal lines of one start are read; vLLM's shutdown can print hundreds.
JOURNAL_SCAN_LINES = 5000
# Lines that drown the real error: nanobind's leak report at interpreter exit.
_NOISE = re.compile(r"nanobind: leaked|leaked (function|instance|type)|leaked \d+ (instances|types|functions)")
# Lines that state why a start failed (vLLM's errors and systemd's verdicts).
_CAUSE_LINE = re.compile(r"(?i)(error|exception|invalid repository|is larger than|less than desired|"
                         r"out of memory|input should|is greater than)")


def drop_noise(lines):
    """The journal lines without known noise."""
    return [line for line in lines if not _NOISE.search(line)]


def cause_lines(lines, limit=12):
    """The first few lines that say why a start failed, in order."""
    return [line for line in lines if _CAUSE_LINE.search(line)][:limit]
