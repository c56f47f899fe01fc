"""bench/progress.py: the counts a running benchmark writes and the line the controller prints."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.bench.progress import Progress, describe, eta_seconds


class Clock(object):
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


def make(levels=(1, 8), num_prompts=10, warmup=2, every=2.0):
    clock, writes = Clock(), []
    return Progress(writes.append, list(levels), num_prompts, warmup, clock=clock, every=every), clock, writes


def test_counts_every_request_of_the_run_and_writes_at_each_step():
    prog, clock, writes = make()
    prog.start()
    assert writes[-1]["step"] == "starting" and writes[-1]["requests_total"] == 1 + 2 * (10 + 2)
    prog.step("probe", 1)
    prog.request_done()
    prog.step("warmup", 2, 1, 1)
    assert writes[-1]["step"] == "warmup" and writes[-1]["concurrency"] == 1 and writes[-1]["level"] == 1
    assert writes[-1]["requests_done"] == 1 and writes[-1]["done"] == 0
    prog.finish()
    assert writes[-1]["finished"] is True and writes[-1]["step"] == "finished"


def test_request_writes_are_throttled_but_steps_are_not():
    prog, clock, writes = make(every=2.0)
    prog.step("level", 10, 8, 2)
    count = len(writes)
    for dummy in range(5):  # five requests within the same second: no new write
        prog.request_done()
    assert len(writes) == count
    clock.t += 2.5
    prog.request_done()
    assert len(writes) == count + 1 and writes[-1]["done"] == 6 and writes[-1]["updated"] == clock.t
    prog.step("categories", 4, 1, extra_total=4)
    assert len(writes) == count + 2 and writes[-1]["requests_total"] == 1 + 2 * 12 + 4


def test_a_failing_sink_never_fails_the_benchmark():
    def broken(snap):
        raise OSError(28, "No space left on device")
    prog = Progress(broken, [1], 4, 0, clock=Clock())
    prog.start()
    prog.step("level", 4, 1, 1)
    prog.request_done()
    prog.finish()


@pytest.mark.parametrize("done,total,elapsed,expected", [
    (0, 10, 5.0, None),      # no pace yet
    (5, 10, 50.0, 50.0),     # half done in 50 s: 50 s left
    (10, 10, 80.0, None),    # done
    (12, 10, 80.0, None),    # a retried probe counts twice: never a negative estimate
])
def test_eta_from_the_pace_so_far(done, total, elapsed, expected):
    snap = {"requests_done": done, "requests_total": total, "started": 100.0}
    assert eta_seconds(snap, 100.0 + elapsed) == expected


def test_describe_says_step_level_requests_elapsed_and_time_left():
    snap = {"version": 1, "started": 1000.0, "updated": 1090.0, "step": "level", "concurrency": 8, "level": 2,
            "levels": 2, "done": 31, "total": 50, "requests_done": 61, "requests_total": 122, "finished": False}
    line = describe(snap, 1100.0, "candidate")
    assert line == ("candidate: measuring c=8 (level 2 of 2): 31/50 requests; run 61/122, 1 min 40 s elapsed, "
                    "about 1 min 40 s left")


def test_describe_flags_a_stalled_run_and_reads_no_file_plainly():
    snap = {"version": 1, "started": 1000.0, "updated": 1000.0, "step": "probe", "concurrency": None, "level": 0,
            "levels": 1, "done": 0, "total": 1, "requests_done": 0, "requests_total": 5, "finished": False}
    assert describe(snap, 1090.0).endswith("1 min 30 s elapsed (no finished request for 1 min 30 s)")
    assert describe(None, 5.0, "baseline") == "baseline: running (no progress written yet)"
    assert describe({"version": 99}, 5.0) == "running (no progress written yet)"


# Level by level (issue 33: the whole run's pace overestimated the time left about 4x while c=1 ran).
def _c1_half_done():
    """Probe, c=1 warmup (2 x 4 s), then 5 of the c=1 level's 10 requests (4 s each); c=8 to come."""
    prog, clock, writes = make(every=0.0)
    prog.start()
    prog.step("probe", 1, 1)
    clock.t += 4.0
    prog.request_done()
    prog.step("warmup", 2, 1, 1)
    for dummy in range(2):
        clock.t += 4.0
        prog.request_done()
    prog.step("level", 10, 1, 1)
    for dummy in range(5):
        clock.t += 4.0
        prog.request_done()
    return writes[-1], clock.t


def test_the_time_left_counts_the_c8_level_at_its_own_pace_not_at_c1s():
    snap, now = _c1_half_done()
    assert snap["num_prompts"] == 10 and snap["warmup_prompts"] == 2
    # 5 x 4 s left here (the one in flight counted as about to finish: 5 done + 1 -> 20 s / 6 x 5 = 16.7 s),
    # then 12 requests at c=8: a batch of 8 takes 4 s x 8 ** 0.25, so 12 requests 12 / 8 x that (the c=8
    # warmup of 2 runs a batch of 2: 2 / 2 x 4 s x 2 ** 0.25)
    here = 5 * (20.0 / 6)
    warm = 2 * (20.0 / 6) * 2 ** 0.25 / 2
    level = 10 * (20.0 / 6) * 8 ** 0.25 / 8
    assert eta_seconds(snap, now) == pytest.approx(here + warm + level, rel=1e-9)
    whole_run = (now - snap["started"]) * (snap["requests_total"] - snap["requests_done"]) / snap["requests_done"]
    assert eta_seconds(snap, now) < whole_run / 2  # the old estimate: every c=8 request at the c=1 pace


def test_a_step_with_nothing_finished_yet_starts_from_the_last_steps_latency():
    prog, clock, writes = make(every=0.0)
    prog.start()
    for step, count, level in (("probe", 1, None), ("warmup", 2, 1), ("level", 10, 1)):
        prog.step(step, count, 1, level)
        for dummy in range(count):
            clock.t += 4.0
            prog.request_done()
    prog.step("warmup", 2, 8, 2)
    clock.t += 1.0
    snap = writes[-1]
    assert snap["previous"] == {"batch": 1, "latency": 4.0}
    # the c=8 warmup runs a batch of 2: latency 4 x 2 ** 0.25, 1 s of it gone; then 10 requests at c=8
    expected = 4.0 * 2 ** 0.25 - 1.0 + 10 * 4.0 * 2 ** 0.25 * (8 / 2.0) ** 0.25 / 8
    assert eta_seconds(snap, clock.t) == pytest.approx(expected, rel=1e-9)


def test_a_snapshot_of_an_older_writer_still_gets_the_whole_runs_pace():
    snap, now = _c1_half_done()
    for key in ("num_prompts", "warmup_prompts"):
        snap.pop(key)
    assert eta_seconds(snap, now) == pytest.approx(
        (now - snap["started"]) * (snap["requests_total"] - snap["requests_done"]) / snap["requests_done"])
