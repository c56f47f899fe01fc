# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from ansible.executor.stats import AggregateStats

from ansible_collections.jetson.specdec.plugins.callback.specdec_summary import CallbackModule, collect_records


class FakeDisplay(object):
    """Collects what the callback prints."""

    verbosity = 0

    def __init__(self):
        self.lines = []
        self.banners = []

    def banner(self, msg, *args, **kwargs):
        self.banners.append(msg)

    def display(self, msg="", *args, **kwargs):
        self.lines.append(msg)

    def __getattr__(self, name):  # warning, vvv, ... : ignore
        return lambda *a, **k: None


def bench(tok_s, tpot):
    return {"runs": [{"concurrency": 1, "throughput_tok_s": tok_s, "tpot_ms_p50": tpot, "failed": 0}],
            "spec_decode": {"acceptance_rate": 0.64}}


def make_stats():
    stats = AggregateStats()
    for host in ("thor-01", "agx-01", "nano-01", "nx-01"):
        stats.increment("ok", host)
    stats.increment("dark", "nano-01")
    # what the playbook's set_stats(per_host=false, aggregate=true) produces, twice (two serial batches)
    stats.update_custom_stats("jetson_specdec", {"thor-01": {
        "facts": {"family": "thor"}, "simulated": True, "baseline": bench(28.1, 35.0), "candidate": bench(39.7, 24.0),
        "verdict": {"decision": "keep", "action": "keep"}}})
    stats.update_custom_stats("jetson_specdec", {"agx-01": {
        "facts": {"family": "orin-agx"}, "baseline": bench(20.0, 50.0), "candidate": bench(24.0, 44.0),
        "verdict": {"decision": "marginal", "action": "keep", "flagged": True}}})
    return stats


def run_callback(stats):
    cb = CallbackModule(display=FakeDisplay())
    cb.v2_playbook_on_stats(stats)
    return cb._display


def test_prints_table_and_hosts_without_record():
    shown = run_callback(make_stats())
    assert shown.banners == ["JETSON SPECDEC FLEET SUMMARY"]
    text = "\n".join(shown.lines)
    assert shown.lines[0].split() == ["host", "family", "decision", "c1", "tok/s", "before→after", "TPOT", "p50",
                                      "ms", "before→after", "c8", "change", "accept", "decided"]
    thor = [l for l in shown.lines if l.startswith("thor-01")][0]
    # no c=8 level in this record: its change is "–"; decided this run (a verdict with an action)
    assert thor.split() == ["thor-01", "[SIM]", "thor", "keep", "28.1", "→", "39.7", "35.0", "→", "24.0", "–", "0.64",
                            "this", "run"]
    agx = [l for l in shown.lines if l.startswith("agx-01")][0]
    assert "kept below the keep bar*" in agx and "marginal" not in text and "* flagged" in text
    assert "nano-01: no result recorded (failures=0 unreachable=1)" in text
    assert "nx-01" not in text  # ok host without a record is not a problem


def test_silent_without_specdec_data():
    stats = AggregateStats()
    stats.increment("ok", "h1")
    shown = run_callback(stats)
    assert shown.banners == [] and shown.lines == []


def test_collect_records_per_host_form():
    custom = {"h1": {"jetson_specdec": {"status": "kept", "verdict": {"decision": "keep"}}},
              "_run": {"jetson_specdec": {"h2": {"status": "reverted"}}, "other": 1}}
    assert sorted(collect_records(custom)) == ["h1", "h2"]


def test_plugin_metadata():
    assert CallbackModule.CALLBACK_TYPE == "aggregate" and CallbackModule.CALLBACK_NEEDS_ENABLED is True
    assert CallbackModule.CALLBACK_NAME == "jetson.specdec.specdec_summary"


def test_check_mode_prints_what_a_real_run_would_do_per_host():
    from ansible_collections.jetson.specdec.plugins.callback.specdec_summary import dry_run_lines
    records = {"thor-01": {"status": "planned", "plan": {"line": "benchmark eagle3 h, k=5, utilization 0.8 (baseline 0.85)"}},
               "nx-01": {"status": "planned", "plan": {"line": "refuse: family.speculation_not_supported: no"}},
               "agx-01": {"status": "unchanged", "reasons": ["converged: same config"]},
               "agx-02": {"status": "held", "wave": {"reason": "held back: bucket 57 is outside the 10 % wave"}}}
    assert dry_run_lines(records) == [
        "DRY RUN (--check): nothing was changed. A real run would:",
        "  agx-01: leave it unchanged (converged: same config)",
        "  agx-02: held back: bucket 57 is outside the 10 % wave",
        "  nx-01: refuse: family.speculation_not_supported: no",
        "  thor-01: benchmark eagle3 h, k=5, utilization 0.8 (baseline 0.85)"]
    records["thor-01"]["status"] = records["nx-01"]["status"] = "kept"
    assert dry_run_lines(records) == []  # a real run prints no dry-run lines


def test_the_plans_warnings_are_printed_without_verbose():
    stats = AggregateStats()
    stats.increment("ok", "agx-01")
    stats.update_custom_stats("jetson_specdec", {"agx-01": {
        "facts": {"family": "agx_orin"}, "status": "kept", "verdict": {"decision": "keep"},
        "warnings": ["num_speculative_tokens 9 is above the agx_orin start 3"]}})
    from ansible_collections.jetson.specdec.plugins.callback.specdec_summary import summary_lines
    lines = summary_lines(stats)
    assert lines[lines.index("Warnings:") + 1] == "  agx-01: num_speculative_tokens 9 is above the agx_orin start 3"


class FakeHost(object):
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


class FakeTask(object):
    def __init__(self, name, action):
        self.name, self.action = name, action

    def get_name(self):
        return self.name


class FakeResult(object):
    def __init__(self, result):
        self._result = result


def interrupted_callback(monkeypatch):
    hooks = []
    monkeypatch.setattr("atexit.register", hooks.append)
    callback = CallbackModule()
    callback._display = FakeDisplay()
    assert len(hooks) == 1
    return callback, hooks[0]


def test_an_interrupted_run_says_what_it_saw_of_each_host(monkeypatch):
    callback, on_exit = interrupted_callback(monkeypatch)
    callback.v2_runner_on_start(FakeHost("agx-02"), FakeTask("Read the state recorded on the host",
                                                             "jetson.specdec.rollout_state"))
    callback.v2_runner_on_ok(FakeResult({"ansible_stats": {"data": {"jetson_specdec": {
        "agx-01": {"status": "unchanged", "verdict": {"decision": "keep"}}}}}}))
    callback.v2_runner_on_start(FakeHost("agx-02"), FakeTask("Benchmark the candidate", "jetson.specdec.vllm_bench"))
    on_exit()  # SIGINT: no v2_playbook_on_stats, only the exit hook
    text = "\n".join(callback._display.lines)
    assert callback._display.banners == ["JETSON SPECDEC: RUN INTERRUPTED"]
    assert "agx-01: unchanged (keep); last task: none" in text
    assert "agx-02: no record yet; last task: Benchmark the candidate" in text
    assert "pending" in text and "jetson.specdec.revert" in text


def test_a_finished_or_foreign_run_says_nothing_on_exit(monkeypatch):
    callback, on_exit = interrupted_callback(monkeypatch)
    callback.v2_runner_on_start(FakeHost("h1"), FakeTask("ping", "ansible.builtin.ping"))
    on_exit()
    assert callback._display.banners == [] and callback._display.lines == []
    callback, on_exit = interrupted_callback(monkeypatch)
    callback.v2_runner_on_start(FakeHost("h1"), FakeTask("Take the lock", "jetson.specdec.rollout_state"))
    callback.v2_playbook_on_stats(AggregateStats())
    before = list(callback._display.lines)
    on_exit()
    assert callback._display.lines == before and "JETSON SPECDEC: RUN INTERRUPTED" not in callback._display.banners


def test_a_host_off_by_policy_reads_so_not_as_a_refusal():
    stats = make_stats()
    stats.update_custom_stats("jetson_specdec", {"nx-01": {
        "facts": {"family": "orin_nx"}, "status": "off", "config_after": "baseline",
        "verdict": {"decision": "off", "reasons": ["policy.speculation_off: vllm_server_speculation is false"]}}})
    shown = run_callback(stats)
    nx = [line for line in shown.lines if line.startswith("nx-01")][0]
    assert nx.split()[:5] == ["nx-01", "orin_nx", "off", "by", "policy"], nx
    assert "refused" not in nx


class FakePlay(object):
    def __init__(self, name, hosts):
        self.name, self.hosts = name, hosts

    def get_name(self):
        return self.name


class PublishedResult(object):
    def __init__(self, host, record):
        self._result = {"ansible_stats": {"data": {"jetson_specdec": {host: record}}}}


def verdict_record(status, gain, c8, decision, action):
    return {"status": status, "facts": {"family": "thor"},
            "verdict": {"decision": decision, "action": action,
                        "estimates": {"c1_throughput_gain": {"point": gain, "low": gain - 0.1, "high": gain + 0.1},
                                      "c8_throughput_change": {"point": c8, "low": c8 - 0.05, "high": c8 + 0.05}}}}


def test_each_batchs_verdicts_print_when_the_next_batch_starts():
    cb = CallbackModule(display=FakeDisplay())
    now = [1000.0]
    cb._clock = lambda: now[0]
    hosts = ["thor-01", "thor-02", "agx-01", "nx-01"]
    cb.v2_playbook_on_play_start(FakePlay("Check every selected host", hosts + ["agx-09"]))
    cb.v2_runner_on_ok(PublishedResult("agx-09", {"status": "unchanged"}))  # converged in the check: not a verdict
    roll = FakePlay("Roll out speculative decoding, host by host", hosts)
    cb.v2_playbook_on_play_start(roll)  # the canary batch
    assert cb._display.banners == []
    cb.v2_runner_on_ok(PublishedResult("thor-01", verdict_record("kept", 0.514, 0.228, "keep", "keep")))
    now[0] += 600  # the canary took 10 minutes
    cb.v2_playbook_on_play_start(roll)  # the second batch starts: the canary's verdict first
    assert cb._display.banners == ["JETSON SPECDEC: BATCH DONE"]
    # the fleet line: hosts done of the play, batches, and the time left at the play's pace (3 hosts x 10 min)
    assert cb._display.lines == ["  thor-01: keep (c=1 +51.4%, c=8 +22.8%)",
                                 "  1 of 4 hosts of this play done, 1 batch; about 30 min left at this play's pace "
                                 "(1 host in 10 min)"]
    cb.v2_runner_on_ok(PublishedResult("agx-01", verdict_record("reverted", 0.55, -0.28, "revert", "revert")))
    off = {"status": "off", "reasons": ["off by policy: vllm_server_speculation is false for this host (group_vars)"]}
    cb.v2_runner_on_ok(PublishedResult("nx-01", off))
    cb.v2_runner_on_ok(PublishedResult("nx-01", {"status": "off", "reasons": ["published twice"]}))  # counted once
    now[0] += 300
    cb.v2_playbook_on_play_start(FakePlay("Write the fleet report", hosts + ["localhost"]))
    assert cb._display.lines[2:] == ["  agx-01: revert (c=1 +55.0%, c=8 -28.0%)",
                                     "  nx-01: off by policy (off by policy: vllm_server_speculation is false for this host "
                                     "(group_vars))", "  3 of 4 hosts of this play done, 2 batches; about 5 min left "
                                     "at this play's pace (3 hosts in 15 min)"]
    cb.v2_playbook_on_play_start(FakePlay("Write the fleet report", hosts + ["localhost"]))
    assert len(cb._display.banners) == 2  # nothing new: no empty batch block


def test_the_fleet_line_guesses_no_time_before_a_host_is_done_or_after_all_are():
    from ansible_collections.jetson.specdec.plugins.callback.specdec_summary import progress_line
    assert progress_line(0, 300, 1, 120.0) == "  0 of 300 hosts of this play done, 1 batch"
    assert progress_line(300, 300, 30, 9000.0) == "  300 of 300 hosts of this play done, 30 batches"
    assert progress_line(3, None, 2, 60.0) == "  3 of ? hosts of this play done, 2 batches"
    assert progress_line(30, 300, 3, 1800.0).endswith("about 4.5 h left at this play's pace (30 hosts in 30 min)")  # 270 x 60 s
