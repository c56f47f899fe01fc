# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Names that become one component of a file path (stdlib only, Python 3.8+).

The run id and inventory host names end up in report paths on the controller
(``<report_dir>/<run_id>/hosts/<host>.json``).  A value with ``/`` or ``..``
would write outside the report directory, a control character would put a
newline into file listings and logs; both are refused before anything is
written, with the rule and the fix.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

MAX_BYTES = 200  # well under NAME_MAX (255) once ".json" and temp prefixes are added
# A run id names a folder of the report directory: one plain word (a timestamp, nightly-3, 2026-03-01T12:00).
RUN_ID_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\Z")


class UnsafeName(ValueError):
    """A value that cannot be used as a path component; the message says why and what to use."""


def path_component_problem(value):
    """Why ``value`` cannot be one path component, or None when it can."""
    if not isinstance(value, str):
        return "it must be a string, got %s" % type(value).__name__
    if not value.strip():
        return "it is empty"
    if value in (".", ".."):
        return "%r means the current or parent directory" % value
    if "/" in value or "\\" in value:
        return "it contains a path separator ('/' or '\\\\')"
    bad = sorted(set(ch for ch in value if ord(ch) < 32 or ord(ch) == 127))
    if bad:
        return "it contains control characters (%s)" % ", ".join("0x%02x" % ord(ch) for ch in bad)
    if value.startswith("-"):
        return "it starts with '-', which tools read as an option"
    if value != value.strip():
        return "it has leading or trailing spaces"
    if len(value.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        return "it is longer than %d bytes" % MAX_BYTES
    return None


def check_path_component(value, what):
    """Return ``value`` if it is safe as one path component, else raise UnsafeName naming ``what``."""
    problem = path_component_problem(value)
    if problem:
        raise UnsafeName("%s %r cannot be used in a file name: %s. Use letters, digits, '.', '-', '_' and ':' "
                         "(for example a timestamp like 20260301T120000Z, or the board's host name)."
                         % (what, value, problem))
    return value


def check_run_id(value, what="rollout_run_id"):
    """Return ``value`` if it is a plain run id (letters, digits, then also . _ : -; no '..'), else raise UnsafeName.

    Stricter than a path component: the run id is joined under the report directory by several tasks
    (the spool, the report files), some of which only template it into a path.
    """
    if not isinstance(value, str) or not RUN_ID_RE.match(value) or ".." in value:
        raise UnsafeName("input.run_id: %s %r is not a run id. Use 1-128 letters, digits and . _ : - starting "
                         "with a letter or digit, without '..' (for example 20260301T120000Z or nightly-3)."
                         % (what, value))
    return value
