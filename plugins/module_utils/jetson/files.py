# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Read files under a root prefix without ever raising.

Every reader returns None when the file cannot be used and records one plain
sentence in ``warnings`` saying why, so the facts module can answer with nulls
instead of a traceback (broken boards, fixture trees, odd containers).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os

# /proc and /sys files are small; a cap keeps a garbage file from eating memory.
DEFAULT_LIMIT = 256 * 1024


class RootReader(object):
    """Reads ``rel`` paths (no leading slash) under ``root``."""

    def __init__(self, root="/"):
        self.root = root or "/"
        self._real_root = os.path.realpath(self.root)
        self.warnings = []

    def path(self, rel):
        return os.path.join(self.root, rel.lstrip("/"))

    def _inside_root(self, full):
        # A fixture tree may hold an absolute symlink (proc/device-tree ->
        # /sys/firmware/...): following it would describe the controller.
        if self._real_root == "/":
            return True
        real = os.path.realpath(full)
        return real == self._real_root or real.startswith(self._real_root + os.sep)

    def exists(self, rel):
        full = self.path(rel)
        return os.path.lexists(full) and self._inside_root(full)

    def is_dir(self, rel):
        full = self.path(rel)
        return os.path.isdir(full) and self._inside_root(full)

    def read_bytes(self, rel, limit=DEFAULT_LIMIT, quiet_missing=True):
        """Return the bytes of ``rel`` or None (with a warning unless it is simply absent)."""
        full = self.path(rel)
        if not os.path.lexists(full):
            if not quiet_missing:
                self.warnings.append("/%s is missing." % rel)
            return None
        if not self._inside_root(full):
            self.warnings.append("/%s points outside the root %s, so it was not read." % (rel, self.root))
            return None
        if os.path.isdir(full):
            self.warnings.append("/%s is a directory where a file was expected, so it was ignored." % rel)
            return None
        try:
            with open(full, "rb") as handle:
                return handle.read(limit)
        except (IOError, OSError) as exc:
            if getattr(exc, "errno", None) in (errno.EACCES, errno.EPERM):
                self.warnings.append("/%s is not readable (permission denied), so it was ignored." % rel)
            elif getattr(exc, "errno", None) == errno.EISDIR:
                self.warnings.append("/%s is a directory where a file was expected, so it was ignored." % rel)
            else:
                self.warnings.append("/%s could not be read (%s), so it was ignored." % (rel, exc))
            return None

    def read_text(self, rel, limit=DEFAULT_LIMIT, quiet_missing=True):
        """Return ``rel`` decoded as UTF-8 (undecodable bytes replaced) or None."""
        data = self.read_bytes(rel, limit=limit, quiet_missing=quiet_missing)
        if data is None:
            return None
        return data.decode("utf-8", "replace")

    def first_existing(self, rels):
        for rel in rels:
            if self.exists(rel):
                return rel
        return None
