#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_unit
short_description: Write a vLLM launch into its systemd unit or a trial drop-in, and restart vLLM only when it changed
version_added: 0.1.0
description:
  - Applies one launch of M(jetson.specdec.vllm_server) in one step - the file, C(systemctl daemon-reload), the
    restart, the service state - where a template, a file task, three handlers and a service task took a
    task each. A rollout applies a host several times (baseline, each rung, each round of the verdict, keep), so
    this is most of what a host costs the controller (docs/scale.md).
  - With O(unit), the launch becomes the unit under C(/etc) (the last good launch, what a reboot starts) and a
    trial drop-in left from an earlier apply is removed. With O(trial), the launch goes into a runtime drop-in
    (O(trial_path), under C(/run), which a reboot empties) that overrides only the unit's C(ExecStart=); the unit
    itself must exist, so a reboot during a trial has a last good launch to come back to.
  - vLLM restarts when a file changed or O(restart) is set, after C(systemctl reset-failed) (a restart the role
    asks for is not a crash and must not hit C(StartLimitBurst=)). When the unit now holds exactly the
    C(ExecStart=) its running trial runs (a kept candidate), the trial becomes the unit's launch as it runs -
    a reload, no restart (RV(promoted)).
  - Does not wait for vLLM to serve; M(jetson.specdec.vllm_wait) does.
author: jetson.specdec contributors (@jetson-specdec)
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: Says what it would write, remove, reload and restart; changes nothing.
  diff_mode:
    support: full
    details: The unit and the drop-in before and after.
options:
  service:
    description: The service name (without C(.service)).
    type: str
    required: true
  unit_path:
    description: The unit file (C(/etc/systemd/system/<service>.service)).
    type: path
    required: true
  unit:
    description: The unit's text. Mutually exclusive with O(trial).
    type: str
  trial_path:
    description: The trial drop-in (under C(/run/systemd/system/<service>.service.d/)).
    type: path
    required: true
  trial:
    description: The trial drop-in's text. Mutually exclusive with O(unit).
    type: str
  restart:
    description: Restart even when no file changed (the secrets file changed), and never promote a trial.
    type: bool
    default: false
  state:
    description: The service's state after the apply.
    type: str
    choices: [started, stopped]
    default: started
  enabled:
    description: Start the service at boot.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Write the launch unit and restart vLLM when it changed
  jetson.specdec.vllm_unit:
    service: vllm
    unit_path: /etc/systemd/system/vllm.service
    unit: "{{ lookup('ansible.builtin.template', 'vllm.service.j2') }}"
    trial_path: /run/systemd/system/vllm.service.d/50-jetson-specdec-trial.conf

- name: Try a speculative launch that a reboot forgets
  jetson.specdec.vllm_unit:
    service: vllm
    unit_path: /etc/systemd/system/vllm.service
    trial_path: /run/systemd/system/vllm.service.d/50-jetson-specdec-trial.conf
    trial: "{{ lookup('ansible.builtin.template', 'vllm.trial.conf.j2') }}"
"""

RETURN = r"""
written:
  description: The files written (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
removed:
  description: The trial drop-in when it was removed (or would be).
  returned: always
  type: list
  elements: str
reloaded:
  description: Whether systemd reloaded its units.
  returned: always
  type: bool
restarted:
  description: Whether vLLM was restarted (or, in check mode, would be).
  returned: always
  type: bool
promoted:
  description: The unit now holds the launch its running trial ran, which kept running (no restart).
  returned: always
  type: bool
started:
  description: Whether a stopped service was started (or would be).
  returned: always
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_text
from ansible_collections.jetson.specdec.plugins.module_utils.launch.unit import plan_apply

MODE = 0o644


def read_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def needs_fixing(path):
    """A file with the right text but another owner or mode (the template task fixed those too)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return (info.st_mode & 0o7777) != MODE or info.st_uid != 0 or info.st_gid != 0


class Systemctl(object):
    def __init__(self, module, service):
        self.module = module
        self.unit = service + ".service"
        self.bin = module.get_bin_path("systemctl", required=True)

    def run(self, *args, **kwargs):
        return self.module.run_command([self.bin] + list(args), **kwargs)

    def must(self, what, *args):
        rc, out, err = self.run(*args)
        if rc != 0:
            self.module.fail_json(msg="Unable to %s service %s: %s" % (what, self.unit, (err or out).strip()),
                                  rc=rc, stdout=out, stderr=err)

    def active(self):
        # As ansible.builtin.systemd_service: a unit that is starting (or waiting to restart) counts as running.
        rc, out, dummy = self.run("show", "--property=ActiveState", "--value", self.unit)
        return rc == 0 and out.strip() in ("active", "activating", "reloading")

    def enabled(self):
        # is-enabled prints enabled, enabled-runtime, alias, static, ... rc 0 means "will start at boot".
        return self.run("is-enabled", "--quiet", self.unit)[0] == 0


def main():
    module = AnsibleModule(
        argument_spec=dict(
            service=dict(type="str", required=True),
            unit_path=dict(type="path", required=True),
            unit=dict(type="str"),
            trial_path=dict(type="path", required=True),
            trial=dict(type="str"),
            restart=dict(type="bool", default=False),
            state=dict(type="str", choices=["started", "stopped"], default="started"),
            enabled=dict(type="bool", default=True),
        ),
        mutually_exclusive=[("unit", "trial")],
        required_one_of=[("unit", "trial")],
        supports_check_mode=True,
    )
    p = module.params
    unit_now, trial_now = read_text(p["unit_path"]), read_text(p["trial_path"])
    plan = plan_apply(unit_now, trial_now, unit_wanted=p["unit"], trial_wanted=p["trial"],
                      restart=p["restart"], state=p["state"])
    if plan["refusal"] and not module.check_mode:
        module.fail_json(msg="A trial overrides the launch unit %s, which this host does not have: apply a launch "
                             "without the trial first (vllm_server's main entry point, or the baseline), so that a "
                             "reboot during the trial has a last good launch to come back to." % p["unit_path"])

    written, removed, diff = [], [], []
    for flag, path, before, after in (("write_unit", p["unit_path"], unit_now, p["unit"]),
                                      ("write_trial", p["trial_path"], trial_now, p["trial"])):
        if plan[flag]:
            written.append(path)
            diff.append({"before_header": path, "after_header": path, "before": before or "", "after": after})
    if plan["remove_trial"]:
        removed.append(p["trial_path"])
        diff.append({"before_header": p["trial_path"], "after_header": "%s (absent)" % p["trial_path"],
                     "before": trial_now, "after": ""})
    fix_owner = [path for path in ([p["unit_path"]] if p["unit"] is not None else [p["trial_path"]])
                 if path not in written and needs_fixing(path)]

    ctl = Systemctl(module, p["service"])
    # Read-only queries, also in check mode: what the service state step would change.
    restarted = plan["restart"]
    started = p["state"] == "started" and not restarted and not ctl.active()
    stopped = p["state"] == "stopped" and ctl.active()
    enable = p["enabled"] != ctl.enabled()
    changed = bool(written or removed or fix_owner or restarted or started or stopped or enable)
    result = dict(changed=changed, written=written, removed=removed, reloaded=plan["reload"], restarted=restarted,
                  promoted=plan["promoted"], started=started)
    if module._diff:
        result["diff"] = diff
    if module.check_mode:
        module.exit_json(**result)

    for path in written:
        atomic_write_text(path, p["unit"] if path == p["unit_path"] else p["trial"], mode=MODE)
    for path in written + fix_owner:
        os.chown(path, 0, 0)
        os.chmod(path, MODE)
    for path in removed:
        os.unlink(path)
    if plan["reload"]:
        ctl.must("reload units of", "daemon-reload")
    if enable:
        ctl.must("enable" if p["enabled"] else "disable", "enable" if p["enabled"] else "disable", ctl.unit)
    if restarted or started:
        # A restart asked for is not a crash: clear the start-limit counter first.
        ctl.run("reset-failed", ctl.unit)
        ctl.must("restart" if restarted else "start", "restart" if restarted else "start", ctl.unit)
    if stopped:
        ctl.must("stop", "stop", ctl.unit)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
