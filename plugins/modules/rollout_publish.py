#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: rollout_publish
short_description: Publish a host's rollout record (spool file and run summary)
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - Finishes the record of one host (its wall time since O(started)), writes it to the run's spool on the
    controller as C(<spool_dir>/<host>.json), atomically (readers never see half a file), and hands it to the
    C(jetson.specdec.specdec_summary) callback through the run's custom stats (as M(ansible.builtin.set_stats)
    would, aggregated under C(jetson_specdec)).
  - Runs on the controller only; the host is not contacted, so a host that could not be reached still publishes
    its record. M(jetson.specdec.fleet_report) builds the fleet report from the spool.
  - A host name that is not a safe file name (a path separator, C(..), control characters) is refused with the
    rule, before anything is written.
extends_documentation_fragment:
  - jetson.specdec.attributes
options:
  record:
    description: The host's record (the C(jetson.specdec.rollout_record) filter's result).
    type: dict
    required: true
  spool_dir:
    description: The run's spool directory on the controller, for example C(<rollout_report_dir>/<run_id>/hosts).
      Created (mode 0750) when missing; the record is written 0640. A C(.) or C(..) component is refused
      (C(input.run_id)), since the record would land outside the report directory.
    type: path
    required: true
  started:
    description: When the host's part of the run started (seconds since the epoch); the record's C(timings.seconds)
      is the time since then (until O(ended)). Without it, C(timings.seconds) is null.
    type: float
  ended:
    description:
      - When the host's part of the run ended (seconds since the epoch); default now.
      - The rollout gives each host the start and end of its own evaluation, so that the hosts of one batch
        (which publish together) do not all read the batch's time.
    type: float
  host:
    description: The name the record is spooled under. Defaults to the inventory host name.
    type: str
  run_id:
    description: The run id templated into O(spool_dir); when given it must be a plain run id (1-128 letters, digits,
      C(.), C(_), C(-) and C(:), starting with a letter or digit, no C(..)), else the task fails with C(input.run_id).
    type: str
  stats:
    description: Also hand the record to the summary callback. V(false) for a record a later task of the run
      replaces (the rollout's queued hosts).
    type: bool
    default: true
  notes:
    description: Notes shown as warnings of this task (empty ones are left out), for example what the rollout's
      check found (boards that share a machine id, drift, why a host is evaluated again).
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    details: The spool is written in check mode too; it is the report of the run, not state of the host.
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: Runs on the controller only.
"""

EXAMPLES = r"""
- name: Publish the record
  jetson.specdec.rollout_publish:
    record: "{{ rollout_record }}"
    started: "{{ rollout_started }}"
    spool_dir: "{{ rollout_report_dir }}/{{ rollout_run_id }}/hosts"
    run_id: "{{ rollout_run_id }}"
  register: rollout_published
"""

RETURN = r"""
record:
  description: The record as published (with C(timings)).
  returned: success
  type: dict
path:
  description: The spool file written.
  returned: success
  type: str
  sample: /srv/reports/20260301T120000Z/hosts/thor-01.json
"""
# Documentation only: the work is done by the action plugin of the same name
# (plugins/action/rollout_publish.py), on the controller.
