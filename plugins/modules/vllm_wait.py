#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_wait
short_description: Wait until a vLLM server answers, or say why it never will
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - Polls C(/health) and C(/v1/models) of a vLLM OpenAI-compatible server until both answer, within a bound.
  - With O(service), it also watches the systemd unit and stops early when the unit failed or is in a crash loop,
    then returns the unit's last journal lines and the cause classified from vLLM's own messages
    (C(kv_cache_shortfall), C(out_of_memory), C(rejected_speculative_config), C(model_not_found), C(bad_arguments),
    C(unknown)).
  - Read-only; never changes anything.
extends_documentation_fragment:
  - jetson.specdec.attributes
  - jetson.specdec.progress
  - jetson.specdec.vllm_server
attributes:
  check_mode:
    support: full
    details: Probes are read-only and run in check mode too.
options:
  service:
    description: The systemd unit that runs the server; enables crash-loop detection and journal excerpts.
    type: str
  unit_missing_ok:
    description:
      - When systemd does not know O(service) (no unit file, C(LoadState=not-found)), return at once with
        RV(unit_missing=true) instead of failing (there is no server to wait for). For a check before the first
        deploy, such as the rollout's look at the running service before it changes anything.
    type: bool
    default: false
  timeout:
    description: Seconds to wait in total.
    type: int
    default: 900
  interval:
    description: Seconds between probes.
    type: int
    default: 5
  crash_loop_restarts:
    description: Restarts of the unit during the wait that count as a crash loop.
    type: int
    default: 3
  journal_lines:
    description: How many journal lines to return in RV(journal) on failure (the cause is classified from the whole journal of the start).
    type: int
    default: 60
  progress_path:
    description:
      - Write the wait's progress to this file after every probe (JSON, replaced atomically) - how long it has
        waited, the unit's state and restarts, the server's last answer.
      - For a wait started with C(async) and C(poll=0) and waited for by M(jetson.specdec.vllm_job_wait), which
        prints it as it goes. Not written in check mode.
    type: path
"""

EXAMPLES = r"""
- name: Wait for the server (reads the unit's journal when it crash-loops)
  jetson.specdec.vllm_wait:
    url: http://127.0.0.1:8000
    service: vllm
    timeout: 600
    interval: 5
    crash_loop_restarts: 3
  register: vllm_wait_result

- name: Show what it serves
  ansible.builtin.debug:
    msg: "vLLM {{ vllm_wait_result.version | default('?') }} serves {{ vllm_wait_result.models | join(', ') }}"

- name: Wait, and say why when it does not come up (cause - out_of_memory, rejected_speculative_config, ...)
  jetson.specdec.vllm_wait:
    url: http://127.0.0.1:8000
    service: vllm
    timeout: 900
  register: vllm_wait_start
  failed_when: false

- name: Stop with the cause the journal names
  ansible.builtin.fail:
    msg: "{{ vllm_wait_start.cause | default('unknown') }}: {{ vllm_wait_start.msg }}"
  when: vllm_wait_start.models is not defined
"""

RETURN = r"""
models:
  description: Model ids served, from C(/v1/models).
  returned: success
  type: list
  elements: str
version:
  description: The server's version from C(/version), or null.
  returned: success
  type: str
elapsed:
  description: Seconds waited.
  returned: always
  type: float
serving_gap_s:
  description:
    - Seconds the service did not serve across the restart this wait followed - from the moment the old server left
      the active state (systemd's ActiveExitTimestamp, it stops answering) to the first healthy answer of the new one.
    - Null without O(service), or when the unit did not restart shortly before or during the wait (first start,
      unchanged unit).
  returned: success
  type: float
  sample: 41.3
stopped_at_monotonic:
  description: When the old server left the active state (seconds of CLOCK_MONOTONIC); names the restart a gap belongs to, so
    two waits after one restart count it once. Null when RV(serving_gap_s) is.
  returned: success
  type: float
  sample: 86412.305
unit_missing:
  description: V(true) when O(unit_missing_ok) found no unit named O(service); nothing was probed.
  returned: when O(unit_missing_ok=true) and the unit does not exist
  type: bool
cause:
  description: Why the server did not come up (only on failure).
  returned: failure
  type: str
journal:
  description: The unit's last journal lines (only on failure with O(service)).
  returned: failure
  type: list
  elements: str
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.jetson.specdec.plugins.module_utils.vllm.health import (
    JOURNAL_SCAN_LINES,
    cause_lines,
    drop_noise,
    http_get,
    parse_systemctl_show,
    served_models,
    serving_gap,
    split_url,
    unit_verdict,
)
from ansible_collections.jetson.specdec.plugins.module_utils.vllm.failure import classify_failure
from ansible_collections.jetson.specdec.plugins.module_utils.vllm.start_progress import snapshot
from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_json

SHOW_PROPS = ["LoadState", "ActiveState", "SubState", "NRestarts", "ExecMainStatus", "Result", "ActiveExitTimestampMonotonic",
              "ActiveEnterTimestampMonotonic"]


def unit_props(module, service):
    cmd = [module.get_bin_path("systemctl", required=True), "show"]
    for prop in SHOW_PROPS:
        cmd += ["-p", prop]
    rc, out, dummy = module.run_command(cmd + ["--", service])
    return parse_systemctl_show(out) if rc == 0 else {}


def journal_since(module, service, since):
    """Every journal line of the unit since the wait began (bounded), without known noise."""
    journalctl = module.get_bin_path("journalctl")
    if not journalctl:
        return []
    cmd = [journalctl, "-u", service, "-n", str(JOURNAL_SCAN_LINES), "--no-pager", "-o", "cat",
           "--since", "@%d" % int(since)]
    rc, out, dummy = module.run_command(cmd)
    return drop_noise(out.splitlines()) if rc == 0 else []


def write_progress(path, snap):
    """Progress is for the operator's eyes: a failed write never fails the wait."""
    try:
        atomic_write_json(path, snap)
    except (IOError, OSError):
        pass


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", default="http://127.0.0.1:8000"),
            service=dict(type="str"),
            api_key=dict(type="str", no_log=True),
            timeout=dict(type="int", default=900),
            interval=dict(type="int", default=5),
            crash_loop_restarts=dict(type="int", default=3),
            unit_missing_ok=dict(type="bool", default=False),
            journal_lines=dict(type="int", default=60),
            progress_path=dict(type="path"),
            # the action plugin's (it takes them out before the module runs): documented with the module
            progress_interval=dict(type="int"),
            progress_label=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        split_url(p["url"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    module.run_command_environ_update = {"LANG": "C", "LC_ALL": "C", "SYSTEMD_PAGER": ""}
    start = time.time()
    start_mono = time.monotonic()
    deadline = start + max(p["timeout"], 1)
    restarts_at_start = 0
    props = unit_props(module, p["service"]) if p["service"] else {}
    if p["unit_missing_ok"] and props.get("LoadState") == "not-found":
        module.exit_json(changed=False, unit_missing=True, elapsed=0.0,
                         msg="systemd has no unit %s: there is no server to wait for" % p["service"])
    try:
        restarts_at_start = int(props.get("NRestarts", "0"))
    except ValueError:
        restarts_at_start = 0
    last = "no answer yet"
    # at once, so that a waiter never reads "no progress yet" while the first probe runs
    if p["progress_path"] and not module.check_mode:
        write_progress(p["progress_path"], snapshot(start, time.time(), p["timeout"], last, props, restarts_at_start))
    while True:
        status, body = http_get(p["url"], "/health", timeout=5.0)
        if status == 200:
            status, body = http_get(p["url"], "/v1/models", p["api_key"], timeout=10.0)
            models = served_models(body) if status == 200 else None
            if models:
                vstatus, vbody = http_get(p["url"], "/version", timeout=5.0)
                version = None
                if vstatus == 200:
                    try:
                        version = json.loads(vbody).get("version")
                    except (ValueError, AttributeError):
                        version = None
                healthy_mono = time.monotonic()
                gap = serving_gap(unit_props(module, p["service"]), start_mono, healthy_mono) if p["service"] else None
                module.exit_json(changed=False, models=models, version=version, elapsed=round(time.time() - start, 1),
                                 serving_gap_s=gap and gap["seconds"],
                                 stopped_at_monotonic=gap and gap["stopped_at_monotonic"])
            last = "/v1/models answered %s: %s" % (status, (body or "")[:200])
        else:
            last = "/health answered %s" % (status if status is not None else body)
        why = None
        props = unit_props(module, p["service"]) if p["service"] else {}
        if p["service"]:
            why = unit_verdict(props, restarts_at_start, p["crash_loop_restarts"])
        if p["progress_path"] and not module.check_mode:
            write_progress(p["progress_path"], snapshot(start, time.time(), p["timeout"], last, props, restarts_at_start))
        if why is None and time.time() + p["interval"] > deadline:
            why = "no healthy answer within %d s (last: %s)" % (p["timeout"], last)
        if why:
            # vLLM's own error may sit far above the last lines (shutdown noise follows it),
            # so the whole journal of this start is classified and its error lines quoted.
            journal = journal_since(module, p["service"], start - 5) if p["service"] else []
            cause = classify_failure("\n".join(journal)) if journal else "unknown"
            if cause == "unknown" and "within" in why:
                cause = "health_timeout"
            quoted = cause_lines(journal) + journal[-10:]
            module.fail_json(
                msg="vLLM at %s did not become ready: %s. Cause: %s.%s" % (
                    p["url"], why, cause, (" Log:\n" + "\n".join(quoted)) if quoted else ""),
                cause=cause, journal=journal[-p["journal_lines"]:], elapsed=round(time.time() - start, 1))
        time.sleep(p["interval"])


if __name__ == "__main__":
    main()
