# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The one atomic file writer of the collection (stdlib only, Python 3.8+).

Readers (node_exporter, a second play, the report) never see a half-written
file, and a crash or power loss leaves either the old file or the new one:
the text goes to a temporary file in the same directory, its mode is set on
the descriptor before the rename (so the file never exists under its name with
looser permissions), file and directory are fsynced, and ``os.replace`` swaps
it in.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import tempfile


def ensure_dir(path, mode=0o755):
    """Create ``path`` (and parents) with ``mode``; umask must not weaken or widen it."""
    if not os.path.isdir(path):
        os.makedirs(path, mode)
        os.chmod(path, mode)


def _fsync_dir(directory):
    """Make a rename in ``directory`` durable; some filesystems refuse, which is not an error."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def atomic_write_text(path, text, mode=0o644, dir_mode=0o755):
    """Write ``text`` (UTF-8) to ``path`` atomically, creating its directory with ``dir_mode``.

    The temporary name starts with a dot and ends in ``.tmp``, so collectors that
    read ``*.prom`` or ``*.json`` ignore it.
    """
    directory = os.path.dirname(os.path.abspath(path))
    ensure_dir(directory, dir_mode)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def atomic_write_json(path, data, mode=0o644, dir_mode=0o755):
    """``data`` as indented, key-sorted JSON (one trailing newline), written atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n", mode=mode, dir_mode=dir_mode)
