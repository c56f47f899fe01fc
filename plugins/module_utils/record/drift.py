# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Drift: what runs on a converged host compared with its last good config (stdlib only, Python 3.8+): pure.

A converged host (kept, reverted, refused, off) has its last good config in the state file: the argv of
the launch the rollout left running (``last_good.argv``).  What the host runs can change behind the
collection's back: a hand-edited unit, ``jetson.specdec.deploy -e deploy_force=true``, a trial drop-in
left under /run, a unit changed on disk that systemd has not loaded, a secrets file that is not what the
inventory (the vault) says any more.  ``find_drift`` names each difference and says how the rollout
corrects it:

* ``reapply``: the recorded config is put back (the host's inputs did not change, only what runs);
* ``reevaluate``: the host's inputs changed (the secrets file: an API key added or changed in the vault)
  or the recorded config is a candidate (a kept rung at its tuned k): the host is evaluated again, which
  applies the inputs as the inventory has them now.

A unit that does not serve at all is drift too: systemd gave up on it (``failed``, often after a kept
candidate crash-looped until its start limit), it is restarting after a crash, or it was stopped. On the
baseline the recorded config is started again; on a kept candidate the host is evaluated again, which puts
the baseline back first and keeps a speculative config only if one starts and pays on the board as it is now.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.common.booleans import strict_bool
from ansible_collections.jetson.specdec.plugins.module_utils.launch.systemd import (
    SystemdQuoteError, systemd_command_line,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.unit import exec_start

CONVERGED = ("kept", "reverted", "refused", "off")
RULE = "drift.running_config"


class DriftError(Exception):
    """Input the comparison cannot use; the message names the field."""


def _expected_exec(last_good):
    argv = (last_good or {}).get("argv")
    if not isinstance(argv, list) or not argv:
        return None
    try:
        return "ExecStart=" + systemd_command_line([str(a) for a in argv])
    except SystemdQuoteError:
        return None


def not_serving(running):
    """A sentence when systemd says the unit does not serve (None when it does, or was not asked).

    ``active_state``/``sub_state``/``result`` are systemd's ActiveState, SubState and Result of the unit.
    """
    active = running.get("active_state")
    if active is None:
        return None
    sub = running.get("sub_state") or ""
    result = running.get("result") or ""
    if active == "failed":
        why = " (result %s%s)" % (result, ": it crashed until systemd's restart limit" if result == "start-limit-hit"
                                  else "") if result else ""
        return "vLLM is not serving: systemd gave up on the unit%s" % why
    if active == "activating" and sub == "auto-restart":
        return "vLLM is not serving: the unit is restarting after a crash%s" % (
            " (result %s)" % result if result and result != "success" else "")
    if active in ("inactive", "deactivating"):
        return "vLLM is not serving: the unit is stopped (%s)" % active
    return None


def _short(line, limit=160):
    line = line or ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def find_drift(state, running):
    """Compare ``running`` with the last good config of ``state``; returns {findings, action, rule, restart}.

    ``state``: the host's state (``rollout_state`` of ``jetson.specdec.rollout_state state=read``).
    ``running``: what the host has now - ``unit`` (the unit file's text, None when missing), ``trial``
    (the trial drop-in's text, None when there is none), ``need_daemon_reload`` (systemd has not loaded
    the unit on disk), ``process_argv`` (the running main process's argv, None or empty when none runs),
    ``secrets_differ`` (the secrets file is not what the inventory renders), ``active_state``, ``sub_state``
    and ``result`` (systemd's view of the unit: see ``not_serving``). Missing keys are not compared.

    ``findings`` is a list of sentences (empty: no drift); ``action`` is ``reapply``, ``reevaluate``
    or None; ``restart``: what systemd runs is not the unit on disk, so putting the unit back is not
    enough; ``not_serving``: systemd says the unit does not serve (the evaluation then puts the baseline
    back without first asking the dead server for its health). Only a converged host with a recorded argv is compared: anything else is evaluated anyway.
    """
    if running is None:
        running = {}
    if not isinstance(running, dict):
        raise DriftError("running must be a dict (unit, trial, need_daemon_reload, process_argv, secrets_differ), got %s"
                         % type(running).__name__)
    state = state or {}
    try:
        need_reload = strict_bool("running.need_daemon_reload", running.get("need_daemon_reload"))
        secrets_differ = strict_bool("running.secrets_differ", running.get("secrets_differ"))
    except ValueError as exc:
        raise DriftError(str(exc))
    for key in ("active_state", "sub_state", "result"):
        if running.get(key) is not None and not isinstance(running.get(key), str):
            raise DriftError("running.%s must be systemd's word for the unit (a string), got %s"
                             % (key, type(running.get(key)).__name__))
    out = {"findings": [], "action": None, "rule": RULE, "restart": False, "not_serving": False}
    status = state.get("status")
    last_good = state.get("last_good") or {}
    expected = _expected_exec(last_good)
    if status not in CONVERGED or expected is None:
        return out
    kind = last_good.get("kind") or "baseline"
    findings = out["findings"]
    if "unit" in running:
        unit = running.get("unit")
        trial = running.get("trial")
        if unit is None:
            findings.append("the unit file is missing (the %s recorded as the last good config is not installed)" % kind)
        else:
            effective = exec_start(trial) if trial else None
            effective = effective or exec_start(unit)
            if trial:
                findings.append("a trial drop-in overrides the unit's launch (a converged host runs its unit's launch)")
            if effective != expected:
                findings.append("the unit runs a launch that is not the last good config (%s): %s"
                                % (kind, difference((effective or "ExecStart=")[len("ExecStart="):].split(),
                                                    expected[len("ExecStart="):].split())))
    restart = False
    if need_reload:
        findings.append("the unit on disk is not the one systemd runs (it was changed without a daemon-reload)")
        restart = True
    process = running.get("process_argv")
    if process and not process_runs(process, last_good.get("argv")):
        argv = [str(a) for a in last_good.get("argv")]
        process = [str(a) for a in process]
        if argv[0] in process:  # leave out the interpreter of a console script
            process = process[process.index(argv[0]):]
        findings.append("the running vLLM process runs a launch that is not the last good config (%s): %s"
                        % (kind, difference(process, argv)))
        restart = True
    down = not_serving(running)
    if down:
        findings.append(down)
        out["not_serving"] = True
        restart = True  # putting the unit back changes nothing when the unit on disk is already the recorded one
    unit_drift = bool(findings)
    if secrets_differ:
        findings.append("the secrets file (API key, Hugging Face token) is not what the inventory (vault) sets now")
    if not findings:
        return out
    out["restart"] = restart
    out["action"] = "reevaluate" if secrets_differ or (unit_drift and kind == "candidate") else "reapply"
    return out


def difference(running, wanted):
    """What ``running`` (a list of words) adds to ``wanted`` and what it drops, in their order, shortened."""
    def minus(a, b):
        left = list(b)
        out = []
        for word in a:
            if word in left:
                left.remove(word)
            else:
                out.append(word)
        return out
    added, dropped = minus(running, wanted), minus(wanted, running)
    parts = []
    if added:
        parts.append("it adds %s" % _short(" ".join(added)))
    if dropped:
        parts.append("it drops %s" % _short(" ".join(dropped)))
    return ", ".join(parts) or "the same words in another order"


def process_runs(process, argv):
    """Whether a process's argv (``/proc/<pid>/cmdline``) runs ``argv``: the same list, or ``argv`` after an
    interpreter (a console script such as ``/opt/vllm/bin/vllm`` runs as ``python3 /opt/vllm/bin/vllm ...``)."""
    process = [str(a) for a in process or []]
    argv = [str(a) for a in argv or []]
    if not argv:
        return True
    return process == argv or (len(process) > len(argv) and process[-len(argv):] == argv)


def describe(host, drift):
    """One sentence for the console and the record: the rule, what differs and how it is corrected."""
    findings = (drift or {}).get("findings") or []
    if not findings:
        return ""
    action = (drift or {}).get("action")
    how = ("the recorded config is re-applied" if action == "reapply"
           else "the host is evaluated again (its inputs changed, or its last good config is a tuned candidate)")
    return "%s: %s drifted from its last good config: %s; %s." % (RULE, host, "; ".join(findings), how)
