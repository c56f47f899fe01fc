# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Per-host rollout state file (stdlib only, Python 3.8+); the lock is in lock.py.

The state file survives a crashed play: a host left ``pending`` must be
resolved before anything else happens, and a host already ``kept``,
``reverted``, ``refused`` or ``off`` (speculation off by the inventory's policy) for the same config
hash is converged.

A file this code cannot read (bad UTF-8, bad JSON, nesting past MAX_DEPTH,
fields of the wrong type) is corrupt: reading reports it and starts from an
empty state, and only a write moves it aside, under a unique name.  A file
from a newer collection (higher schema_version, or a status this version does
not know) is not corrupt: it is refused and left exactly as it is, because
starting over would re-run a converged host and drop its history.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import binascii
import datetime
import errno
import hashlib
import json
import os
import stat

from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_text

SCHEMA_VERSION = 1
STATUSES = ("pending", "kept", "reverted", "refused", "off", "baseline", "failed")
CONVERGED = ("kept", "reverted", "refused", "off")
TIMESTAMP_KEYS = ("created_at", "updated_at")
STATE_MODE = 0o640  # root and its group (monitoring agents); never world-readable
DIR_MODE = 0o750
MAX_BYTES = 16 * 1024 * 1024  # benchmarks of every round fit many times over
MAX_DEPTH = 64
# Type of each known field; None is always allowed (an empty default).
FIELD_TYPES = {
    "status": str, "config_hash": str, "config": dict, "last_good": dict, "verdict": dict,
    "benchmarks": dict, "attempts": list, "info": dict, "error": str,
    "created_at": str, "updated_at": str,
}
# Fields a caller may set through ``write``; anything else is a typo.
FIELDS = ("status", "config_hash", "config", "last_good", "verdict", "benchmarks",
          "attempts", "info", "error")


class StateError(Exception):
    """Bad input or an unusable state/lock file; the message says what to do."""


class StateRefused(StateError):
    """A state file this collection must not touch (it comes from a newer version)."""


class LockHeld(StateError):
    """Someone else holds a fresh rollout lock."""

    def __init__(self, message, holder):
        super(LockHeld, self).__init__(message)
        self.holder = holder


# --------------------------------------------------------------------------- pure helpers

def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(ts):
    """ISO 8601 UTC with a 'Z' suffix, second precision."""
    return ts.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text):
    """Parse what iso() writes (and +00:00 forms); None when unparsable."""
    if not isinstance(text, str):
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ"):
        try:
            return datetime.datetime.strptime(text, fmt).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            pass
    try:
        parsed = datetime.datetime.fromisoformat(text)  # 3.7+: handles +00:00
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed


def canonical_json(obj):
    """Stable JSON: sorted keys, no whitespace, so equal dicts hash equally."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_hash(config):
    """sha256 hex of the canonical JSON of what defines a candidate."""
    if not isinstance(config, dict) or not config:
        raise StateError("config must be a non-empty dict (unit content hash, spec config, model, "
                         "runtime version); got %r" % (type(config).__name__,))
    try:
        text = canonical_json(config)
    except (TypeError, ValueError) as exc:
        raise StateError("config must be JSON-serialisable: %s" % exc)
    # surrogatepass: a lone surrogate hashes (the same bytes every time) instead of raising; valid text is
    # unchanged, so the hashes of existing states stay the same.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def empty_state():
    return {
        "schema_version": SCHEMA_VERSION,
        "status": None,
        "config_hash": None,
        "config": None,
        "last_good": None,
        "verdict": None,
        "benchmarks": {},
        "attempts": [],
        "info": {},
        "error": None,
        "created_at": None,
        "updated_at": None,
    }


def nesting_depth(obj):
    """Depth of nested lists/dicts, without recursion (deep input must not crash us)."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


class CorruptState(StateError):
    """The file is not a state this code wrote (moved aside on the next write)."""


def validate_state(data):
    """Check a loaded state; return it filled with defaults.

    Raises StateRefused for a newer collection's file, CorruptState for
    anything else that is wrong (naming the field and the type it needs).
    """
    if not isinstance(data, dict):
        raise CorruptState("it does not hold a JSON object")
    if nesting_depth(data) > MAX_DEPTH:
        raise CorruptState("it is nested deeper than %d levels" % MAX_DEPTH)
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CorruptState("it has no valid schema_version (a positive integer), got %r" % (version,))
    if version > SCHEMA_VERSION:
        raise StateRefused("schema_version %d is newer than this collection understands (%d); upgrade "
                           "jetson.specdec on the controller. The file was left as it is."
                           % (version, SCHEMA_VERSION))
    status = data.get("status")
    if status is not None and status not in STATUSES:
        if not isinstance(status, str):
            raise CorruptState("field 'status' must be a string or null, got %s" % type(status).__name__)
        raise StateRefused("status %r is not one this collection knows (%s); a newer jetson.specdec probably "
                           "wrote it: upgrade the collection on the controller. The file was left as it is."
                           % (status, ", ".join(STATUSES)))
    for key, kind in FIELD_TYPES.items():
        value = data.get(key)
        if value is not None and not isinstance(value, kind):
            raise CorruptState("field %r must be %s or null, got %s"
                               % (key, "an object" if kind is dict else "a list" if kind is list else "a string",
                                  type(value).__name__))
    if any(not isinstance(a, dict) for a in data.get("attempts") or []):
        raise CorruptState("field 'attempts' must hold objects only")
    out = empty_state()
    out.update((k, v) for k, v in data.items() if v is not None)
    return out


def merge_state(current, updates, now, attempt=None):
    """Return a new state with ``updates`` (top-level fields) replacing current ones.

    ``attempt`` (a dict) is appended to ``attempts`` with a ``recorded_at`` stamp.
    Timestamps change only when the content does, which keeps writes idempotent.
    """
    unknown = sorted(set(updates) - set(FIELDS))
    if unknown:
        raise StateError("unknown state field(s) %s; settable fields are %s"
                         % (", ".join(unknown), ", ".join(FIELDS)))
    status = updates.get("status")
    if status is not None and status not in STATUSES:
        raise StateError("status must be one of %s, got %r" % (", ".join(STATUSES), status))
    new = dict(current)
    for key, value in updates.items():
        if value is not None:
            new[key] = value
    if attempt is not None:
        if not isinstance(attempt, dict):
            raise StateError("attempt must be a dict (one fallback-ladder record)")
        record = dict(attempt)
        record.setdefault("recorded_at", iso(now))
        new["attempts"] = list(new.get("attempts") or []) + [record]
    new["schema_version"] = SCHEMA_VERSION
    if content_differs(current, new):
        new["created_at"] = current.get("created_at") or iso(now)
        new["updated_at"] = iso(now)
    return new


def content_differs(a, b):
    """True when the states differ apart from their timestamps."""
    def strip(d):
        return canonical_json({k: v for k, v in (d or {}).items() if k not in TIMESTAMP_KEYS})
    return strip(a) != strip(b)


def needs_rollout(state, new_hash, force=False):
    """(bool, reason): must this host go through a rollout for ``new_hash``?"""
    if force:
        return True, "forced by the caller (force=true)"
    state = state or {}
    status = state.get("status")
    old_hash = state.get("config_hash")
    if status is None:
        return True, "no previous rollout is recorded on this host"
    if status == "pending":
        return True, ("a previous rollout was interrupted (status pending, config %s); it must be resolved "
                      "before the host counts as converged" % _short(old_hash))
    if status == "failed":
        return True, "the previous attempt failed (%s); trying again" % (state.get("error") or "no error recorded")
    if status == "baseline":
        return True, "only a baseline was recorded; the candidate has not been judged"
    if old_hash != new_hash:
        return True, "the candidate config changed (%s → %s)" % (_short(old_hash), _short(new_hash))
    mark = (state.get("info") or {}).get("watch_reevaluate") if isinstance(state.get("info"), dict) else None
    if status == "kept" and mark:
        # jetson.specdec.watch with rollout_watch_action=reevaluate; the rollout's pending write replaces info
        reason = mark.get("reason") if isinstance(mark, dict) else None
        return True, "the watch found the kept config drifted%s; re-evaluating it" % (
            " (%s)" % reason if reason else "")
    return False, "converged: already %s for config %s" % (status, _short(new_hash))


def _short(h):
    return (h or "none")[:12]


# --------------------------------------------------------------------------- files

# Hints per errno: what the operator can do about it.
_OS_HINTS = {
    errno.ENOSPC: "the filesystem is full: free space there and re-run",
    errno.EDQUOT: "the disk quota is used up: free space there and re-run",
    errno.EROFS: "the filesystem is mounted read-only: remount it read-write (or point the path elsewhere) "
                 "and re-run",
    errno.EACCES: "permission denied: run the task as root (become: true) or fix the directory's owner",
    errno.EPERM: "operation not permitted: check the file's attributes (chattr -i) and owner",
    errno.ELOOP: "the path is a symbolic link, which is refused: replace it with a regular file",
    errno.ENOTDIR: "a parent of the path is not a directory: fix the path",
    errno.EIO: "input/output error: check the disk (dmesg) before re-running",
}


def describe_os_error(action, path, exc):
    """One sentence: what failed, where, why, and what to do."""
    code = getattr(exc, "errno", None)
    name = errno.errorcode.get(code, "error") if code is not None else type(exc).__name__
    hint = _OS_HINTS.get(code, "fix the cause and re-run")
    return "Cannot %s %s: %s (%s); %s." % (action, path, getattr(exc, "strerror", None) or exc, name, hint)


def ensure_private_dir(path, mode=DIR_MODE):
    """Create ``path`` with ``mode``, or check that an existing one is safe to write in.

    A directory another user owns, or one that group/others may write to,
    lets them swap our files for links between our checks and our writes:
    refused, naming the fix.
    """
    try:
        if not os.path.isdir(path):
            os.makedirs(path, mode)
            os.chmod(path, mode)  # makedirs honours umask
        info = os.stat(path)
    except OSError as exc:
        raise StateError(describe_os_error("create the state directory", path, exc))
    if info.st_uid not in (0, os.geteuid()):
        raise StateError("State directory %s belongs to uid %d, not to root or uid %d; another user could replace "
                         "the state or lock files. Use a directory root owns (chown root %s)."
                         % (path, info.st_uid, os.geteuid(), path))
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        raise StateError("State directory %s is writable by group or others (mode %04o); another user could "
                         "replace the state or lock files. Run chmod go-w %s."
                         % (path, stat.S_IMODE(info.st_mode), path))


def load_state(path):
    """Read and check the state at ``path``.

    Returns (state, problem): ``problem`` is None, or why the file is corrupt
    (then ``state`` is the empty default).  A missing file is the empty
    default.  Raises StateRefused for a newer collection's file and StateError
    when the file cannot be read at all.  Never changes anything.
    """
    try:
        # O_NONBLOCK: opening a FIFO planted at the path must not hang the task.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return empty_state(), None
        raise StateError(describe_os_error("read the state file", path, exc))
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise StateError("State file %s is not a regular file; remove it (or point the path at a file)."
                                 % path)
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise StateError(describe_os_error("read the state file", path, exc))
    try:
        if len(raw) > MAX_BYTES:
            raise CorruptState("it is larger than %d bytes" % MAX_BYTES)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptState("it is not valid UTF-8 (%s)" % exc)
        try:
            data = json.loads(text)
        except RecursionError:
            raise CorruptState("it is nested too deeply to parse")
        except ValueError as exc:
            raise CorruptState("it is not valid JSON (%s)" % exc)
        return validate_state(data), None
    except CorruptState as exc:
        return empty_state(), str(exc)


def corrupt_name(path, now):
    """``<path>.corrupt-<UTC time>-<random>``: two corrupt files in one second never collide."""
    return "%s.corrupt-%s-%s" % (path, now.strftime("%Y%m%dT%H%M%SZ"),
                                 binascii.hexlify(os.urandom(4)).decode("ascii"))


def move_aside(path, now):
    """Rename a corrupt state out of the way without ever replacing another file; returns the new name."""
    for _attempt in range(5):
        aside = corrupt_name(path, now)
        try:
            os.link(path, aside)  # fails if the name exists, unlike rename
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                continue
            raise StateError(describe_os_error("move the corrupt state file aside from", path, exc))
        try:
            os.unlink(path)
        except OSError as exc:
            raise StateError(describe_os_error("remove the corrupt state file", path, exc))
        return aside
    raise StateError("could not find a free name to move %s aside" % path)


def read_state(path, now, move_corrupt=False):
    """Load the state at ``path``; returns (state, warnings).

    A corrupt file gives the empty default and a warning.  It is moved aside
    only with ``move_corrupt`` (the write path, right before the new state is
    written); reading, check mode and the read-only check never move it.
    """
    state, problem = load_state(path)
    if problem is None:
        return state, []
    if move_corrupt:
        aside = move_aside(path, now)
        return state, ["State file %s was unreadable (%s); moved it to %s and started from an empty state."
                       % (path, problem, aside)]
    return state, ["State file %s is unreadable (%s); using an empty state. The next state write moves it "
                   "aside to %s.corrupt-<time>-<random>." % (path, problem, path)]


def write_state(path, state):
    """Write ``state`` atomically (0640, private directory), wrapping OS errors."""
    ensure_private_dir(os.path.dirname(os.path.abspath(path)))
    try:
        atomic_write_text(path, dump_state(state), mode=STATE_MODE, dir_mode=DIR_MODE)
    except OSError as exc:
        raise StateError(describe_os_error("write the state file", path, exc))


def dump_state(state):
    # ASCII with \u escapes: a lone surrogate (valid JSON "\ud800" read back from the file, or a stray byte
    # in an error message) round-trips instead of failing every later write with UnicodeEncodeError.
    return json.dumps(state, sort_keys=True, indent=2, ensure_ascii=True) + "\n"
