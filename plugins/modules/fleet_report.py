#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: fleet_report
short_description: Write the fleet rollout report (JSON, Markdown, HTML) on the controller
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - Writes C(report.json), C(report.md) and C(report.html) into C(<dest_dir>/<run_id>/).
  - The tables are grouped by board family, with per-family medians of the kept hosts; failed and unreachable hosts, and expected
    hosts without a record, are listed separately; simulated hosts carry a SIMULATED label.
  - The report opens with a summary (outcome counts, what the fleet gains as it runs now, the run thresholds and
    benchmark size, every host that needs a human or failed); the change columns are the verdict's own estimates
    with their intervals, and a family's median row takes its kept hosts only.
  - The HTML embeds a chart of the verdict's estimates per family (throughput at concurrency 1 and 8, TPOT p50; a box
    per family and each host with its interval, coloured by outcome; its size does not grow with the host count) as a
    base64 PNG drawn with matplotlib (Agg backend), and lists the outliers. Without matplotlib the HTML holds the
    tables and a note.
  - report.html is one self-contained file (inline CSS, the chart as a data URI) rendered from the collection's
    Jinja2 template C(plugins/plugin_utils/templates/fleet_report.html.j2) with autoescaping on, so host names,
    models and reasons are shown as text whatever they contain.
  - An action that runs on the controller, in the Python that runs Ansible (Jinja2 comes with ansible-core;
    matplotlib is used when installed there); no host is contacted and nothing runs on a board. Run it once, with
    C(run_once=true); C(delegate_to=localhost) is accepted and changes nothing. The files are written as the user
    that runs Ansible.
options:
  records:
    description:
      - Per-host records (as jetson.specdec.rollout writes them, see docs/architecture.md) with keys C(host),
        C(simulated), C(facts) (C(family), C(variant), C(model), C(l4t), C(jetpack),
        C(memory_total_bytes), C(power_mode)), C(config_before), C(config_after), C(baseline) and
        C(candidate) (vllm_bench results or lists of repeats), C(spec_decode), C(verdict), C(attempts), C(timings),
        C(status), C(error). Missing keys show as blanks.
      - With O(read_spool=true) they are added to the spooled ones.
    type: list
    elements: dict
    default: []
  read_spool:
    description:
      - Also read the records the rollout spooled on the controller, C(<dest_dir>/<run_id>/hosts/*.json) (one JSON
        object per host, the file name is not used). Every host of O(expected_hosts) without one is reported
        unreachable (it was unreachable, or the run stopped before it).
    type: bool
    default: false
  dest_dir:
    description: Directory under which the run directory is created.
    type: path
    required: true
  run_id:
    description:
      - Name of the run directory, one plain word (1-128 letters, digits, C(.), C(_), C(-) and C(:), starting with a letter or
        digit, no C(..)); anything else fails with C(input.run_id). Defaults to the UTC time C(YYYYMMDDTHHMMSSZ).
      - The report files are written 0640 in a run directory created 0750.
    type: str
  expected_hosts:
    description: All hosts of the play (for example C(ansible_play_hosts_all)); those without a record are listed as
      unreachable or failed.
    type: list
    elements: str
    default: []
  title:
    description: Report title.
    type: str
    default: jetson.specdec fleet report
  chart:
    description: Draw the chart in the HTML report (needs matplotlib).
    type: bool
    default: true
  low_concurrency:
    description: Concurrency level of the single-stream columns.
    type: int
    default: 1
  high_concurrency:
    description: Concurrency level of the batched-throughput column.
    type: int
    default: 8
  since_last_run:
    description:
      - Compare with the newest report of another run in O(dest_dir) (older than this run's spool) and say what
        changed per host (outcome, what runs, method, k, speculator, vLLM, model), which hosts are new and which
        are gone. An unreadable earlier report is skipped.
    type: bool
    default: true
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: The report is built and its Markdown returned, but no file is written.
"""

EXAMPLES = r"""
# On the controller, after a run of playbooks/rollout.yml: rebuild the report of one run from
# the per-host records spooled under <dest_dir>/<run_id>/hosts/ (what playbooks/report.yml does).
- name: Rebuild the report of a rollout run from its spool
  jetson.specdec.fleet_report:
    read_spool: true
    dest_dir: /var/lib/jetson-specdec/reports
    run_id: 20261201T020000-canary
    expected_hosts: "{{ query('ansible.builtin.inventory_hostnames', 'jetsons') }}"
  delegate_to: localhost
  run_once: true
  register: fleet_report_result

- name: Show the fleet report's summary and where the HTML page is
  ansible.builtin.debug:
    msg: "{{ fleet_report_result.console + ['Report: ' ~ fleet_report_result.html_path] }}"
  run_once: true

# In a play that ran the jetson.specdec.rollout role: each host's record is its fact rollout_record.
- name: Write the report from the records the play holds
  jetson.specdec.fleet_report:
    records: "{{ ansible_play_hosts_all | map('extract', hostvars, 'rollout_record') | select('defined') | list }}"
    expected_hosts: "{{ ansible_play_hosts_all }}"
    dest_dir: "{{ playbook_dir }}/reports"
    run_id: "{{ hostvars['localhost'].rollout_run_id }}"
    chart: false
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
run_dir:
  description: Directory the report files are in.
  returned: always
  type: str
json_path:
  description: Path of report.json.
  returned: always
  type: str
markdown_path:
  description: Path of report.md.
  returned: always
  type: str
html_path:
  description: Path of report.html.
  returned: always
  type: str
markdown:
  description: The Markdown report text.
  returned: always
  type: str
console:
  description:
    - The head of the Markdown report up to the end of its Summary (outcome counts, hosts that need a look, the
      run's settings), one line per item; what the rollout prints. The per-host tables stay in the files.
  returned: always
  type: list
  elements: str
chart:
  description: Whether a chart was embedded in the HTML.
  returned: always
  type: bool
summary:
  description: Host count, decision counts, simulated and missing host counts.
  returned: always
  type: dict
"""
