#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: rollout_state
short_description: Read, write and lock the per-host speculative-decoding rollout state
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - Keeps a JSON state file per Jetson host (status, config hash, last good config, verdict, benchmarks,
    fallback-ladder attempts, ISO 8601 UTC timestamps) so an interrupted rollout is resumed, and a
    converged host is left alone.
  - Writes are atomic (temporary file in the same directory, mode set on the descriptor, fsync, rename); the
    state file is mode 0640 and the lock 0600 (never world-readable), a new directory 0750. A state directory
    owned by another user, or writable by group or others, is refused.
  - Also takes, refreshes (heartbeat) and releases a rollout lock so two controllers never roll out the same
    host at once.
  - Operating-system errors (disk full, read-only filesystem, permission denied) fail the task with the path
    and what to do, never with a traceback.
  - Optionally publishes the state as node_exporter textfile-collector metrics.
options:
  state:
    description:
      - V(read) returns the stored state and never changes anything. A missing file gives an empty default; a
        corrupt file (invalid UTF-8 or JSON, nesting deeper than 64 levels, a field of the wrong type) gives the
        empty default with a warning.
      - A file written by a newer collection (a higher C(schema_version), or a status this version does not
        know) fails every action with a message, and the file is left as it is.
      - V(write) merges the given fields into the state. Changed only when the content differs apart from
        timestamps. A corrupt file is first moved aside to C(<path>.corrupt-<UTC time>-<random>).
      - V(lock) takes O(lock_path) and returns C(lock.token), a random id of this holder. Pass it to V(refresh)
        and V(unlock); the run id alone does not identify the holder (two controllers may use the same one). A
        fresh lock held by anyone else (even with the same O(owner)) fails the task; a lock without a heartbeat
        for longer than O(lock_timeout) (or the timeout its holder declared, whichever is larger) is taken over
        with a warning. Taking over is atomic; of two runs that find the same stale lock, one gets it.
      - With O(config), V(lock) also reads the state under the lock and returns C(needs_rollout) as V(read) does (a
        host another run converged while this one waited is left alone).
      - The age of a lock is measured on the board's boot id and seconds since boot when the holder's last heartbeat
        was in the current boot (a wall-clock step changes nothing), on the wall clock across a reboot.
      - V(refresh) is the heartbeat of the holder of O(token), to call between long steps. It fails when the lock
        is gone or belongs to someone else (taken over or broken by hand), so the rollout must stop.
      - V(unlock) removes the lock if O(token) holds it, or any lock with O(force=true). Unlocking with O(owner)
        only (no token) still works, with a warning, but cannot tell two controllers with one run id apart.
    type: str
    choices: [read, write, lock, refresh, unlock]
    default: read
  path:
    description: State file.
    type: path
    default: /var/lib/jetson-specdec/state.json
  lock_path:
    description: Lock file. Defaults to C(rollout.lock) next to O(path).
    type: path
  owner:
    description:
      - Identifier of this rollout (for example the run id), stored in the lock to tell a human who holds it.
        Required for O(state=lock).
    type: str
  token:
    description:
      - The C(lock.token) returned by O(state=lock). Required for O(state=refresh); identifies the holder for
        O(state=unlock).
      - With O(state=write), the write is also the lock's heartbeat, and it fails, writing nothing, when the lock
        is no longer this holder's.
    type: str
  controller:
    description: Name of the controller taking the lock, shown to whoever finds the lock held.
    type: str
  controller_id:
    description:
      - Who the controller is, kept in the lock (C(jetson.specdec.rollout_controller_id)) - host name, boot id, the
        pid of its C(ansible-playbook) and that process's start time - so that a later run on the same controller
        can tell that this run is gone (C(jetson.specdec.rollout_lock_holder_gone)) and pass O(take_over_token).
    type: dict
  take_over_token:
    description:
      - With O(state=lock), take the lock over when it still carries this token, whatever its age (the caller found
        its holder gone, for example its controller process ended). Any other lock is judged as usual. The replaced
        lock is returned as C(broken).
    type: str
  take_over_reason:
    description: Why the holder of O(take_over_token) is gone, for the warning and the record.
    type: str
  lock_timeout:
    description:
      - Seconds without a heartbeat after which an existing lock counts as stale and is taken over. Stored in
        the lock, so other controllers judge it by the holder's timeout if that is longer than theirs.
      - Default is derived from O(lock_steps) when given, else 3600. With both, the larger one holds, so a short
        O(lock_timeout) never lets another controller take the lock of a run in the middle of its longest step.
    type: int
  lock_steps:
    description:
      - The longest time, in seconds, each step of the rollout may take (health wait, one benchmark level's
        C(max_duration), ...). With O(state=lock) the timeout is at least twice the longest step plus 300 s, which
        holds as long as the role calls O(state=refresh) between steps.
    type: list
    elements: int
  keeper:
    description:
      - With O(state=lock), keep the lock alive from the controller while its C(ansible-playbook) runs (the
        collection's action plugin for this module does it; the module itself ignores the option). A process
        forked from the task's worker stamps C(<lock>.alive) every sixth of C(liveness) seconds over the task's
        connection while the lock carries this run's token, and stops when that C(ansible-playbook) ends or the
        lock is no longer the run's. A lock so stamped is stale after C(liveness) seconds without a stamp or a
        heartbeat, whatever O(lock_timeout) says - a dead controller's lock is taken over within minutes, a live
        one never ages in a long step or while its host waits for the others of its batch.
      - Only connections that run each command in a process of their own (ssh, local, docker, podman, lxc, lxd,
        chroot, buildah) can be shared with the keeper; with others the lock is judged by O(lock_timeout) and
        RV(keeper) says why.
    type: dict
    suboptions:
      liveness:
        description: Seconds without a stamp after which the lock is stale (0 - no keeper; otherwise at least 10).
        type: int
      lifetime:
        description: Seconds after which the keeper stops in any case (default two days).
        type: int
  take_over_gone:
    description:
      - With O(state=lock), when the lock is held by a run of this very controller whose C(ansible-playbook) has
        ended (C(jetson.specdec.rollout_lock_holder_gone), read from the lock's O(controller_id)), take it over at
        once with O(take_over_token) in the same task (the collection's action plugin for this module does it; the
        module itself ignores the option). A lock that cannot be taken fails with what the operator can do.
    type: bool
    default: false
  break_lock:
    description:
      - With O(state=lock), take the lock over whoever holds it (the lock of an interrupted run the operator
        knows is dead), in one step under the guard. The replaced lock is returned as C(broken), for the record.
    type: bool
    default: false
  force:
    description:
      - With O(state=unlock), remove the lock whoever holds it.
      - With O(state=read) or O(state=lock) and O(config), report C(needs_rollout=true) even on a converged host.
    type: bool
    default: false
  config:
    description:
      - What defines the candidate (unit content hash, speculative config, model, runtime version).
      - The module stores its sha256 over canonical JSON as C(config_hash). With O(state=read) it is only
        compared with the stored hash to compute C(needs_rollout).
    type: dict
  status:
    description: New rollout status (O(state=write)).
    type: str
    choices: [pending, kept, reverted, refused, "off", baseline, failed]
  last_good:
    description: Last known good configuration, for example C({config_hash, unit_backup}).
    type: dict
  verdict:
    description: Verdict dict (the M(jetson.specdec.rollout_verdict) / M(jetson.specdec.spec_decide) result).
    type: dict
  benchmarks:
    description: Bench results by phase (V(baseline), V(candidate)) and V(rounds), one line per verdict round.
    type: dict
  attempts:
    description: Replace the list of fallback-ladder attempts.
    type: list
    elements: dict
  attempt:
    description: Append one fallback-ladder attempt; it gets a C(recorded_at) timestamp.
    type: dict
  info:
    description: Identity for reports and metrics, for example C({method, model, family, simulated}).
    type: dict
  error:
    description: Error text of a failed attempt (an empty string clears it).
    type: str
  outcome:
    description:
      - The fields of O(state=write) as one dict, for example the whole outcome of a finished host
        (C(jetson.specdec.rollout_state_outcome)), so that it is computed once.
      - Mutually exclusive with O(status), O(last_good), O(verdict), O(benchmarks), O(attempts), O(info) and O(error).
    type: dict
    suboptions:
      status:
        description: As O(status).
        type: str
        choices: [pending, kept, reverted, refused, "off", baseline, failed]
      last_good:
        description: As O(last_good).
        type: dict
      verdict:
        description: As O(verdict).
        type: dict
      benchmarks:
        description: As O(benchmarks).
        type: dict
      attempts:
        description: As O(attempts).
        type: list
        elements: dict
      info:
        description: As O(info).
        type: dict
      error:
        description: As O(error).
        type: str
  textfile_dir:
    description:
      - node_exporter textfile-collector directory, for example C(/var/lib/node_exporter/textfile_collector).
      - When set, O(state=write) also writes C(jetson_specdec.prom) there atomically. Null turns this off.
    type: path
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
    details: Nothing is written; a corrupt state file is reported but not moved aside; a lock is not created,
      refreshed or removed.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: O(state=write) returns the state file before and after.
notes:
  - Timestamps are ISO 8601 UTC, for example C(2026-03-01T12:00:00Z).
"""

EXAMPLES = r"""
# The life of one rollout on a host, the way jetson.specdec.rollout uses the module.
- name: Does this host need a rollout (a different config hash, or no verdict yet)?
  jetson.specdec.rollout_state:
    state: read
    config: {baseline: ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"], method: eagle3, k: 5}
  register: rollout_state_read

- name: Take the rollout lock
  jetson.specdec.rollout_state:
    state: lock
    owner: 20261201T020000-canary
    controller: "{{ lookup('ansible.builtin.pipe', 'hostname') }}"
    lock_steps: [600, 1800]  # the longest health wait and benchmark: the timeout is at least twice the longest
    config: {baseline: ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"], method: eagle3, k: 5}
  register: rollout_state_lock  # needs_rollout again, under the lock
  when: rollout_state_read.needs_rollout

- name: Heartbeat between long steps
  jetson.specdec.rollout_state:
    state: refresh
    token: "{{ rollout_state_lock.lock.token }}"
  when: rollout_state_read.needs_rollout

- name: Record the verdict (also exported as node_exporter textfile metrics)
  jetson.specdec.rollout_state:
    state: write
    status: kept
    config: {baseline: ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"], method: eagle3, k: 5}
    verdict: {decision: keep, reasons: ["Throughput at concurrency 1 rose 41.2% (28.1 -> 39.7 tok/s)."]}
    info: {method: eagle3, model: meta-llama/Llama-3.1-8B-Instruct, family: thor, simulated: false}
    textfile_dir: /var/lib/node_exporter/textfile_collector
    token: "{{ rollout_state_lock.lock.token }}"  # also the lock's heartbeat
  when: rollout_state_read.needs_rollout

- name: The same write with the fields as one dict (computed once, for example by a filter)
  jetson.specdec.rollout_state:
    state: write
    config: {baseline: ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"], method: eagle3, k: 5}
    outcome:
      status: reverted
      verdict: {decision: revert, reasons: ["Throughput at concurrency 8 fell 12.0%."]}
      last_good: {kind: baseline, argv: ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]}
    token: "{{ rollout_state_lock.lock.token }}"

- name: Release the lock (in an always section)
  jetson.specdec.rollout_state:
    state: unlock
    token: "{{ rollout_state_lock.lock.token }}"
  when: rollout_state_read.needs_rollout

- name: Clear a lock left by a crashed run
  jetson.specdec.rollout_state:
    state: unlock
    force: true

- name: Or clear it and take it in one step
  jetson.specdec.rollout_state:
    state: lock
    owner: 20261201T030000-retry
    break_lock: true
"""

RETURN = r"""
path:
  description: State file path.
  returned: always
  type: str
rollout_state:
  description: The state after the action (the stored one for read, lock and unlock).
  returned: always
  type: dict
  contains:
    schema_version: {description: State schema version., type: int}
    status: {description: "pending, kept, reverted, refused, off, baseline, failed or null.", type: str}
    config_hash: {description: sha256 of the candidate config., type: str}
    config: {description: The candidate config that was hashed., type: dict}
    last_good: {description: Last known good config reference., type: dict}
    verdict: {description: Stored verdict., type: dict}
    benchmarks: {description: Bench results by phase., type: dict}
    attempts: {description: Fallback-ladder records., type: list}
    info: {description: Identity used by reports and metrics., type: dict}
    error: {description: Last error., type: str}
    created_at: {description: ISO 8601 UTC time of the first write., type: str}
    updated_at: {description: ISO 8601 UTC time of the last content change., type: str}
config_hash:
  description: sha256 of O(config).
  returned: when O(config) is given
  type: str
needs_rollout:
  description: Whether the host must go through a rollout for O(config).
  returned: when O(config) is given with O(state=read) or O(state=lock)
  type: bool
needs_rollout_reason:
  description: Why (or why not), in one sentence.
  returned: when O(config) is given with O(state=read) or O(state=lock)
  type: str
lock:
  description:
    - Lock holder C({owner, controller, controller_id, token, started_at, refreshed_at, timeout, pid, boot_id, uptime})
      taken, refreshed or released (null when there was no lock to release). C(pid) is the module's process on the
      host; C(boot_id) and C(uptime) the board's boot and seconds since it at the last heartbeat.
  returned: with O(state=lock), O(state=refresh) or O(state=unlock)
  type: dict
keeper:
  description:
    - The lock's keeper (O(keeper)) - C(started), C(pid) (the keeper process on the controller), C(liveness),
      C(interval), C(lock_path); or C(started=false) and C(why).
  returned: with O(state=lock) and O(keeper), outside check mode
  type: dict
  sample: {started: true, pid: 41235, liveness: 120, interval: 20, lock_path: /var/lib/jetson-specdec/rollout.lock}
broken:
  description: The lock O(break_lock) removed (its holder), or null when there was none.
  returned: with O(state=lock) and O(break_lock=true)
  type: dict
lock_held:
  description:
    - On failure, V(true) when another holder has the lock (wait, or break it), V(false) for any other cause
      (disk full, read-only filesystem, a newer state file, ...), whose message says what to fix.
  returned: on failure
  type: bool
holder:
  description: The lock's current holder, when O(state=lock), O(state=refresh) or O(state=unlock) failed on it.
  returned: when RV(lock_held) is true
  type: dict
clock_hold:
  description:
    - Whether a clock-hold record of M(jetson.specdec.jetson_clock_hold) is in the state directory - clocks held by a
      run that has not released them yet (a running one, or an interrupted one, whose clocks the next holder of the lock releases).
  returned: always
  type: bool
textfile:
  description: Path of the textfile-collector file written (or that would be written in check mode).
  returned: with O(state=write) and O(textfile_dir)
  type: str
"""

import copy
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.jetson.clock_hold import RECORD_NAME as CLOCK_HOLD_RECORD
from ansible_collections.jetson.specdec.plugins.module_utils.record import lock as rollout_lock
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import (
    LockHeld, StateError, config_hash, content_differs, describe_os_error, dump_state, merge_state, needs_rollout,
    read_state, utc_now, write_state,
)
from ansible_collections.jetson.specdec.plugins.module_utils.record.textfile import render, write_textfile

# The fields of state=write: options of their own, and the suboptions of ``outcome`` (the same fields as one dict).
_FIELD_OPTIONS = dict(
    status=dict(type="str", choices=["pending", "kept", "reverted", "refused", "off", "baseline", "failed"]),
    last_good=dict(type="dict"),
    verdict=dict(type="dict"),
    benchmarks=dict(type="dict"),
    attempts=dict(type="list", elements="dict"),
    info=dict(type="dict"),
    error=dict(type="str"),
)
_WRITE_FIELDS = tuple(_FIELD_OPTIONS)


def _write(module, p, now, result):
    current, warnings = read_state(p["path"], now, move_corrupt=not module.check_mode)
    for w in warnings:
        module.warn(w)
    fields = p["outcome"] or p
    updates = dict((k, fields[k]) for k in _WRITE_FIELDS if fields.get(k) is not None)
    if p["config"] is not None:
        updates["config"] = p["config"]
        updates["config_hash"] = result["config_hash"]
    new = merge_state(current, updates, now, attempt=p["attempt"])
    changed = content_differs(current, new)
    if changed and not module.check_mode:
        write_state(p["path"], new)
    if module._diff:
        result["diff"] = {"before": dump_state(current), "after": dump_state(new),
                          "before_header": p["path"], "after_header": p["path"]}
    if p["textfile_dir"]:
        try:
            tf_changed, tf_path = write_textfile(p["textfile_dir"], render(new), check_mode=module.check_mode)
        except OSError as exc:
            raise StateError(describe_os_error("write the textfile-collector metrics in", p["textfile_dir"], exc)
                             + " The state file itself was written.")
        result["textfile"] = tf_path
        changed = changed or tf_changed
    result.update(changed=changed, rollout_state=new)


def _lock_action(module, p, lock_path, now, result):
    clock = rollout_lock.board_clock()
    if p["state"] == "lock":
        timeout = p["lock_timeout"]
        if p["lock_steps"]:
            derived = rollout_lock.lock_timeout_for(p["lock_steps"])
            timeout = derived if timeout is None else max(timeout, derived)
        elif timeout is None:
            timeout = rollout_lock.DEFAULT_TIMEOUT
        if p["break_lock"]:
            holder, result["broken"] = rollout_lock.take_over(lock_path, p["owner"], p["controller"], now, timeout,
                                                              check_mode=module.check_mode, clock=clock,
                                                              controller_id=p["controller_id"])
            changed, warnings = True, []
            if result["broken"]:
                warnings.append("Took over the rollout lock %s from %s (break_lock); that run can no longer change "
                                "this host." % (lock_path, rollout_lock.describe(result["broken"])))
        else:
            prior = rollout_lock.read_holder(lock_path) if p["take_over_token"] else None
            changed, holder, warnings = rollout_lock.acquire(lock_path, p["owner"], p["controller"], now, timeout,
                                                             token=p["token"], check_mode=module.check_mode,
                                                             clock=clock, controller_id=p["controller_id"],
                                                             take_over_token=p["take_over_token"],
                                                             take_over_reason=p["take_over_reason"])
            if changed and prior and prior.get("token") == p["take_over_token"]:
                result["broken"] = prior
    elif p["state"] == "refresh":
        holder = rollout_lock.refresh(lock_path, p["token"], now, timeout=p["lock_timeout"],
                                      check_mode=module.check_mode, clock=clock)
        changed, warnings = False, []
    else:
        changed, holder, warnings = rollout_lock.release(lock_path, token=p["token"], owner=p["owner"],
                                                         force=p["force"], check_mode=module.check_mode,
                                                         controller=p["controller"])
    for w in warnings:
        module.warn(w)
    result.update(changed=changed, lock=holder)


def _read_under_lock(module, p, lock_path, now, result):
    """The state as this run will find it, read under the lock just taken. A state file that cannot be
    read (a newer schema, say) fails like read does, and the lock is released first: nobody else would."""
    try:
        stored, warnings = read_state(p["path"], now)
    except StateError:
        if not module.check_mode and result.get("lock"):
            rollout_lock.release(lock_path, token=result["lock"]["token"])
        raise
    for w in warnings:
        module.warn(w)
    needed, reason = needs_rollout(stored, result["config_hash"], p["force"])
    result.update(rollout_state=stored, needs_rollout=needed, needs_rollout_reason=reason)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="read", choices=["read", "write", "lock", "refresh", "unlock"]),
            path=dict(type="path", default="/var/lib/jetson-specdec/state.json"),
            lock_path=dict(type="path"),
            owner=dict(type="str"),
            token=dict(type="str", no_log=False),
            controller=dict(type="str"),
            controller_id=dict(type="dict"),
            take_over_token=dict(type="str", no_log=False),
            take_over_reason=dict(type="str"),
            lock_timeout=dict(type="int"),
            lock_steps=dict(type="list", elements="int"),
            # used by the action plugin (plugins/action/rollout_state.py), which forks the keeper
            keeper=dict(type="dict", options=dict(liveness=dict(type="int"), lifetime=dict(type="int"))),
            take_over_gone=dict(type="bool", default=False),  # the action's too: it takes over a gone run's lock
            force=dict(type="bool", default=False),
            break_lock=dict(type="bool", default=False),
            config=dict(type="dict"),
            attempt=dict(type="dict"),
            outcome=dict(type="dict", options=copy.deepcopy(_FIELD_OPTIONS)),
            textfile_dir=dict(type="path"),
            **copy.deepcopy(_FIELD_OPTIONS)
        ),
        required_if=[("state", "lock", ("owner",)), ("state", "refresh", ("token",))],
        mutually_exclusive=[("outcome", field) for field in _WRITE_FIELDS],
        supports_check_mode=True,
    )
    p = module.params
    lock_path = p["lock_path"] or os.path.join(os.path.dirname(p["path"]), "rollout.lock")
    if p["state"] == "unlock" and not (p["owner"] or p["token"] or p["force"]):
        module.fail_json(msg="state=unlock needs token (lock.token from state=lock) or force=true to remove "
                             "whatever lock is there")
    if p["lock_timeout"] is not None and p["lock_timeout"] < 0:
        module.fail_json(msg="lock_timeout must be >= 0 seconds, got %d" % p["lock_timeout"])
    now = utc_now()
    # A hold of the clocks that no release followed (the run was interrupted): whoever takes the lock next
    # releases it (roles/rollout), also on a host that needs no rollout.
    result = dict(changed=False, path=p["path"],
                  clock_hold=os.path.lexists(os.path.join(os.path.dirname(p["path"]), CLOCK_HOLD_RECORD)))
    try:
        if p["config"] is not None:
            result["config_hash"] = config_hash(p["config"])
        if p["state"] == "read":
            stored, warnings = read_state(p["path"], now)
            for w in warnings:
                module.warn(w)
            result["rollout_state"] = stored
            if p["config"] is not None:
                needed, reason = needs_rollout(stored, result["config_hash"], p["force"])
                result.update(needs_rollout=needed, needs_rollout_reason=reason)
        elif p["state"] == "write":
            if p["token"]:
                rollout_lock.refresh(lock_path, p["token"], now, check_mode=module.check_mode,
                                     clock=rollout_lock.board_clock())
            _write(module, p, now, result)
        else:
            _lock_action(module, p, lock_path, now, result)
            if p["state"] == "lock" and p["config"] is not None:
                _read_under_lock(module, p, lock_path, now, result)
            else:
                try:
                    result["rollout_state"] = read_state(p["path"], now)[0]
                except StateError:
                    # The lock works whatever the state file holds; read/write report that.
                    result["rollout_state"] = None
    except LockHeld as exc:
        # The role words "wait or break the lock" only for this failure, not for a full disk.
        module.fail_json(msg=str(exc), lock_held=True, holder=exc.holder, **result)
    except StateError as exc:
        module.fail_json(msg=str(exc), lock_held=False, **result)
    except (OSError, IOError) as exc:  # anything not wrapped below: still no traceback
        module.fail_json(msg=describe_os_error("update", p["path"], exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
