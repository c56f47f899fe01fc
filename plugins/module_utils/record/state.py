# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Per-host rollout state file and rollout lock (stdlib only, Python 3.8+).

The state file survives a crashed play: a host left ``pending`` must be
resolved before anything else happens, and a host already ``kept``,
``reverted`` or ``refused`` for the same config hash is converged.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime
import errno
import hashlib
import json
import os

from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_text, ensure_dir

SCHEMA_VERSION = 1
STATUSES = ("pending", "kept", "reverted", "refused", "baseline", "failed")
CONVERGED = ("kept", "reverted", "refused")
TIMESTAMP_KEYS = ("created_at", "updated_at")
# Fields a caller may set through ``write``; anything else is a typo.
FIELDS = ("status", "config_hash", "config", "last_good", "verdict", "benchmarks",
          "attempts", "info", "error")


class StateError(Exception):
    """Bad input or an unusable state/lock file; the message says what to do."""


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
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


def validate_state(data):
    """Check a loaded state; return it filled with defaults or raise StateError."""
    if not isinstance(data, dict):
        raise StateError("state file does not hold a JSON object")
    version = data.get("schema_version")
    if not isinstance(version, int) or version < 1:
        raise StateError("state file has no valid schema_version")
    if version > SCHEMA_VERSION:
        raise StateError("state file schema_version %d is newer than this collection understands (%d); "
                         "upgrade jetson.specdec on the controller" % (version, SCHEMA_VERSION))
    if data.get("status") is not None and data.get("status") not in STATUSES:
        raise StateError("state file has unknown status %r" % (data.get("status"),))
    out = empty_state()
    out.update(data)
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
    return False, "converged: already %s for config %s" % (status, _short(new_hash))


def _short(h):
    return (h or "none")[:12]


# --------------------------------------------------------------------------- files

def read_state(path, now, move_corrupt=True):
    """Load the state at ``path``.

    Returns (state, warnings).  A missing file gives the empty default.  A
    corrupt file is moved aside to ``<path>.corrupt-<ts>`` (unless
    ``move_corrupt`` is false, e.g. in check mode) and the default is returned.
    """
    warnings = []
    try:
        with open(path, "r", encoding="utf-8") as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return empty_state(), warnings
        raise StateError("cannot read state file %s: %s" % (path, exc))
    try:
        return validate_state(json.loads(raw)), warnings
    except (ValueError, StateError) as exc:
        aside = "%s.corrupt-%s" % (path, now.strftime("%Y%m%dT%H%M%SZ"))
        if move_corrupt:
            os.replace(path, aside)
            warnings.append("State file %s was unreadable (%s); moved it to %s and started from an empty state."
                            % (path, exc, aside))
        else:
            warnings.append("State file %s is unreadable (%s); it would be moved to %s (check mode)."
                            % (path, exc, aside))
        return empty_state(), warnings


def dump_state(state):
    return json.dumps(state, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- lock

def _read_lock(path):
    try:
        with open(path, "r", encoding="utf-8") as handle:
            data = json.loads(handle.read() or "{}")
        return data if isinstance(data, dict) else {}
    except ValueError:
        return {}


def lock_age(holder, path, now):
    """Seconds since the lock was taken (started_at, else file mtime)."""
    started = parse_iso(holder.get("started_at"))
    if started is None:
        started = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
    return (now - started).total_seconds()


def acquire_lock(path, owner, controller, now, timeout=3600, check_mode=False):
    """Take the rollout lock with O_CREAT|O_EXCL.

    Returns (changed, holder, warnings).  Re-taking our own lock is a no-op.
    A lock older than ``timeout`` seconds is taken over with a warning; a
    fresh foreign lock raises LockHeld naming its owner and how to clear it.
    """
    if not owner:
        raise StateError("lock needs an owner id (e.g. the playbook run id) so unlock can tell it is ours")
    payload = {"owner": owner, "started_at": iso(now), "controller": controller}
    warnings = []
    for _attempt in (1, 2):  # second pass only after removing a stale lock
        if check_mode:
            if not os.path.exists(path):
                return True, payload, warnings
        else:
            ensure_dir(os.path.dirname(os.path.abspath(path)))
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    raise StateError("cannot create lock file %s: %s" % (path, exc))
            else:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(json.dumps(payload, sort_keys=True) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
                return True, payload, warnings
        holder = _read_lock(path)
        if holder.get("owner") == owner:
            return False, holder, warnings
        age = lock_age(holder, path, now)
        if age <= timeout:
            raise LockHeld(
                "Rollout lock %s is held by owner %r from controller %r since %s (%d s ago, lock_timeout %d s). "
                "Another rollout is probably running on this host. If it is not, clear the lock with "
                "'jetson.specdec.rollout_state: state=unlock force=true' or delete %s."
                % (path, holder.get("owner"), holder.get("controller"), holder.get("started_at"),
                   age, timeout, path), holder)
        warnings.append("Took over a stale rollout lock %s from owner %r (controller %r, %d s old > lock_timeout %d s)."
                        % (path, holder.get("owner"), holder.get("controller"), age, timeout))
        if check_mode:
            return True, payload, warnings
        try:
            os.unlink(path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise StateError("cannot remove stale lock %s: %s" % (path, exc))
    raise LockHeld("Rollout lock %s was taken by another process while replacing a stale lock; try again."
                   % path, _read_lock(path))


def release_lock(path, owner, force=False, check_mode=False):
    """Remove the lock if it is ours (or ``force``). Returns (changed, holder)."""
    if not os.path.exists(path):
        return False, None
    holder = _read_lock(path)
    if not force and holder.get("owner") != owner:
        raise LockHeld("Rollout lock %s belongs to owner %r (controller %r), not %r. Pass force=true to "
                       "remove it anyway." % (path, holder.get("owner"), holder.get("controller"), owner), holder)
    if not check_mode:
        try:
            os.unlink(path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise StateError("cannot remove lock %s: %s" % (path, exc))
    return True, holder
