# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.fleet_report: the fleet report, written on the controller by the controller.

Nothing runs on a host: the records come from the task or the run's spool on the controller, and the
page is rendered from the collection's template (plugin_utils/report_page.py, Jinja2 from ansible-core),
so neither Jinja2 nor matplotlib is ever needed on a board, and the controller's own Python draws the chart.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import io
import json
import os
import stat

from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.record.report import (
    build_report, chart_series, console_lines, render_markdown,
)
from ansible_collections.jetson.specdec.plugins.module_utils.common.atomic import atomic_write_text
from ansible_collections.jetson.specdec.plugins.module_utils.record.record import with_missing
from ansible_collections.jetson.specdec.plugins.module_utils.record.names import UnsafeName, check_run_id
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import iso, utc_now
from ansible_collections.jetson.specdec.plugins.plugin_utils.report_page import render_html


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


PREVIOUS_MAX_BYTES = 256 * 1024 * 1024  # a 10,000-host report.json is about 100 MB


def read_previous(dest_dir, run_id, before=None):
    """The newest report.json of another run in ``dest_dir`` (the run the report says what changed since), or None.

    Newest by the file's modification time, and older than ``before`` (a timestamp: this run's spool, so a report
    rebuilt for an old run compares with the run before it, not with a later one). An unreadable candidate is
    skipped: what changed is a convenience, never a reason for the report to fail."""
    try:
        names = os.listdir(dest_dir)
    except OSError:
        return None
    found = []
    for name in names:
        if name == run_id:
            continue
        path = os.path.join(dest_dir, name, "report.json")
        try:
            info = os.stat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size <= PREVIOUS_MAX_BYTES and (before is None or info.st_mtime < before):
            found.append((info.st_mtime, path))
    for _mtime, path in sorted(found, reverse=True):
        try:
            with open(path, "r", encoding="utf-8") as handle:
                previous = json.load(handle)
        except (IOError, OSError, ValueError):
            continue
        if isinstance(previous, dict) and isinstance(previous.get("hosts"), list):
            return previous
    return None


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


ARGS = dict(
    records=dict(type="list", elements="dict", default=[]),
    read_spool=dict(type="bool", default=False),
    dest_dir=dict(type="path", required=True),
    run_id=dict(type="str"),
    expected_hosts=dict(type="list", elements="str", default=[]),
    title=dict(type="str", default="jetson.specdec fleet report"),
    chart=dict(type="bool", default=True),
    low_concurrency=dict(type="int", default=1),
    high_concurrency=dict(type="int", default=8),
    since_last_run=dict(type="bool", default=True),
)


class ReportError(Exception):
    """The report cannot be written; the message says why and what to fix."""


def write_report(p, check_mode=False, now=None):
    """Build the report of ``p`` (the validated options of ARGS) and write report.json, report.md and report.html
    into ``<dest_dir>/<run_id>/`` (nothing in check mode). Returns the task's result; ReportError on bad input."""
    now = now or utc_now()
    run_id = p["run_id"] or now.strftime("%Y%m%dT%H%M%SZ")
    try:
        check_run_id(run_id, "run_id")
    except UnsafeName as exc:
        raise ReportError("run_id must be a single directory name: %s" % exc)
    run_dir = os.path.join(p["dest_dir"], run_id)
    records = p["records"]
    if p["read_spool"]:
        spooled, error = read_spool(os.path.join(run_dir, "hosts"))
        if error:
            raise ReportError(error + "; fix or remove the file and run the report again")
        records = with_missing(spooled + records, p["expected_hosts"])
    try:
        spooled_at = os.stat(os.path.join(run_dir, "hosts")).st_mtime
    except OSError:
        spooled_at = None
    previous = read_previous(p["dest_dir"], run_id, spooled_at) if p["since_last_run"] else None
    report = build_report(records, run_id, iso(now), p["expected_hosts"],
                          p["low_concurrency"], p["high_concurrency"], previous=previous)
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
        changed = _changed_write(paths[key], text, check_mode) or changed
    return dict(changed=changed, run_dir=run_dir, markdown=markdown, console=console_lines(markdown), chart=png is not None,
                summary=report["summary"], **paths)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGS)
        args = plain(args)
        try:
            result.update(write_report(args, check_mode=bool(self._task.check_mode)))
        except ReportError as exc:
            return dict(result, failed=True, msg=str(exc))
        except (IOError, OSError) as exc:
            return dict(result, failed=True, msg="jetson.specdec.fleet_report: cannot write the report under %s: %s. "
                                                 "Check dest_dir (space, permissions), then re-run."
                                                 % (args["dest_dir"], exc))
        return result
