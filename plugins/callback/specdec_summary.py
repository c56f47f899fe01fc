# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
name: specdec_summary
type: aggregate
short_description: Print the speculative-decoding fleet summary at the end of the play
version_added: 0.1.0
author: jetson.specdec contributors (@jetson-specdec)
description:
  - At the end of C(ansible-playbook), prints one table row per host with board family, decision, throughput and
    TPOT p50 at concurrency 1 before and after, and the draft acceptance rate.
  - "Reads the records the rollout playbook publishes with C(ansible.builtin.set_stats)
    (C(data={'jetson_specdec': {inventory_hostname: record}}), C(per_host=false), C(aggregate=true)).
    Per-host set_stats data under the same key is read too."
  - Hosts that failed or were unreachable and published no record are listed with their play recap counts.
  - The plan's warnings (for example a k above the board's start) are listed per host under the table.
  - In check mode (C(--check)) it adds, per host, what a real run would do (the speculation it would start, its
    ladder and round budget, or the refusal) under a DRY RUN line.
  - It does not need C(show_custom_stats).
  - "While the run goes on, each batch's verdicts are printed when the next batch starts (the canary's before the
    rest of the fleet changes): one line per host decided in the batch, and how many hosts of the play are done."
  - The table has the change at concurrency 8 and, for a converged host, the date of its earlier verdict.
  - "When the run is interrupted (Ctrl-C, C(timeout -s INT)) Ansible sends no end-of-play statistics: it prints,
    on the way out, what it saw of each host instead - the last record published and the task the host was in - and
    that the next run resumes a host left C(pending) (its last good config is put back first)."
requirements:
  - Enable it in C(ansible.cfg) with C(callbacks_enabled = jetson.specdec.specdec_summary) in the C([defaults])
    section, or with the environment variable C(ANSIBLE_CALLBACKS_ENABLED=jetson.specdec.specdec_summary).
"""

import atexit
import time

from ansible.plugins.callback import CallbackBase

from ansible_collections.jetson.specdec.plugins.module_utils.record.report import (
    decided_label, decision_label, decision_words, fmt_num, fmt_pair, fmt_pct, host_row,
)

STATS_KEY = "jetson_specdec"
HEADER = ("host", "family", "decision", "c1 tok/s before→after", "TPOT p50 ms before→after", "c8 change", "accept",
          "decided")
# The statuses a host ends its evaluation with (not unchanged, planned or held: those come from the check play).
DONE_STATUSES = ("kept", "reverted", "refused", "off", "failed")


def progress_line(done, total, batch=None, elapsed_s=None):
    """'12 of 300 hosts of this play done, 3 batches; about 5.2 h left at this play's pace (12 hosts in 15 min)'.

    The time left is the play's own pace so far (hosts done per second of the play, batches in parallel included)
    over the hosts left: no guess before the first host is done, none once all are."""
    line = "  %d of %s hosts of this play done" % (done, total if total is not None else "?")
    if batch:
        line += ", %d batch%s" % (batch, "" if batch == 1 else "es")
    if (isinstance(total, int) and 0 < done < total and isinstance(elapsed_s, (int, float)) and elapsed_s > 0):
        left = elapsed_s / float(done) * (total - done)
        line += "; about %s left at this play's pace (%d host%s in %s)" % (
            _duration(left), done, "" if done == 1 else "s", _duration(elapsed_s))
    return line


def _duration(seconds):
    if seconds < 90:
        return "%d s" % round(seconds)
    if seconds < 90 * 60:
        return "%d min" % round(seconds / 60.0)
    return "%.1f h" % (seconds / 3600.0)


def batch_lines(records, done, total, batch=None, elapsed_s=None):
    """The verdicts of a batch that just ended, one line per host, and the play's progress."""
    out = []
    for host in sorted(records):
        record = dict(records[host])
        record.setdefault("host", host)
        row = host_row(record)
        numbers = ("c=1 %s, c=8 %s" % (fmt_pct(row.get("c1_gain")), fmt_pct(row.get("c8_change")))
                   if row.get("c1_gain") is not None else (record.get("reasons") or [""])[0])
        out.append("  %s: %s%s" % (host, decision_label(row), (" (%s)" % numbers) if numbers else ""))
    out.append(progress_line(done, total, batch, elapsed_s))
    return out


def collect_records(custom):
    """{host: record} from set_stats data (aggregate ``_run`` entry and per-host entries)."""
    records = {}
    for scope, data in sorted((custom or {}).items()):
        value = (data or {}).get(STATS_KEY) if isinstance(data, dict) else None
        if not isinstance(value, dict):
            continue
        if scope != "_run" and ("host" in value or "verdict" in value or "status" in value):
            records[scope] = value  # per_host=true with the record itself as the value
            continue
        for host, record in value.items():
            if isinstance(record, dict):
                records[str(host)] = record
    return records


def dry_run_lines(records):
    """Check mode (records with status planned): what a real run would do on each host, without -v."""
    planned = [h for h in sorted(records) if records[h].get("status") == "planned"]
    if not planned:
        return []
    out = ["DRY RUN (--check): nothing was changed. A real run would:"]
    for host in sorted(records):
        record = records[host]
        if record.get("status") == "planned":
            line = (record.get("plan") or {}).get("line") or "benchmark and judge speculation"
            out.append("  %s: %s" % (host, line))
        elif record.get("status") == "unchanged":
            reasons = "; ".join(str(r) for r in record.get("reasons") or []) or "converged"
            out.append("  %s: leave it unchanged (%s)" % (host, reasons))
        elif record.get("status") == "held":
            out.append("  %s: %s" % (host, (record.get("wave") or {}).get("reason") or "held back (outside the wave)"))
        elif record.get("status") == "off":
            out.append("  %s: leave speculation off by policy (%s)" % (host, "; ".join(record.get("reasons") or [])))
    return out


def summary_lines(stats):
    """Table lines (strings) for an AggregateStats-like object."""
    records = collect_records(getattr(stats, "custom", {}))
    rows = []
    for host in sorted(records):
        record = dict(records[host])
        record.setdefault("host", host)
        row = host_row(record)
        decision = decision_words(row["decision"]) + ("*" if row["flagged"] else "")
        rows.append((host + (" [SIM]" if row["simulated"] else ""), row["family"], decision,
                     fmt_pair(row["c1_tok_s_before"], row["c1_tok_s_after"]),
                     fmt_pair(row["tpot_p50_before"], row["tpot_p50_after"]),
                     fmt_pct(row.get("c8_change")), fmt_num(row["acceptance_rate"], 2),
                     decided_label(row) or "-"))
    lines = []
    if rows:
        widths = [max(len(str(r[i])) for r in rows + [HEADER]) for i in range(len(HEADER))]
        for r in [HEADER] + rows:
            lines.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    missing = []
    for host in sorted(getattr(stats, "processed", {}) or {}):
        if host in records:
            continue
        s = stats.summarize(host)
        if s.get("failures") or s.get("unreachable"):
            missing.append("%s: no result recorded (failures=%d unreachable=%d)"
                           % (host, s.get("failures", 0), s.get("unreachable", 0)))
    if missing:
        lines.append("")
        lines.append("Hosts without a result:")
        lines += ["  " + m for m in missing]
    warned = [(h, w) for h in sorted(records) for w in records[h].get("warnings") or []]
    if warned:
        lines.append("")
        lines.append("Warnings:")
        lines += ["  %s: %s" % (host, text) for host, text in warned]
    plans = dry_run_lines(records)
    if plans:
        lines.append("")
        lines += plans
    if rows and any(r[2].endswith("*") for r in rows):
        lines.append("")
        lines.append("* flagged: below the keep bar, inconclusive, decided at the budget's end or within measurement "
                     "noise; see the fleet report.")
    return lines


def interrupted_lines(records, tasks):
    """What an interrupted run can say per host: its last published record and the task it was in."""
    hosts = sorted(set(records) | set(tasks))
    if not hosts:
        return []
    out = ["The run was interrupted: Ansible gives no end-of-play results. What this controller saw per host:"]
    for host in hosts:
        record = records.get(host) or {}
        status = record.get("status") or "no record yet"
        decision = ((record.get("verdict") or {}).get("decision")) if isinstance(record.get("verdict"), dict) else None
        shown = " (%s)" % decision if decision else ""
        out.append("  %s: %s%s; last task: %s" % (host, status, shown, tasks.get(host) or "none"))
    out.append("A host in the middle of its rollout stays 'pending' with its lock: the next run from this controller "
               "takes the lock over (its process is gone) and puts the last good config back first; "
               "'jetson.specdec.revert' takes it over at any time.")
    return out


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "jetson.specdec.specdec_summary"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._records = {}
        self._tasks = {}
        self._task_name = None
        self._finished = False
        self._specdec = False
        self._batch = {}   # records of hosts that ended their evaluation since the last batch started
        self._done = {}    # play name -> hosts done in it
        self._play = None
        self._play_hosts = {}
        self._batches = {}  # play name -> batches started (Ansible starts the play again for each serial batch)
        self._play_started = {}  # play name -> monotonic time its first batch started
        # On SIGINT the strategy raises KeyboardInterrupt and v2_playbook_on_stats never comes; an exit hook is
        # the one place left to speak (it runs as ansible-playbook exits, after "User interrupted execution").
        atexit.register(self._on_exit)

    def v2_playbook_on_play_start(self, play):
        # Ansible starts the play again for every serial batch: the batch before this one has ended.
        self._print_batch()
        name = play.get_name()
        hosts = getattr(play, "hosts", None)
        if name != self._play and isinstance(hosts, list):
            self._play_hosts[name] = len(hosts)
        self._play = name
        self._batches[name] = self._batches.get(name, 0) + 1
        self._play_started.setdefault(name, self._clock())

    @staticmethod
    def _clock():
        return time.monotonic()

    def _print_batch(self):
        if not self._batch:
            return
        done = self._done.get(self._play, 0)
        started = self._play_started.get(self._play)
        self._display.banner("JETSON SPECDEC: BATCH DONE")
        for line in batch_lines(self._batch, done, self._play_hosts.get(self._play), self._batches.get(self._play),
                                None if started is None else self._clock() - started):
            self._display.display(line)
        self._batch = {}

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task_name = task.get_name()

    def v2_runner_on_start(self, host, task):
        self._tasks[host.get_name()] = task.get_name()
        if str(getattr(task, "action", "") or "").startswith("jetson.specdec."):
            self._specdec = True

    def v2_runner_on_ok(self, result):
        data = ((result._result or {}).get("ansible_stats") or {}).get("data")
        found = collect_records({"_run": data}) if isinstance(data, dict) else {}
        if found:
            self._specdec = True
            self._records.update(found)
            for host, record in found.items():
                if record.get("status") in DONE_STATUSES and host not in self._batch:
                    self._batch[host] = record
                    self._done[self._play] = self._done.get(self._play, 0) + 1

    def _on_exit(self):
        if self._finished or not self._specdec:
            return
        lines = interrupted_lines(self._records, self._tasks)
        if lines:
            self._display.banner("JETSON SPECDEC: RUN INTERRUPTED")
            for line in lines:
                self._display.display(line)

    def v2_playbook_on_stats(self, stats):
        self._finished = True
        lines = summary_lines(stats)
        if not lines:
            return  # not a specdec play: stay quiet
        self._display.banner("JETSON SPECDEC FLEET SUMMARY")
        for line in lines:
            self._display.display(line)
        self._display.display("")
