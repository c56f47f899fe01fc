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
