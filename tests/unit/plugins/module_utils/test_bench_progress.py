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
