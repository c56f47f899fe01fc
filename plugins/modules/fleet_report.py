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
  - Run it on the controller, once, with C(delegate_to=localhost) and C(run_once=true). It is the only module of
    the collection that may use a non-standard library (matplotlib), and only when it is installed.
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

- name: Show the fleet report and where the HTML page is
  ansible.builtin.debug:
    msg: "{{ fleet_report_result.markdown.split('\n') + ['Report: ' ~ fleet_report_result.html_path] }}"
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
chart:
  description: Whether a chart was embedded in the HTML.
  returned: always
  type: bool
summary:
  description: Host count, decision counts, simulated and missing host counts.
  returned: always
  type: dict
"""

import base64
import io
import json
import os
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.record.report import (
    build_report, chart_series, render_html, render_markdown,
)
from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_text
from ansible_collections.jetson.specdec.plugins.module_utils.record.record import with_missing
from ansible_collections.jetson.specdec.plugins.module_utils.record.names import UnsafeName, check_run_id
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import iso, utc_now


def read_spool(hosts_dir):
    """The records spooled in ``hosts_dir`` (sorted by file name); ([], error) on an unreadable file."""
    records = []
    if not os.path.isdir(hosts_dir):
        return records, None
    for name in sorted(os.listdir(hosts_dir)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(hosts_dir, name)
        try:
            with open(path, "r", encoding="utf-8") as handle:
                record = json.load(handle)
        except (IOError, OSError, ValueError) as exc:
            return [], "cannot read the spooled record %s: %s" % (path, exc)
        if not isinstance(record, dict):
            return [], "the spooled record %s is not a JSON object" % path
        records.append(record)
    return records, None


# The chart's panels: (series field, title); a panel no host has numbers for is left out.
CHART_PANELS = (("c1_gain", "Throughput change at concurrency 1 (%, higher is better)"),
                ("tpot_change", "TPOT p50 change at concurrency 1 (%, lower is better)"),
                ("c8_change", "Throughput change at concurrency 8 (%, 0 or higher: no regression)"))
# The outcome colours of the chart (the HTML's rows use lighter ones of the same hue).
CHART_COLOURS = {"kept": "#2e8b2e", "reverted": "#777777", "human": "#e08a00", "refused": "#3b6fb6",
                 "off": "#7a5fb0", "held": "#999933", "planned": "#999933"}
CHART_WIDTH_IN = 11.0
CHART_DPI = 90


def draw_chart(series):
    """Base64 PNG of the verdict's estimates per family, or (None, note).

    One panel per estimate (throughput at c=1 and c=8, TPOT p50); in each, one column per family: a box of
    its hosts' point estimates and every host as a dot with its interval as a thin line, coloured by outcome.
    The figure's size depends on the number of families, never on the number of hosts (11 in wide at 90 dpi).
    matplotlib is imported here, not at module import, so a controller without it still gets the tables.
    """
    if not series:
        return None, "No host has a verdict's estimate to chart."
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
        from matplotlib.lines import Line2D
    except ImportError:
        return None, "Chart left out: matplotlib is not installed on the controller (pip install matplotlib)."
    panels = [(key, title) for key, title in CHART_PANELS if any(s[key][0] is not None for s in series)]
    families = sorted(set(s["family"] for s in series))
    fig, axes = pyplot.subplots(len(panels), 1, figsize=(CHART_WIDTH_IN, 2.9 * len(panels) + 0.8), squeeze=False)
    try:
        for index, (key, title) in enumerate(panels):
            ax = axes[index][0]
            boxes = []
            for pos, family in enumerate(families):
                members = [s for s in series if s["family"] == family and s[key][0] is not None]
                boxes.append([100.0 * s[key][0] for s in members])
                for rank, s in enumerate(members):
                    # spread the family's hosts over its column, deterministically (same order as the tables)
                    x = pos + (((rank * 0.618034) % 1.0) - 0.5) * 0.6 if len(members) > 1 else pos
                    point, low, high = s[key]
                    colour = CHART_COLOURS.get(s["outcome"], "#444444")
                    if low is not None and high is not None:
                        ax.plot([x, x], [100.0 * low, 100.0 * high], color=colour, alpha=0.35, linewidth=1)
                    ax.plot([x], [100.0 * point], marker="o", markersize=3.5, color=colour, alpha=0.9)
            ax.boxplot([b or [float("nan")] for b in boxes], positions=list(range(len(families))), widths=0.7,
                       showfliers=False, medianprops={"color": "black"}, boxprops={"color": "#555555"})
            ax.axhline(0.0, color="#333333", linewidth=0.8)
            ax.set_xticks(list(range(len(families))))
            ax.set_xticklabels(["%s (%d)" % (f, len(boxes[i])) for i, f in enumerate(families)], fontsize=8)
            ax.set_title(title, fontsize=10)
            ax.grid(axis="y", alpha=0.3)
        handles = [Line2D([0], [0], marker="o", color=colour, linestyle="-", label=name)
                   for name, colour in sorted(CHART_COLOURS.items()) if any(s["outcome"] == name for s in series)]
        fig.legend(handles=handles, loc="lower center", ncol=max(1, len(handles)), frameon=False, fontsize=8,
                   title="each dot a host, its line the verdict's interval; boxes: the family's hosts (quartiles)",
                   title_fontsize=8)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=CHART_DPI)
    finally:
        pyplot.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii"), None


# Reports name hosts, models and errors: the operator's group reads them, others do not.
REPORT_MODE = 0o640
REPORT_DIR_MODE = 0o750


def _changed_write(path, text, check_mode):
    """Write ``text`` at REPORT_MODE unless the file already holds it; a file left 0644 by an older
    collection gets the mode. Text that cannot be UTF-8 (a lone surrogate from a record) is escaped."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    try:
        with open(path, "r", encoding="utf-8") as handle:
            same = handle.read() == text
        if same and stat.S_IMODE(os.stat(path).st_mode) == REPORT_MODE:
            return False
        if same:
            if not check_mode:
                os.chmod(path, REPORT_MODE)
            return True
    except (IOError, OSError, UnicodeDecodeError):
        pass
    if not check_mode:
        atomic_write_text(path, text, mode=REPORT_MODE, dir_mode=REPORT_DIR_MODE)
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            records=dict(type="list", elements="dict", default=[]),
            read_spool=dict(type="bool", default=False),
            dest_dir=dict(type="path", required=True),
            run_id=dict(type="str"),
            expected_hosts=dict(type="list", elements="str", default=[]),
            title=dict(type="str", default="jetson.specdec fleet report"),
            chart=dict(type="bool", default=True),
            low_concurrency=dict(type="int", default=1),
            high_concurrency=dict(type="int", default=8),
        ),
        supports_check_mode=True,
    )
    p = module.params
    now = utc_now()
    run_id = p["run_id"] or now.strftime("%Y%m%dT%H%M%SZ")
    try:
        check_run_id(run_id, "run_id")
    except UnsafeName as exc:
        module.fail_json(msg="run_id must be a single directory name: %s" % exc)
    run_dir = os.path.join(p["dest_dir"], run_id)
    records = p["records"]
    if p["read_spool"]:
        spooled, error = read_spool(os.path.join(run_dir, "hosts"))
        if error:
            module.fail_json(msg=error + "; fix or remove the file and run the report again")
        records = with_missing(spooled + records, p["expected_hosts"])
    report = build_report(records, run_id, iso(now), p["expected_hosts"],
                          p["low_concurrency"], p["high_concurrency"])
    markdown = render_markdown(report, p["title"])
    png, note = (None, None)
    if p["chart"]:
        png, note = draw_chart(chart_series(report))
    html_text = render_html(report, png, note, p["title"])
    json_text = json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"

    paths = dict(json_path=os.path.join(run_dir, "report.json"),
                 markdown_path=os.path.join(run_dir, "report.md"),
                 html_path=os.path.join(run_dir, "report.html"))
    changed = False
    for key, text in (("json_path", json_text), ("markdown_path", markdown), ("html_path", html_text)):
        changed = _changed_write(paths[key], text, module.check_mode) or changed
    module.exit_json(changed=changed, run_dir=run_dir, markdown=markdown, chart=png is not None,
                     summary=report["summary"], **paths)


if __name__ == "__main__":
    main()
