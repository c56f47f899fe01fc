# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Create or take over a directory for a less-privileged account without following its links.

Standard library only, Python 3.8+, Linux (``dir_fd``, ``O_NOFOLLOW``, ``O_DIRECTORY``).

``ansible.builtin.file`` with ``owner:`` follows a symbolic link at the path.  When the
account that will own the directory can write its parent (``/var/lib/vllm`` belongs to
the service account, ``/var/lib/vllm/huggingface`` is in it), that account can replace the
directory with a link to ``/etc`` and the next root run chowns ``/etc`` to it.  This helper
walks the path one component at a time from ``/`` with ``openat``-style calls on directory
descriptors and changes owner and mode with ``fchown``/``fchmod`` on the descriptor it
opened with ``O_NOFOLLOW``, so no name is resolved twice:

* a symbolic link is followed only when only a trusted account could have made it: the
  link and the directory holding it belong to root (or to the caller's own uid), and that
  directory is not writable by group or others.  Any other link (in the middle of the path
  or at its end, dangling or not) is refused with rule ``host.path_link``;
* a component that is not a directory is refused (``host.path_not_dir``);
* an existing final directory is changed only when the collection created it (a marker
  file ``MARKER`` inside it) or when it already has the owner, group and mode asked for
  (an earlier version of the role made it; nothing changes and the marker is added).
  Any other existing directory (``/var/lib/docker``, ``/var/spool/cron/crontabs``, a
  directory an operator made for something else) is refused (``host.path_foreign``);
* missing components are created ``root:root 0755`` (as ``mkdir -p`` does), the final one
  with the owner and mode asked for, and the marker.

``ensure_dir`` returns what it did (or, in check mode, would do) and raises
``UnsafePathError`` (its message starts with the rule id) before changing anything
when the path is refused.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import os
import stat

MARKER = ".jetson-specdec-dir"
MARKER_TEXT = b"# Created by jetson.specdec; the collection may change this directory's owner and mode.\n"
MAX_LINKS = 40  # as the kernel's limit on links in one lookup
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class UnsafePathError(Exception):
    """A path the helper refuses to create or change; the message starts with the rule id."""

    def __init__(self, rule, message):
        super(UnsafePathError, self).__init__("%s: %s" % (rule, message))
        self.rule = rule


def _mode_text(st):
    return "%04o" % stat.S_IMODE(st.st_mode)


def _trusted_dir(st, trusted_uids):
    """Only a trusted account can add, remove or rename entries in this directory."""
    return st.st_uid in trusted_uids and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _split(path):
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
        raise UnsafePathError("host.path_link", "%r is not an absolute path." % (path,))
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or parts[-1] == "..":
        raise UnsafePathError("host.path_foreign", "%r: '/' and a path ending in '..' are never changed." % (path,))
    return parts


def _open_dir(name, dir_fd):
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _walk(path, trusted_uids):
    """Open the parent of ``path`` without following untrusted links.

    Returns (parent_fd or None when a component is missing, the real path of the parent, the
    final name, the missing components between the parent and the final name).
    """
    parts = _split(path)
    hops = 0
    while True:
        fd = _open_dir("/", None)
        walked = ""
        restart = None
        for index, name in enumerate(parts[:-1]):
            if name == "..":
                # Only reached through a trusted link's target: go back up from the real path walked so far.
                os.close(fd)
                restart = os.path.dirname(walked) + "/" + "/".join(parts[index + 1:])
                break
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    os.close(fd)
                    raise
                return fd, walked or "/", parts[-1], parts[index:-1]
            if stat.S_ISLNK(st.st_mode):
                parent = os.fstat(fd)
                target = os.readlink(name, dir_fd=fd)
                if not (st.st_uid in trusted_uids and _trusted_dir(parent, trusted_uids)):
                    os.close(fd)
                    raise UnsafePathError(
                        "host.path_link", "%s/%s (on the way to %s) is a symbolic link to %s in a directory that "
                        "uid %d can change (mode %s); it is not followed, because whoever made it could point the "
                        "change of owner at a system directory. Fix: remove the link (rm %s/%s) and re-run; the "
                        "role creates the directory." % (walked, name, path, target, parent.st_uid,
                                                         _mode_text(parent), walked, name))
                hops += 1
                if hops > MAX_LINKS:
                    os.close(fd)
                    raise UnsafePathError("host.path_link", "%s: more than %d symbolic links." % (path, MAX_LINKS))
                os.close(fd)
                base = target if target.startswith("/") else (walked or "") + "/" + target
                restart = base + "/" + "/".join(parts[index + 1:])
                break
            if not stat.S_ISDIR(st.st_mode):
                os.close(fd)
                raise UnsafePathError("host.path_not_dir", "%s/%s (on the way to %s) is not a directory. Fix: "
                                      "choose another path." % (walked, name, path))
            try:
                child = _open_dir(name, fd)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePathError("host.path_link", "%s/%s changed into a link or a file while it was "
                                          "opened; nothing was changed. Fix: look at who changes it." % (walked, name))
                raise
            os.close(fd)
            fd = child
            walked += "/" + name
        if restart is None:
            return fd, walked or "/", parts[-1], []
        parts = _split(restart)


def _state(st):
    return {"uid": st.st_uid, "gid": st.st_gid, "mode": _mode_text(st)}


def _has_marker(dir_fd):
    try:
        st = os.stat(MARKER, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode)


def _write_marker(dir_fd):
    # O_EXCL | O_NOFOLLOW: a link or a hard link the owner of the directory planted under the
    # marker's name is never opened for writing.
    try:
        fd = os.open(MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            return
        raise
    try:
        os.fchmod(fd, 0o644)
        os.write(fd, MARKER_TEXT)
    finally:
        os.close(fd)


def ensure_dir(path, uid, gid, mode, check_mode=False, trusted_uids=None, _hops=0):
    """Create or take over ``path`` as ``uid:gid`` ``mode`` without following untrusted links.

    Returns {changed, created, path, real_path, before, after} (before is None for a new directory).
    """
    if trusted_uids is None:
        trusted_uids = frozenset((0, os.geteuid()))
    mode = int(mode)
    parent_fd, parent_path, name, missing = _walk(path, trusted_uids)
    try:
        real_path = (parent_path.rstrip("/") + "/" + "/".join(missing + [name])).replace("//", "/")
        after = {"uid": uid, "gid": gid, "mode": "%04o" % mode}
        if missing:
            if check_mode:
                return {"changed": True, "created": True, "path": path, "real_path": real_path, "before": None,
                        "after": after}
            for part in missing:
                made = True
                try:
                    os.mkdir(part, 0o755, dir_fd=parent_fd)
                except OSError as exc:
                    if exc.errno != errno.EEXIST:
                        raise
                    made = False
                child = _open_checked(part, parent_fd, parent_path, path)
                if made:
                    os.fchmod(child, 0o755)  # whatever the umask: the service account must reach its directory
                os.close(parent_fd)
                parent_fd = child
                parent_path = parent_path.rstrip("/") + "/" + part
        try:
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            parent = os.fstat(parent_fd)
            target = os.readlink(name, dir_fd=parent_fd)
            if st.st_uid in trusted_uids and _trusted_dir(parent, trusted_uids):
                # A link only root could have made (an operator moving the cache to another disk):
                # the directory it points to gets every check below.
                os.close(parent_fd)
                parent_fd = None
                if _hops >= MAX_LINKS:
                    raise UnsafePathError("host.path_link", "%s: more than %d symbolic links." % (path, MAX_LINKS))
                base = target if target.startswith("/") else parent_path.rstrip("/") + "/" + target
                return ensure_dir(os.path.normpath(base), uid, gid, mode, check_mode, trusted_uids, _hops + 1)
            raise UnsafePathError(
                "host.path_link", "%s is a symbolic link to %s in a directory that uid %d can change (mode %s); "
                "it is not followed, because whoever made it could point the change of owner at a system "
                "directory (a link to /etc would give /etc to the service account). Fix: remove the link "
                "(rm %s) and re-run; the role creates the directory."
                % (path, target, parent.st_uid, _mode_text(parent), path))
        if st is None:
            if check_mode:
                return {"changed": True, "created": True, "path": path, "real_path": real_path, "before": None,
                        "after": after}
            try:
                os.mkdir(name, 0o700, dir_fd=parent_fd)
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    raise
            created = True
        elif not stat.S_ISDIR(st.st_mode):
            raise UnsafePathError("host.path_not_dir", "%s exists and is not a directory. Fix: choose another "
                                  "path or move the file away." % path)
        else:
            created = False
        fd = _open_checked(name, parent_fd, parent_path, path)
        try:
            st = os.fstat(fd)
            before = None if created else _state(st)
            ours = created or _has_marker(fd)
            same = (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (uid, gid, mode)
            if not ours and not same:
                raise UnsafePathError(
                    "host.path_foreign", "%s exists, was not created by jetson.specdec (no %s in it) and is uid "
                    "%d, gid %d, mode %s; the role would make it uid %d, gid %d, mode %04o, which could hand a "
                    "system or another program's directory to the service account. Fix: choose a path of its "
                    "own for the collection (it creates it), or, when this directory is meant for vLLM, give it "
                    "yourself: chown %d:%d %s && chmod %04o %s."
                    % (path, MARKER, st.st_uid, st.st_gid, _mode_text(st), uid, gid, mode, uid, gid, path, mode, path))
            changed = created or not same or not _has_marker(fd)
            if check_mode:
                return {"changed": changed, "created": created, "path": path, "real_path": real_path,
                        "before": before, "after": after}
            if (st.st_uid, st.st_gid) != (uid, gid):
                os.fchown(fd, uid, gid)
            if stat.S_IMODE(st.st_mode) != mode or created:
                os.fchmod(fd, mode)
            _write_marker(fd)
            return {"changed": changed, "created": created, "path": path, "real_path": real_path,
                    "before": before, "after": after}
        finally:
            os.close(fd)
    finally:
        if parent_fd is not None:
            os.close(parent_fd)


def _open_checked(name, parent_fd, parent_path, path):
    """Open a directory entry that must be a directory and not a link (it may have changed since it was looked at)."""
    try:
        return _open_dir(name, parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafePathError("host.path_link", "%s/%s (on the way to %s) changed into a link or a file while "
                                  "it was being created or opened; nothing was changed there. Fix: look at who "
                                  "changes it, remove it and re-run." % (parent_path.rstrip("/"), name, path))
        raise
