# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Staged rollout by waves: which hosts this run may roll out (rollout_wave_percent).

Standard library only.  Every host has a stable bucket 0..99, the first four bytes of
sha256(key) modulo 100, where the key is the board's machine id (/etc/machine-id: stable
across runs, unique per installation, the same whether the controller or the board itself
runs the rollout) or else its inventory name.  A host whose bucket is below the wave's
percentage is in the wave.  Raising the percentage only adds hosts (10 -> 50 -> 100 keeps the
first 10 % in), so an operator widens a change step by step, in push mode as in pull mode,
where the percentage is a variable in the repository the boards pull.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib


class WaveError(ValueError):
    """A wave setting that cannot be applied (the message names the variable and the fix)."""


def wave_bucket(key):
    """The host's bucket, 0..99, from its key (a non-empty string)."""
    if not isinstance(key, str) or not key.strip():
        raise WaveError("rollout_wave_key must be a non-empty string (the board's machine id or its inventory name), "
                        "got %r." % (key,))
    digest = hashlib.sha256(key.strip().encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % 100


def wave_percent(value):
    """rollout_wave_percent as an int 0..100 (templated digit strings included)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
        raise WaveError("input.wave_percent: rollout_wave_percent must be an integer from 0 to 100 (the share of hosts "
                        "this run may roll out), got %r. Fix: set it to 100 to roll out every host." % (value,))
    return value


def wave(key, percent):
    """{in_wave, bucket, percent, reason}: whether the host with ``key`` is in a ``percent`` wave."""
    percent = wave_percent(percent)
    bucket = wave_bucket(key)
    inside = bucket < percent
    if percent == 100:
        reason = "every host is in the wave (rollout_wave_percent 100)"
    elif inside:
        reason = "bucket %d is inside the %d %% wave (rollout_wave_percent)" % (bucket, percent)
    else:
        reason = ("held back: bucket %d is outside the %d %% wave; rollout_wave_percent above %d includes it"
                  % (bucket, percent, bucket))
    return {"in_wave": inside, "bucket": bucket, "percent": percent, "reason": reason}


MACHINE_ID_FIX = ("give each clone its own machine id: `sudo rm /etc/machine-id && sudo systemd-machine-id-setup`, "
                  "then reboot it")


def machine_id_duplicates(machine_ids):
    """Boards that share a machine id (cloned images): [{id, hosts}], ``id`` a short sha256 of the machine id.

    ``machine_ids``: {inventory name: machine id}. Empty, absent and ``uninitialized`` ids are skipped."""
    by_id = {}
    for host, machine_id in (machine_ids or {}).items():
        if isinstance(machine_id, str) and machine_id.strip() and machine_id.strip() != "uninitialized":
            by_id.setdefault(machine_id.strip().lower(), []).append(host)
    return [{"id": hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], "hosts": sorted(hosts)}
            for key, hosts in sorted(by_id.items(), key=lambda kv: sorted(kv[1])) if len(hosts) > 1]


def wave_key_for(host, key, machine_ids):
    """{key, shared_with, warning}: the wave key of ``host``.

    A key that is a machine id other boards of ``machine_ids`` ({inventory name: machine id}) share would put
    all those clones into one wave, so such a host is keyed on its inventory name instead, and the warning
    names the boards and the fix. Any other key is kept as it is."""
    mine = machine_ids.get(host) if isinstance(machine_ids, dict) else None
    if not (isinstance(key, str) and isinstance(mine, str) and key.strip().lower() == mine.strip().lower()):
        return {"key": key, "shared_with": [], "warning": None}
    for group in machine_id_duplicates(machine_ids):
        if host in group["hosts"]:
            others = [h for h in group["hosts"] if h != host]
            warning = ("%s shares its machine id (sha256 %s...) with %s (boards cloned from one image): keyed on the "
                       "machine id they would all fall into the same wave, so %s's wave is keyed on its inventory "
                       "name instead. Fix: %s." % (host, group["id"], ", ".join(others), host, MACHINE_ID_FIX))
            return {"key": host, "shared_with": others, "warning": warning}
    return {"key": key, "shared_with": [], "warning": None}
