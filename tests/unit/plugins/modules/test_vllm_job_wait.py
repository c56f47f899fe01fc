"""vllm_job_wait: how the action reads its one look at an async job, and when it looks
(tests/integration_py/test_vllm_job_wait_shell.py runs the look through /bin/sh on real files)."""
import json
import math
import re


def test_the_action_describes_a_benchmark_and_a_start_by_their_kind():
    from ansible_collections.jetson.specdec.plugins.plugin_utils.background import describe
    start = {"version": 1, "kind": "start", "started": 0.0, "timeout": 900, "last": "", "active_state": None}
    assert describe(start, 40.0, "vLLM start") == "vLLM start: waiting for vLLM to serve, 40 s of at most 15 min 00 s"
    bench = {"version": 1, "kind": "bench", "started": 0.0, "updated": 40.0, "step": "probe", "concurrency": None,
             "level": 0, "levels": 2, "done": 0, "total": 1, "requests_done": 0, "requests_total": 21}
    assert describe(bench, 40.0, "baseline").startswith("baseline: probe request: 0/1 requests; run 0/21, 40 s elapsed")
    assert describe(None, 40.0, "baseline") == "baseline: running (no progress written yet)"


def test_the_host_waits_for_the_job_until_the_next_progress_line_or_six_polls():
    """Each look waits on the host (the job's end answers at once): the wait only bounds the silence."""
    from ansible_collections.jetson.specdec.plugins.plugin_utils.background import look_wait
    assert look_wait(5, 30, 900) == 30  # a line every 30 s: a look per line
    assert look_wait(5, 0, 900) == 30  # no lines: six polls
    assert look_wait(5, 2, 900) == 2  # a line every 2 s needs a look as often
    assert look_wait(5, 30, 900, line_in=12.5) == 12  # the next line is due sooner (whole seconds)
    assert look_wait(5, 60, 40) == 40 and look_wait(5, 30, 2.5) == 2  # never past the timeout
    assert look_wait(5, 30, -3) == 1 and look_wait(5, 30, 900, line_in=-1) == 1  # never 0: a wait of 0 is a plain look


def test_one_look_at_the_host_is_read_as_async_status_reads_a_job():
    """The action's shell look: the host's clock, the job file (finished without "started"), the progress file."""
    from ansible_collections.jetson.specdec.plugins.plugin_utils.background import parse_look
    progress = {"version": 1, "kind": "start", "started": 1000.0}
    running = parse_look('1796000000\n@@job\n{"started": 1, "finished": 0, "ansible_job_id": "1.2"}\n'
                         '@@progress\n%s\n\n' % json.dumps(progress), 5.0)
    assert running == {"finished": False, "job": None, "progress": progress, "now": 1796000000.0}
    done = parse_look('1796000001\n@@job\n{"changed": false, "runs": [{"concurrency": 1}]}\n\n@@progress\n\n', 5.0)
    assert done["finished"] is True and done["job"] == {"changed": False, "runs": [{"concurrency": 1}]}
    assert done["progress"] is None  # no progress file (yet, or any more)
    # a status file half written by async_wrapper is a running job, not a crash
    half = parse_look('1796000002\n@@job\n{"runs": [\n@@progress\n\n', 5.0)
    assert half["finished"] is False and half["job"] is None
    assert parse_look("@@missing\n", 5.0) == {"missing": True}
    assert parse_look("Last login: today\n@@missing\n", 5.0) == {"missing": True}
    assert parse_look("garbage\n@@job\n\n@@progress\n\n", 7.0)["now"] == 7.0  # no clock: the controller's


def test_the_jobs_warnings_are_shown_as_text_whatever_the_core_version_wrote():
    from ansible_collections.jetson.specdec.plugins.plugin_utils.background import plain_job_result
    # ansible-core 2.19 writes summaries into the async job file; older versions write strings
    job = {"changed": False, "warnings": [
        {"event": {"msg": "the server is simulated (X-Jetson-Simulated: thor_t5000; time_scale=0.1)",
                   "__ansible_type": "Event"}, "__ansible_type": "WarningSummary"},
        "a plain warning"],
        "deprecations": [{"event": {"msg": "old option", "__ansible_type": "Event"}, "version": "2.0.0",
                          "__ansible_type": "DeprecationSummary"}]}
    out = plain_job_result(job)
    assert out["warnings"] == ["the server is simulated (X-Jetson-Simulated: thor_t5000; time_scale=0.1)",
                               "a plain warning"]
    assert out["deprecations"] == [{"msg": "old option", "version": "2.0.0"}]
    assert job["warnings"][1] == "a plain warning" and isinstance(job["warnings"][0], dict)  # input unchanged
    assert plain_job_result(None) == {}


class _Clock(object):
    def __init__(self):
        self.t = 1000.0

    def time(self):
        return self.t

    def sleep(self, seconds):
        raise AssertionError("the controller sleeps: the host waits (a look's wait), not the controller")


class _BenchHost(object):
    """A host running a benchmark of two levels (c=1, then c=8 in bunches of 8, each request 6x faster); each look is
    one shell command. ``end`` is when the run ends; the first level takes 6/7 of it."""

    def __init__(self, clock, end=600.0, total=300):
        self.clock, self.end, self.total, self.looks, self.waits = clock, clock.t + end, total, 0, []
        self.started, self.switch = clock.t, clock.t + end * 6 / 7.0

    def _low_level_execute_command(self, cmd, sudoable=False):
        if cmd.startswith("rm -f"):
            return {"rc": 0, "stdout": ""}
        self.looks += 1
        wait = re.search(r"n=(\d+);", cmd)
        if wait:  # the host waits up to n seconds, checking every second whether the job has ended
            waited = min(int(wait.group(1)), max(0, math.ceil(self.end - self.clock.t)))
            self.waits.append(int(wait.group(1)))
            self.clock.t += waited
        now = self.clock.t
        if now >= self.end:
            return {"rc": 0, "stdout": '%d\n@@job\n{"runs": [1]}\n\n@@progress\n\n' % now}
        if now < self.switch:  # level 1 at c=1
            level, conc, step_started = 1, 1, self.started
            done = int(self.total * (now - self.started) / (self.switch - self.started))
        else:
            level, conc, step_started = 2, 8, self.switch
            # at c=8 requests end in bunches of 8 (a bunch every 8 / total of the level's time)
            done = 8 * int(self.total / 8.0 * (now - self.switch) / (self.end - self.switch))
        snap = {"version": 1, "kind": "bench", "started": self.started, "step": "level", "level": level, "levels": 2,
                "step_started": step_started, "concurrency": conc, "concurrencies": [1, 8], "done": done,
                "total": self.total, "requests_done": done + (self.total if level == 2 else 0),
                "requests_total": 2 * self.total + 1}
        return {"rc": 0, "stdout": '%d\n@@job\n{"started": 1, "finished": 0}\n@@progress\n%s\n' % (now, json.dumps(snap))}

    def _remote_expand_user(self, path):
        self.expanded = path
        return path.replace("~", "/root")

    def get_shell_option(self, name, default=None):
        return default


def test_a_long_benchmark_costs_a_look_per_progress_line_and_is_noticed_soon_after_it_ends(monkeypatch):
    from ansible_collections.jetson.specdec.plugins.plugin_utils import background
    clock = _Clock()
    lines = []
    monkeypatch.setattr(background, "time", clock)
    monkeypatch.setattr(background.display, "display", lines.append)
    host = _BenchHost(clock)
    result = background.wait_for_job(host, "1.2", "/p.json", "baseline", 30, 5, 900, host="thor-01")
    assert result == {"runs": [1], "changed": False}
    # 600 s at one look per 5 s poll would be 120 looks; a line every 30 s needs 20 (the 20th sees the end)
    assert host.looks == 20, host.looks
    assert clock.t - host.end <= 1  # the host saw the end within its second
    assert len(lines) == 19 and all(line.startswith("thor-01: baseline: measuring") for line in lines)


def test_without_progress_lines_a_look_waits_six_polls_and_the_end_is_seen_at_once(monkeypatch):
    from ansible_collections.jetson.specdec.plugins.plugin_utils import background
    clock = _Clock()
    monkeypatch.setattr(background, "time", clock)
    host = _BenchHost(clock, end=100.0)
    background.wait_for_job(host, "1.2", "/p.json", "x", 0, 5, 900, job_path="/j")
    assert host.waits == [30, 30, 30, 30] and clock.t - host.end <= 1


def test_a_job_that_outlives_its_timeout_fails_without_waiting_past_it(monkeypatch):
    from ansible_collections.jetson.specdec.plugins.plugin_utils import background
    clock = _Clock()
    monkeypatch.setattr(background, "time", clock)
    monkeypatch.setattr(background.display, "display", lambda line: None)
    host = _BenchHost(clock, end=1000.0)
    out = background.wait_for_job(host, "1.2", "/p.json", "baseline", 30, 5, 75, job_path="/j")
    assert out["failed"] and "did not finish within 75 s" in out["msg"]
    assert host.waits == [30, 30, 15] and clock.t - 1000.0 == 75


def test_the_job_file_the_start_named_is_read_without_asking_the_host_where_its_async_directory_is(monkeypatch):
    from ansible_collections.jetson.specdec.plugins.plugin_utils import background
    clock = _Clock()
    monkeypatch.setattr(background, "time", clock)
    host = _BenchHost(clock, end=0.0)
    commands = []
    run = host._low_level_execute_command
    host._low_level_execute_command = lambda cmd, sudoable=False: commands.append(cmd) or run(cmd, sudoable)
    background.wait_for_job(host, "1.2", "/p.json", "x", 30, 5, 900, job_path="/var/async/1.2")
    assert not hasattr(host, "expanded") and "j=/var/async/1.2;" in commands[0]
    background.wait_for_job(host, "1.2", "/p.json", "x", 30, 5, 900)  # vllm_job_wait: a jid alone
    assert host.expanded == "~/.ansible_async" and "j=/root/.ansible_async/1.2;" in commands[-2]
