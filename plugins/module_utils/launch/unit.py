# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""What applying a launch changes on a host (stdlib only, Python 3.8+): pure, no I/O.

A launch is written either into the unit under /etc (the last good launch, what a reboot
starts) or, as a trial, into a runtime drop-in under /run that overrides only its
ExecStart= (a reboot forgets it). ``plan_apply`` compares what the host has with what the
launch wants and says which files to write or remove and whether vLLM must restart;
``jetson.specdec.vllm_unit`` carries it out.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def exec_start(text):
    """The ExecStart= line that takes effect in a unit or drop-in text (the last non-empty one), or None.

    A drop-in clears the unit's command with an empty ``ExecStart=`` and then sets its own.
    """
    found = None
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("ExecStart=") and line != "ExecStart=":
            found = line
    return found


def plan_apply(unit_now, trial_now, unit_wanted=None, trial_wanted=None, restart=False, state="started"):
    """Decide the writes, the reload and the restart of one apply.

    ``unit_now`` / ``trial_now``: the texts on the host (None: no such file).
    Exactly one of ``unit_wanted`` (write the unit, remove any trial) and ``trial_wanted``
    (write the trial drop-in over the existing unit) is given. ``restart``: restart even when
    no file changes (the secrets file changed). Returns a dict: ``write_unit``,
    ``write_trial``, ``remove_trial``, ``reload``, ``restart``, ``promoted`` and ``refusal``
    (a sentence, or None).
    """
    if (unit_wanted is None) == (trial_wanted is None):
        raise ValueError("give either the unit or the trial drop-in to write")
    out = {"write_unit": False, "write_trial": False, "remove_trial": False, "reload": False,
           "restart": False, "promoted": False, "refusal": None}
    if trial_wanted is not None:
        if unit_now is None:
            # A reboot during the trial must have a last good launch to come back to (check mode
            # still says what the trial would write).
            out["refusal"] = "no_unit"
        out["write_trial"] = trial_now != trial_wanted
    else:
        out["write_unit"] = unit_now != unit_wanted
        out["remove_trial"] = trial_now is not None
    changed = out["write_unit"] or out["write_trial"] or out["remove_trial"]
    out["reload"] = changed
    # A kept candidate: the unit now holds the very launch its running trial runs, so it
    # becomes the unit's launch as it runs (reload, no restart).
    out["promoted"] = (unit_wanted is not None and trial_now is not None and not restart
                       and exec_start(trial_now) is not None and exec_start(trial_now) == exec_start(unit_wanted))
    out["restart"] = state == "started" and ((changed and not out["promoted"]) or bool(restart))
    return out
