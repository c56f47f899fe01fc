"""The actions of vllm_bench and vllm_wait: in the background with progress lines, or as any module runs."""
from ansible_collections.jetson.specdec.plugins.plugin_utils import background
from ansible_collections.jetson.specdec.plugins.plugin_utils.background import ProgressAction, bench_bounds, wait_bounds


class _Obj(object):
    pass


class FakeAction(ProgressAction):
    """vllm_bench's action over a recorded ActionBase: what it asks the host is kept, nothing runs."""
    MODULE = "jetson.specdec.vllm_bench"
    DEFAULT_LABEL = "benchmark"
    bound = staticmethod(bench_bounds)

    def __init__(self, args, async_val=0):
        self._task = _Obj()
        self._task.args, self._task.async_val = dict(args), async_val
        self._connection = _Obj()
        self._connection.has_native_async = False
        self._connection._shell = _Obj()
        self._connection._shell.tmpdir = "/tmp/x"
        self.calls = []

    def _execute_module(self, module_name, module_args, task_vars, wrap_async=False):
        self.calls.append(("module", module_name, dict(module_args), wrap_async, self._task.async_val))
        return ({"ansible_job_id": "j1", "started": 1, "results_file": "/root/.ansible_async/j1"} if wrap_async
                else {"changed": False, "runs": [1]})

    def _remove_tmp_path(self, path):
        self.calls.append(("cleanup", path))


def test_without_progress_interval_the_module_runs_as_any_module_does():
    action = FakeAction({"url": "http://127.0.0.1:8000", "max_duration": 60, "progress_label": "baseline"})
    result = action.run_module({}, {"inventory_hostname": "h"})
    assert result == {"changed": False, "runs": [1]}
    name, module, args, wrap, dummy = action.calls[0][:5]
    assert module == "jetson.specdec.vllm_bench" and not wrap
    assert "progress_label" not in args and args["max_duration"] == 60  # the action's own option stays here


def test_an_async_task_stays_async_and_is_not_waited_for():
    action = FakeAction({"max_duration": 60, "progress_interval": 30}, async_val=300)
    result = action.run_module({}, {})
    assert result["ansible_job_id"] == "j1" and action.calls[0][3] is True


def test_with_progress_interval_it_starts_in_the_background_and_waits_with_its_bounds(monkeypatch):
    seen = {}

    def wait(action, jid, progress_path, label, interval, poll, timeout, async_dir=None, host="?", job_path=None):
        seen.update(jid=jid, path=progress_path, label=label, interval=interval, timeout=timeout, host=host,
                    job_path=job_path)
        return {"changed": False, "runs": [2]}

    monkeypatch.setattr(background, "wait_for_job", wait)
    action = FakeAction({"max_duration": 60, "progress_path": "/p.json", "progress_interval": 30,
                         "progress_label": "candidate"})
    result = action.run_module({}, {"inventory_hostname": "thor-01"})
    assert result == {"changed": False, "runs": [2]}
    dummy, module, args, wrap, limit = action.calls[0]
    assert wrap is True and limit == 180 and "progress_interval" not in args  # async bound: max_duration + 120
    assert action._task.async_val == 0  # lent for the start only
    # the wait reads the job file the start named: no look-up of the host's async directory
    assert seen == {"jid": "j1", "path": "/p.json", "label": "candidate", "interval": 30, "timeout": 240, "host": "thor-01",
                    "job_path": "/root/.ansible_async/j1"}


def test_progress_lines_need_the_progress_file():
    action = FakeAction({"max_duration": 60, "progress_interval": 30})
    result = action.run_module({}, {})
    assert result["failed"] and "progress_path" in result["msg"] and not action.calls


def test_the_bounds_leave_the_module_time_to_stop_itself_and_write_its_result():
    # the benchmark stops after max_duration, the wait after its timeout; the job file comes a little later
    assert bench_bounds({"max_duration": 600.0}) == (720, 780)
    assert bench_bounds({}) == (3720, 3780)  # the module's default max_duration
    assert wait_bounds({"timeout": 300}) == (360, 420)
    assert wait_bounds({}) == (960, 1020)  # the module's default timeout
