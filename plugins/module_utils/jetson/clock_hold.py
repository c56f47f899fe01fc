# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Hold a Jetson at MAXN with ``jetson_clocks`` for a benchmark window, and put back exactly what was there.

Standard library only; pure: the module ``jetson_clock_hold`` reads the board, asks
these functions for the steps, runs them and checks the result.

On a Jetson the power mode (``nvpmodel``) and ``jetson_clocks`` move decode speed by
tens of percent, as much as speculation does; a benchmark measured at whatever clocks
the board happened to run at compares the clocks.  Holding them for the benchmark window
is the fix, but the operator chose the mode the board serves at (power budget, heat),
so afterwards the board must run exactly as before:

* hold:    write the record first (what the board ran: power mode, whether the clocks
           were pinned), ``jetson_clocks --store FILE``, ``nvpmodel -m <MAXN id>`` when
           the mode differs, ``jetson_clocks``;
* release: ``nvpmodel -m <recorded id>`` when the mode differs, ``jetson_clocks --restore
           FILE`` (the stored floors and governors; after the mode, because a mode
           change resets the clocks to that mode's defaults), then forget the record.

The record lives on the host, so a run that was interrupted (controller killed, board
rebooted) is put right by the next run: a hold that finds a record keeps the recorded
original (it does not store the held state as "what was there"), a release restores it.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import probes

RECORD_NAME = "clock-hold.json"
STORE_NAME = "clock-hold.l4t_dfs.conf"
RECORD_VERSION = 1
# `nvpmodel -p --verbose`: "NVPM VERB: POWER_MODEL: ID=0 NAME=MAXN" (the regex jetson-stats uses)
_MODE_LINE_RE = re.compile(r"POWER_MODEL: ID=(\d+) NAME=(\w+)")


class HoldError(Exception):
    """The board cannot be held or restored; the text names the rule and the fix."""


def parse_mode_list(output):
    """[(id, name)] from `nvpmodel -p --verbose`."""
    return [(int(i), name) for i, name in _MODE_LINE_RE.findall(output or "")]


def maxn_mode(modes):
    """The id of MAXN (else the lowest MAXN_* such as MAXN_SUPER) in {id: name}, or None.

    Ids differ per module and release (MAXN_SUPER is mode 2 on an Orin Nano Super), so the
    mode is resolved by name from the board's own list, never hard-coded as 0."""
    exact = sorted(i for i, name in modes.items() if name == "MAXN")
    others = sorted(i for i, name in modes.items() if probes.is_maxn(name))
    chosen = (exact or others or [None])[0]
    return None if chosen is None else {"id": chosen, "name": modes[chosen]}


def describe(state):
    """One line for --diff and messages: 'power mode 30W (id 2), clocks under DVFS'."""
    mode = state.get("power_mode") or {}
    pinned = state.get("pinned")
    clocks = {True: "clocks held by jetson_clocks", False: "clocks under DVFS"}.get(pinned, "clocks unknown")
    if not mode:
        return "power mode unknown, %s" % clocks
    return "power mode %s (id %s), %s" % (mode.get("name"), mode.get("id"), clocks)


def _same_mode(one, other):
    return bool(one) and bool(other) and one.get("id") == other.get("id")


def check_record(record, path):
    """A stored record this code can restore from, or a HoldError that says what to do."""
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION \
            or not isinstance(record.get("power_mode"), dict) or "id" not in record["power_mode"]:
        raise HoldError("%s is not a clock-hold record of version %d this collection can restore from; "
                        "restore the board's power mode and clocks by hand (nvpmodel -m <id>, jetson_clocks "
                        "--restore), then delete the file." % (path, RECORD_VERSION))
    return record


def plan_hold(now, modes, record=None, store_path=None, owner=None):
    """What holding the board takes from its state ``now`` ({"power_mode", "pinned"}).

    Returns {"steps": [...], "record": the record to keep (None: nothing to restore later),
    "before": now, "after": the held state}.  Steps: "record", "store", "mode", "pin"."""
    target = maxn_mode(modes)
    if target is None:
        raise HoldError("rollout_bench_hold_clocks needs a MAXN power mode, and this board lists none (%s); "
                        "set the power mode yourself and turn rollout_bench_hold_clocks off."
                        % (", ".join("%s=%s" % (i, n) for i, n in sorted(modes.items())) or "no modes found"))
    mode = now.get("power_mode")
    if not mode or mode.get("id") is None:
        raise HoldError("the board's power mode cannot be read (nvpmodel -q), so it could not be restored "
                        "after the benchmark; fix nvpmodel or turn rollout_bench_hold_clocks off.")
    after = {"power_mode": target, "pinned": True}
    change_mode = not _same_mode(mode, target)
    pin = change_mode or now.get("pinned") is not True
    if record is None and not pin:
        return {"steps": [], "record": None, "before": now, "after": after}
    steps = []
    if record is None:
        record = {"version": RECORD_VERSION, "power_mode": dict(mode), "pinned": now.get("pinned"),
                  "store_file": store_path, "owner": owner}
        steps += ["record", "store"]
    if change_mode:
        steps.append("mode")
    if pin:
        steps.append("pin")
    return {"steps": steps, "record": record, "before": now, "after": after}


def plan_release(now, record):
    """What restoring the recorded state takes.  Steps: "mode", "restore", "forget"."""
    if record is None:
        return {"steps": [], "before": now, "after": now}
    wanted = {"power_mode": record["power_mode"], "pinned": record.get("pinned")}
    steps = []
    if not _same_mode(now.get("power_mode"), record["power_mode"]):
        steps.append("mode")
    if record.get("store_file"):
        steps.append("restore")
    steps.append("forget")
    return {"steps": steps, "before": now, "after": wanted}


def mismatch(expected, seen):
    """Why the board does not show ``expected`` after the steps, or None."""
    problems = []
    if not _same_mode(expected.get("power_mode"), seen.get("power_mode")):
        problems.append("the power mode is %s, not %s" % (
            (seen.get("power_mode") or {}).get("name", "unknown"), expected["power_mode"].get("name")))
    if expected.get("pinned") is not None and seen.get("pinned") is not None \
            and expected["pinned"] != seen["pinned"]:
        problems.append("the GPU clock floor is %s" % ("pinned to its maximum" if seen["pinned"] else "not pinned"))
    return "; ".join(problems) or None


def diff(plan):
    """--diff text: the board before and after this step."""
    return {"before_header": "board clocks", "after_header": "board clocks",
            "before": describe(plan["before"]) + "\n", "after": describe(plan["after"]) + "\n"}
