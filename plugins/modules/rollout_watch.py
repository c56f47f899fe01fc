#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: rollout_watch
short_description: Watch a kept host's live vLLM metrics against the evidence it was kept on
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - Reads the host's rollout state file. A host whose status is not C(kept) has nothing to watch (C(not_kept)).
  - For a kept host, scrapes vLLM's C(/metrics) on the board twice, O(window) seconds apart, and takes the
    differences of the real vLLM series - C(vllm:spec_decode_num_accepted_tokens_total) over
    C(vllm:spec_decode_num_draft_tokens_total) (acceptance), C(vllm:spec_decode_num_accepted_tokens_per_pos_total)
    (per position), the C(vllm:request_time_per_output_token_seconds) and C(vllm:time_to_first_token_seconds)
    histograms (mean TPOT and TTFT), C(vllm:request_success_total) (finished requests) and
    C(vllm:request_inference_time_seconds) (mean concurrency, by Little's law).
  - Compares them with the candidate's acceptance and TPOT recorded when the verdict kept it (TPOT at the recorded
    concurrency level nearest the window's mean concurrency). C(drifted) when acceptance fell by more than
    O(acceptance_drop) or TPOT rose by more than O(tpot_rise), relative to the kept values, or the server does not
    speculate at all; C(steady) otherwise. Too few requests or drafted tokens in the window give
    C(not_enough_traffic), a server restart inside the window C(restarted), neither is a verdict.
  - Writes the result as node_exporter textfile metrics (C(jetson_specdec_watch.prom), next to the rollout's
    C(jetson_specdec.prom)). The module changes nothing else; acting on a drifted host is the playbook's part
    (jetson.specdec.watch with C(rollout_watch_action)).
  - Standard library only; runs on the board and reads C(/metrics) on its loopback.
extends_documentation_fragment:
  - jetson.specdec.attributes
options:
  path:
    description: The rollout state file.
    type: path
    default: /var/lib/jetson-specdec/state.json
  url:
    description: vLLM's metrics endpoint, seen from the board.
    type: str
    default: http://127.0.0.1:8000/metrics
  window:
    description: Seconds between the two scrapes.
    type: float
    default: 60
  min_requests:
    description: Fewer finished requests in the window give C(not_enough_traffic).
    type: int
    default: 20
  min_draft_tokens:
    description: Fewer drafted tokens in the window give C(not_enough_traffic).
    type: int
    default: 200
  acceptance_drop:
    description: Relative fall of acceptance below the kept acceptance that counts as drift (0.25 is a quarter).
    type: float
    default: 0.25
  tpot_rise:
    description: Relative rise of TPOT over the kept candidate's TPOT that counts as drift.
    type: float
    default: 0.25
  model_name:
    description: Only the series of this served model name (vLLM's C(model_name) label); default every series.
    type: str
  textfile_dir:
    description: node_exporter textfile-collector directory to write C(jetson_specdec_watch.prom) into; omit to
      write nothing.
    type: path
  host:
    description: The host's name in the reasons and next steps (the playbook passes the inventory name).
    type: str
  timeout:
    description: Seconds each scrape may take.
    type: float
    default: 10
attributes:
  check_mode:
    support: full
    details: Scrapes and judges in check mode too; the textfile is not written.
"""

EXAMPLES = r"""
- name: Watch this kept host for a minute
  jetson.specdec.rollout_watch:
    path: /var/lib/jetson-specdec/state.json
    url: http://127.0.0.1:8000/metrics
    window: 60
    textfile_dir: /var/lib/node_exporter/textfile_collector
  register: watched

- name: Say what the watch found
  ansible.builtin.debug:
    msg: "{{ watched.watch.status }}: {{ watched.watch.reasons | join(' ') }}"
"""

RETURN = r"""
watch:
  description: What the watch found.
  returned: always
  type: dict
  contains:
    status:
      description: One of C(steady), C(drifted), C(not_enough_traffic), C(not_kept), C(no_evidence), C(restarted),
        C(unreachable).
      type: str
    drifted:
      description: True when the host's acceptance or TPOT drifted beyond what the verdict assumed.
      type: bool
    reasons:
      description: Sentences with the numbers.
      type: list
      elements: str
    next_step:
      description: What an operator does next (null when nothing is to be done).
      type: str
    observed:
      description: The window (requests, acceptance, per_position, tpot_s, ttft_s, mean_concurrency, window_s).
      type: dict
    evidence:
      description: What the host was kept on (acceptance, per_position, TPOT per concurrency level).
      type: dict
    checks:
      description: Each comparison with its bound.
      type: dict
textfile:
  description: The textfile written (absent without O(textfile_dir)).
  returned: when textfile_dir is set
  type: str
"""

import datetime
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.jetson.specdec.plugins.module_utils.bench.prometheus import parse_text
from ansible_collections.jetson.specdec.plugins.module_utils.record import watch as watchlib
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import StateError, read_state, utc_now
from ansible_collections.jetson.specdec.plugins.module_utils.record.textfile import render_families, write_textfile


def _scrape(url, timeout):
    resp = open_url(url, timeout=timeout, validate_certs=False)
    return parse_text(resp.read().decode("utf-8", "replace"))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/var/lib/jetson-specdec/state.json"),
            url=dict(type="str", default="http://127.0.0.1:8000/metrics"),
            window=dict(type="float", default=60.0),
            min_requests=dict(type="int", default=20),
            min_draft_tokens=dict(type="int", default=200, no_log=False),
            acceptance_drop=dict(type="float", default=0.25),
            tpot_rise=dict(type="float", default=0.25),
            model_name=dict(type="str"),
            textfile_dir=dict(type="path"),
            host=dict(type="str"),
            timeout=dict(type="float", default=10.0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        params = watchlib.validate_params({"window_s": p["window"], "min_requests": p["min_requests"],
                                           "min_draft_tokens": p["min_draft_tokens"],
                                           "acceptance_drop": p["acceptance_drop"], "tpot_rise": p["tpot_rise"]})
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if not str(p["url"]).startswith(("http://", "https://")):
        module.fail_json(msg="rollout_watch: url must be an http(s) URL of vLLM's /metrics, got %r" % p["url"])
    try:
        state, warnings = read_state(p["path"], utc_now())
    except StateError as exc:
        module.fail_json(msg=str(exc))
    for w in warnings:
        module.warn(w)
    host = p["host"] or "this host"
    if state.get("status") != "kept":
        result = {"status": "not_kept", "drifted": False, "observed": None, "evidence": None, "checks": {},
                  "reasons": ["Nothing to watch: the state says %s, not kept." % (state.get("status") or "nothing")],
                  "next_step": None}
    else:
        evid = watchlib.evidence(state)
        try:
            before = _scrape(p["url"], p["timeout"])
            start = time.monotonic()
            time.sleep(params["window_s"])
            after = _scrape(p["url"], p["timeout"])
            seconds = time.monotonic() - start
        except Exception as exc:  # any transport error: the host does not serve its metrics
            result = {"status": "unreachable", "drifted": False, "observed": None, "evidence": evid, "checks": {},
                      "reasons": ["vLLM's metrics at %s did not answer: %s." % (p["url"], exc)],
                      "next_step": "Check that vLLM serves on the board (systemctl status vllm)."}
        else:
            obs = watchlib.observe(before, after, seconds, p["model_name"],
                                   (evid or {}).get("time_scale") or 1.0)
            result = watchlib.judge(evid, obs, params, host=host)
    out = dict(changed=False, watch=result)
    if p["textfile_dir"]:
        now = datetime.datetime.now(datetime.timezone.utc).timestamp()
        text = render_families(watchlib.families(result, timestamp=round(now, 3)))
        if not module.check_mode:
            try:
                dummy, out["textfile"] = write_textfile(p["textfile_dir"], text, filename=watchlib.FILENAME)
            except (IOError, OSError) as exc:
                target = os.path.join(p["textfile_dir"], watchlib.FILENAME)
                module.fail_json(msg="rollout_watch: cannot write %s: %s; check the directory exists and is "
                                     "writable (rollout_textfile_dir)" % (target, exc), **out)
        else:
            out["textfile"] = os.path.join(p["textfile_dir"], watchlib.FILENAME)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
