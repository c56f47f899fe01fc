# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The rollout's per-host record, one event at a time; logic in module_utils/record/record.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.record import drift as running_drift
from ansible_collections.jetson.specdec.plugins.module_utils.record import holder as lock_holder
from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec
from ansible_collections.jetson.specdec.plugins.module_utils.record import wave as rollout_wave

EVENTS = {
    "new": lambda r, host, run_id, jetson, facts_root="/": rec.new_record(host, run_id, jetson, facts_root),
    "stored": rec.from_stored,
    "lock_broken": rec.lock_broken,
    "locked": rec.locked,
    "touched": rec.touched,
    "drift_corrected": rec.drift_corrected,
    "bench": rec.bench,
    "attempt": rec.add_attempt,
    "k_tuned": rec.k_tuned,
    "judged": rec.judged,
    "refused": rec.refused,
    "off": rec.off_by_policy,
    "failed": rec.failed,
    "restore_failed": rec.restore_failed,
    "finish": rec.finish,
}


def rollout_record(record, event, *args, **kwargs):
    """The record after ``event`` (see EVENTS); the input record is not changed."""
    if event not in EVENTS:
        raise AnsibleFilterError("jetson.specdec.rollout_record: unknown event %r; one of %s"
                                 % (event, ", ".join(sorted(EVENTS))))
    try:
        return EVENTS[event](plain(record) if record else {}, *plain(list(args)), **plain(kwargs))
    except (TypeError, rec.RecordError) as exc:
        raise AnsibleFilterError("jetson.specdec.rollout_record(%s): %s" % (event, exc))


def rollout_bench_result(result):
    """The part of a vllm_bench result the record and the state file keep."""
    return rec.bench_result(plain(result))


def rollout_state_outcome(record, applied_argv, baseline_argv, rung, family, model, run_id):
    """The state file's status, verdict, last_good, benchmarks, attempts and info of a finished host."""
    try:
        return rec.state_outcome(plain(record), plain(applied_argv), plain(baseline_argv), plain(rung), family, model,
                                 run_id)
    except rec.RecordError as exc:
        raise AnsibleFilterError("jetson.specdec.rollout_state_outcome: %s" % exc)


def rollout_controller_id(host):
    """This controller as the rollout lock records it: {host, boot_id, pid, start} of its ansible-playbook."""
    return lock_holder.controller_identity(str(host))


def rollout_lock_holder_gone(holder, me):
    """Why the lock's holder is certainly gone (its ansible-playbook on this controller ended), or ""."""
    return lock_holder.holder_gone(plain(holder) if holder else None, plain(me) if me else None)


def rollout_ladder(record, rungs):
    """{next, rung, exhausted}: the fallback rung to try next (or that runs), from the failed attempts."""
    return rec.ladder(plain(record), plain(rungs))


def rollout_rounds(rounds, phase, which="last"):
    """The benchmark results of one arm, without per-request lists: the ``last`` one or ``all`` of them."""
    if which not in ("last", "all"):
        raise AnsibleFilterError("jetson.specdec.rollout_rounds: which must be last or all, got %r" % (which,))
    rounds = plain(rounds)
    if which == "last":
        return rec.compact_result(rec.last_round(rounds, phase))
    return [rec.compact_result(r) for r in rec.phase_results(rounds, phase)]


def rollout_verdict(record, rounds, rungs, broke, params, ttft=None):
    """The verdict of the run so far (record.run_verdict); bad parameters fail naming the rule and the fix."""
    try:
        return rec.run_verdict(plain(record), plain(rounds), plain(rungs), plain(broke), plain(params), plain(ttft))
    except ValueError as exc:
        raise AnsibleFilterError("jetson.specdec.rollout_verdict: %s" % exc)


def rollout_stored_acceptance(state_b64):
    """The acceptance rate of the host's last verdict, from its state file as ansible.builtin.slurp returns it; or None."""
    import base64
    import binascii
    if not state_b64:
        return None
    try:
        text = base64.b64decode(str(state_b64)).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None
    return rec.stored_acceptance(text)


def rollout_drift(state, running, host=""):
    """{findings, action, rule, message}: what runs on a converged host compared with its last good config."""
    try:
        out = running_drift.find_drift(plain(state) if state else None, plain(running) if running else None)
    except running_drift.DriftError as exc:
        raise AnsibleFilterError("jetson.specdec.rollout_drift: %s" % exc)
    out["message"] = running_drift.describe(str(host), out)
    return out


def rollout_wave_key(key, host, play_hosts, hostvars):
    """{key, shared_with, warning}: ``host``'s wave key, its inventory name when ``key`` is a machine id that
    other hosts of the play share (cloned boards would all fall into one wave)."""
    machine_ids = {}
    own = _machine_id(hostvars, host)
    key = plain(key)
    if not (isinstance(key, str) and isinstance(own, str) and key.strip().lower() == own.strip().lower()):
        # not keyed on the machine id (the default, the inventory name): no need to read every host's facts,
        # which per host over a play of thousands would be quadratic
        return rollout_wave.wave_key_for(str(host), key, {})
    for name in plain(play_hosts) or []:
        machine_id = _machine_id(hostvars, name)
        if isinstance(machine_id, str):
            machine_ids[str(name)] = machine_id
    return rollout_wave.wave_key_for(str(host), key, machine_ids)


def _machine_id(hostvars, name):
    """The machine id jetson_facts read on ``name``, or None."""
    try:
        facts = hostvars[name].get("ansible_facts", {}) or {}
    except (KeyError, TypeError, AttributeError):
        return None
    return (facts.get("jetson") or {}).get("machine_id") if isinstance(facts, dict) else None


class FilterModule(object):
    """Record filters of jetson.specdec."""

    def filters(self):
        return {"rollout_record": rollout_record, "rollout_bench_result": rollout_bench_result,
                "rollout_verdict": rollout_verdict, "rollout_ladder": rollout_ladder,
                "rollout_state_outcome": rollout_state_outcome,
                "rollout_rounds": rollout_rounds, "rollout_stored_acceptance": rollout_stored_acceptance,
                "rollout_controller_id": rollout_controller_id, "rollout_lock_holder_gone": rollout_lock_holder_gone,
                "rollout_drift": rollout_drift, "rollout_wave_key": rollout_wave_key}
