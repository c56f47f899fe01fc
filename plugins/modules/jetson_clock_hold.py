#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: jetson_clock_hold
short_description: Hold a Jetson at MAXN with jetson_clocks for a benchmark, then restore exactly what was there
version_added: 0.3.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - O(state=held) records the board's power mode and whether its clocks were pinned, saves the clocks with
    C(jetson_clocks --store), selects the MAXN power mode with C(nvpmodel -m) (resolved by name from
    C(/etc/nvpmodel.conf), so C(MAXN_SUPER) and per-release ids work) and pins the clocks with C(jetson_clocks).
  - O(state=released) puts back the recorded power mode, then C(jetson_clocks --restore) the saved clocks, checks
    that the board shows what was recorded, and forgets the record.
  - The record is a file on the host (O(state_dir)); a run that was interrupted while the clocks were held is
    put right by the next one. A hold that finds a record keeps the recorded original.
  - A board already at MAXN with pinned clocks is left alone (nothing to restore); so is a release without a record.
  - When a step fails during O(state=held), what was done is undone before the module fails.
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: Reads the board and returns the steps and the diff it would apply; changes nothing.
  diff_mode:
    support: full
    details: The power mode and clock state before and after.
options:
  state:
    description: Hold the clocks, or restore what a hold recorded.
    type: str
    required: true
    choices: [held, released]
  root:
    description: Read the board's files (C(/etc/nvpmodel.conf), the GPU devfreq node) under this root.
    type: path
    default: /
  run_under_root:
    description:
      - Run the C(nvpmodel) and C(jetson_clocks) found under O(root) (a simulated board's stand-ins) instead of
        the host's. Ignored when O(root) is C(/).
    type: bool
    default: false
  state_dir:
    description: Directory of the hold record and the stored clocks (the rollout's state directory).
    type: path
    default: /var/lib/jetson-specdec
  owner:
    description: Who holds the clocks (the rollout's run id), kept in the record for the operator.
    type: str
  timeout:
    description: Seconds each C(nvpmodel) or C(jetson_clocks) call may take.
    type: int
    default: 60
notes:
  - Needs root on a real board, as C(nvpmodel) and C(jetson_clocks) do.
  - A power mode change that needs a reboot is refused, never confirmed; the module fails and leaves the board as it was.
seealso:
  - module: jetson.specdec.vllm_bench
"""

EXAMPLES = r"""
- name: Hold MAXN and pinned clocks for the benchmark window
  jetson.specdec.jetson_clock_hold:
    state: held
    owner: "{{ rollout_run_id }}"

- name: Benchmark (the samples of vllm_bench show MAXN and pinned clocks)
  jetson.specdec.vllm_bench:
    url: http://127.0.0.1:8000
  register: bench

- name: Put back the power mode and clocks the board had before
  jetson.specdec.jetson_clock_hold:
    state: released
"""

RETURN = r"""
steps:
  description: What was done (or, in check mode, would be) - C(record), C(store), C(mode), C(pin) when holding;
    C(mode), C(restore), C(forget) when releasing.
  returned: always
  type: list
  elements: str
  sample: [record, store, mode, pin]
before:
  description: The board before - C(power_mode) (C(name), C(id)) and C(pinned) (null when unknown).
  returned: always
  type: dict
  sample: {"power_mode": {"name": "30W", "id": 2}, "pinned": false}
after:
  description: The board after (read back; in check mode, what the steps would give).
  returned: always
  type: dict
  sample: {"power_mode": {"name": "MAXN", "id": 0}, "pinned": true}
record:
  description: The hold record kept on the host (what C(released) restores), or null.
  returned: always
  type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_json
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import clock_hold, conditions, probes
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.commands import make_runner
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.files import RootReader


class Board(object):
    """The board's tools and files, as this module uses them."""

    def __init__(self, module):
        params = module.params
        self.module = module
        self.reader = RootReader(params["root"])
        self.run = make_runner(module, params["root"], True, params["run_under_root"], params["timeout"])
        if self.run is None:
            module.fail_json(msg="root=%s is a sysroot: set run_under_root=true to use the nvpmodel and jetson_clocks "
                                 "installed in it, or root=/ on a real board." % params["root"])

    def tool(self, name, args, data=None):
        result = self.run(name, args, data)
        if result is None:
            raise clock_hold.HoldError("%s is not installed on this board (it comes with L4T); holding the clocks "
                                       "needs it: turn rollout_bench_hold_clocks off on this host." % name)
        rc, out, err = result
        text = (out or "") + (err or "")
        # `nvpmodel -q` may print NVPM ERROR lines about sysfs it cannot open and still answer;
        # a mode change that prints one did not happen.
        if rc != 0 or (args[:1] == ["-m"] and "NVPM ERROR" in text):
            if "Reboot required" in text:
                raise clock_hold.HoldError("nvpmodel %s needs a reboot on this board, which a rollout never does: select "
                                           "MAXN yourself (nvpmodel -m, then reboot) or turn rollout_bench_hold_clocks "
                                           "off. nvpmodel said: %s" % (" ".join(args), text.strip()[-300:]))
            raise clock_hold.HoldError("%s %s failed (rc=%s): %s" % (name, " ".join(args), rc, text.strip()[-500:]))
        return text

    def modes(self):
        modes = probes.parse_nvpmodel_conf(self.reader.read_text("etc/nvpmodel.conf"))
        if not modes:  # no readable conf: ask nvpmodel for its list (jetson-stats does the same)
            out = self.tool("nvpmodel", ["-p", "--verbose"])
            modes = dict(clock_hold.parse_mode_list(out))
        return modes

    def state(self):
        mode = probes.parse_nvpmodel_query(self.tool("nvpmodel", ["-q"]))
        return {"power_mode": mode, "pinned": conditions.is_pinned(conditions.read_gpu(self.reader))}


def read_record(path):
    if not os.path.exists(path):
        return None
    try:
        with open(path) as handle:
            record = json.load(handle)
    except (IOError, OSError, ValueError) as exc:
        raise clock_hold.HoldError("cannot read the clock-hold record %s (%s); restore the board's power mode and "
                                   "clocks by hand, then delete the file." % (path, exc))
    return clock_hold.check_record(record, path)


def apply(board, plan, record_path):
    """Run the steps of a plan in order."""
    record = plan.get("record")
    for step in plan["steps"]:
        if step == "record":
            atomic_write_json(record_path, record, mode=0o600, dir_mode=0o750)
        elif step == "store":
            # jetson_clocks asks before overwriting a stored file (and fails unattended); a file
            # without a record is left from a hold that never finished and describes nothing now.
            if os.path.exists(record["store_file"]):
                os.unlink(record["store_file"])
            board.tool("jetson_clocks", ["--store", record["store_file"]])
        elif step == "mode":
            # "NO" answers the prompt of a mode that needs a reboot: never reboot a serving board.
            board.tool("nvpmodel", ["-m", str(plan["after"]["power_mode"]["id"])], data="NO\n")
        elif step == "pin":
            board.tool("jetson_clocks", [])
        elif step == "restore" and os.path.exists(record["store_file"]):
            # absent: the hold stopped before --store, so it changed no clock
            board.tool("jetson_clocks", ["--restore", record["store_file"]])
        elif step == "forget":
            for path in (record.get("store_file"), record_path):
                if path and os.path.exists(path):
                    os.unlink(path)


def hold(module, board, record_path, store_path):
    record = read_record(record_path)
    now = board.state()
    plan = clock_hold.plan_hold(now, board.modes(), record, store_path, module.params.get("owner"))
    if module.check_mode or not plan["steps"]:
        return plan, plan["after"] if plan["steps"] else now
    try:
        apply(board, plan, record_path)
        seen = board.state()
        problem = clock_hold.mismatch(plan["after"], seen)
        if problem:
            raise clock_hold.HoldError("after holding the clocks %s (a mode change that needs a reboot is refused, "
                                       "never confirmed)" % problem)
    except clock_hold.HoldError as exc:
        undo = clock_hold.plan_release(board.state(), plan["record"])
        undo["record"] = plan["record"]
        try:
            apply(board, undo, record_path)
        except clock_hold.HoldError as again:
            raise clock_hold.HoldError("%s; undoing it failed too: %s (the record %s is kept for the next release)"
                                       % (exc, again, record_path))
        raise clock_hold.HoldError("%s; the board was put back to %s." % (exc, clock_hold.describe(now)))
    return plan, seen


def release(module, board, record_path):
    record = read_record(record_path)
    now = board.state()
    plan = clock_hold.plan_release(now, record)
    plan["record"] = record
    if module.check_mode or not plan["steps"]:
        return plan, plan["after"]
    apply(board, plan, record_path)
    seen = board.state()
    problem = clock_hold.mismatch(plan["after"], seen)
    if problem:
        atomic_write_json(record_path, record, mode=0o600, dir_mode=0o750)  # keep it for the next release
        raise clock_hold.HoldError("after restoring the clocks %s; the record %s is kept: fix the board, then run "
                                   "the release again." % (problem, record_path))
    return plan, seen


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", required=True, choices=["held", "released"]),
            root=dict(type="path", default="/"),
            run_under_root=dict(type="bool", default=False),
            state_dir=dict(type="path", default="/var/lib/jetson-specdec"),
            owner=dict(type="str"),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second, got %d." % params["timeout"])
    record_path = os.path.join(params["state_dir"], clock_hold.RECORD_NAME)
    store_path = os.path.join(params["state_dir"], clock_hold.STORE_NAME)
    board = Board(module)
    try:
        if params["state"] == "held":
            plan, seen = hold(module, board, record_path, store_path)
        else:
            plan, seen = release(module, board, record_path)
    except clock_hold.HoldError as exc:
        module.fail_json(msg=str(exc))
    result = {"changed": bool(plan["steps"]), "steps": plan["steps"], "before": plan["before"], "after": seen,
              "record": plan.get("record") if params["state"] == "held" else None}
    if module._diff and plan["steps"]:
        result["diff"] = clock_hold.diff(plan)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
