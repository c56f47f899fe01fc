"""vllm_job_wait: the module's one look at an async job, and the action's progress line per job kind."""
import json

from ansible_collections.jetson.specdec.plugins.modules import vllm_job_wait
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module


def _args(tmp_path, jid="123.456"):
    return {"jid": jid, "progress_path": str(tmp_path / "bench-progress.json"), "timeout": 60,
            "async_dir": str(tmp_path / "async")}


def _job(tmp_path, data, jid="123.456"):
    (tmp_path / "async").mkdir(exist_ok=True)
    (tmp_path / "async" / jid).write_text(json.dumps(data))


def test_a_running_job_returns_its_progress_and_keeps_its_files(tmp_path):
    _job(tmp_path, {"started": True, "finished": False, "ansible_job_id": "123.456"})
    snap = {"version": 1, "step": "level", "done": 3, "total": 8}
    (tmp_path / "bench-progress.json").write_text(json.dumps(snap))
    failed, res = run_module(vllm_job_wait.main, _args(tmp_path))
    assert not failed and res["finished"] is False and res["job"] is None
    assert res["progress"] == snap and res["now"] > 0
    assert (tmp_path / "async" / "123.456").exists() and (tmp_path / "bench-progress.json").exists()


def test_a_finished_job_returns_the_benchmarks_result_and_is_collected_once(tmp_path):
    result = {"changed": False, "runs": [{"concurrency": 1}], "bench_warnings": []}
    _job(tmp_path, result)
    (tmp_path / "bench-progress.json").write_text("{\"version\": 1, \"finished\": true}")
    failed, res = run_module(vllm_job_wait.main, _args(tmp_path))
    assert not failed and res["finished"] is True and res["job"] == result
    assert not (tmp_path / "async" / "123.456").exists() and not (tmp_path / "bench-progress.json").exists()
    failed, res = run_module(vllm_job_wait.main, _args(tmp_path))
    assert failed and "could not find the async job 123.456" in res["msg"]


def test_a_half_written_status_file_is_a_running_job(tmp_path):
    (tmp_path / "async").mkdir()
    (tmp_path / "async" / "123.456").write_text("{\"runs\": [")
    failed, res = run_module(vllm_job_wait.main, _args(tmp_path))
    assert not failed and res["finished"] is False and res["progress"] is None


def test_the_action_describes_a_benchmark_and_a_start_by_their_kind():
    from ansible_collections.jetson.specdec.plugins.action.vllm_job_wait import describe
    start = {"version": 1, "kind": "start", "started": 0.0, "timeout": 900, "last": "", "active_state": None}
    assert describe(start, 40.0, "vLLM start") == "vLLM start: waiting for vLLM to serve, 40 s of at most 15 min 00 s"
    bench = {"version": 1, "kind": "bench", "started": 0.0, "updated": 40.0, "step": "probe", "concurrency": None,
             "level": 0, "levels": 2, "done": 0, "total": 1, "requests_done": 0, "requests_total": 21}
    assert describe(bench, 40.0, "baseline").startswith("baseline: probe request: 0/1 requests; run 0/21, 40 s elapsed")
    assert describe(None, 40.0, "baseline") == "baseline: running (no progress written yet)"


def test_the_action_looks_soon_at_first_then_every_poll():
    """A start that ends in 3 s is noticed within about a second; a long job costs one look per poll."""
    from ansible_collections.jetson.specdec.plugins.action.vllm_job_wait import next_wait
    assert [next_wait(n, 5, 30, 900) for n in range(8)] == [1, 2, 3, 4, 5, 5, 5, 5]
    assert [next_wait(n, 5, 2, 900) for n in range(4)] == [1, 2, 2, 2]  # a line every 2 s needs a look as often
    assert next_wait(6, 5, 0, 900) == 5  # no lines: poll alone
    assert next_wait(6, 5, 30, 2.5) == 2.5 and next_wait(6, 5, 30, -3) == 1  # never past the timeout, never 0


def test_one_look_at_the_host_is_read_as_async_status_reads_a_job():
    """The action's shell look: the host's clock, the job file (finished without "started"), the progress file."""
    from ansible_collections.jetson.specdec.plugins.action.vllm_job_wait import parse_look
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
