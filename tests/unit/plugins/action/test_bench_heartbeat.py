"""vllm_bench's action: with heartbeat, the rollout lock is refreshed before the benchmark, in the same task."""
from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.action import vllm_bench


class _Obj(object):
    pass


class FakeBench(vllm_bench.ActionModule):
    """The real action over a recorded ActionBase: what it runs on the host is kept, with canned answers."""

    def __init__(self, args, lock_answer):
        self._task = _Obj()
        self._task.args, self._task.async_val = dict(args), 0
        self._connection = _Obj()
        self._connection.has_native_async = False
        self._connection._shell = _Obj()
        self._connection._shell.tmpdir = "/tmp/x"
        self.lock_answer = lock_answer
        self.calls = []

    def _execute_module(self, module_name, module_args, task_vars, wrap_async=False):
        self.calls.append((module_name, dict(module_args)))
        if module_name == vllm_bench.LOCK_MODULE:
            return dict(self.lock_answer)
        return {"changed": False, "runs": [1]}

    def _remove_tmp_path(self, path):
        pass


def _run(monkeypatch, args, lock_answer=None):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    action = FakeBench(args, lock_answer or {"changed": False, "lock": {"token": "t1"}})
    return action, action.run(task_vars={"inventory_hostname": "thor-01"})


def test_the_lock_is_refreshed_first_and_the_benchmark_never_sees_the_option(monkeypatch):
    action, result = _run(monkeypatch, {"url": "http://127.0.0.1:8000", "heartbeat": {"path": "/s/state.json", "token": "t1"}})
    assert result == {"changed": False, "runs": [1]}
    assert action.calls[0] == (vllm_bench.LOCK_MODULE, {"state": "refresh", "path": "/s/state.json", "token": "t1"})
    assert action.calls[1][0] == "jetson.specdec.vllm_bench" and "heartbeat" not in action.calls[1][1]


def test_a_lock_this_run_no_longer_holds_stops_before_anything_is_measured(monkeypatch):
    lost = {"failed": True, "msg": "Rollout lock /s/rollout.lock belongs to owner 'run-2', not to this run"}
    action, result = _run(monkeypatch, {"heartbeat": {"path": "/s/state.json", "token": "t1"}}, lost)
    assert result["failed"] and result["heartbeat_failed"]
    assert "did not start" in result["msg"] and "run-2" in result["msg"]
    assert [c[0] for c in action.calls] == [vllm_bench.LOCK_MODULE]


def test_a_heartbeat_without_its_token_is_refused_without_touching_the_host(monkeypatch):
    action, result = _run(monkeypatch, {"heartbeat": {"path": "/s/state.json"}})
    assert result["failed"] and "token" in result["msg"] and action.calls == []


def test_without_heartbeat_only_the_benchmark_runs(monkeypatch):
    action, result = _run(monkeypatch, {"url": "http://127.0.0.1:8000"})
    assert [c[0] for c in action.calls] == ["jetson.specdec.vllm_bench"] and result["runs"] == [1]
