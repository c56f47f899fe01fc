"""vllm_wait through AnsibleModule: crash loop with cause, bad URL (tests/integration_py waits on a server)."""
from unittest import mock

from ansible.module_utils import basic

from ansible_collections.jetson.specdec.plugins.modules import vllm_wait
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module


JOURNAL = ("Started vllm.service\n"
           "ValueError: Free memory on device (5.84/7.44 GiB) on startup is less than desired GPU memory utilization\n"
           "vllm.service: Main process exited, code=exited, status=1/FAILURE\n")


def _fake_run_command(states):
    def run(self, cmd, **kwargs):
        if "show" in cmd:
            return 0, states.pop(0) if len(states) > 1 else states[0], ""
        if "journalctl" in cmd[0]:
            return 0, JOURNAL, ""
        return 1, "", "unexpected"
    return run


def test_crash_loop_fails_fast_with_the_cause():
    states = ["ActiveState=activating\nNRestarts=0\n", "ActiveState=activating\nSubState=auto-restart\nNRestarts=3\nExecMainStatus=1\n"]
    with mock.patch.object(basic.AnsibleModule, "run_command", _fake_run_command(states)), \
            mock.patch.object(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name):
        failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "service": "vllm",
                                                     "timeout": 60, "interval": 1})
    assert failed
    assert result["cause"] == "out_of_memory"
    assert "crash loop" in result["msg"] and "Free memory on device" in result["msg"]
    assert result["elapsed"] < 30


def test_bad_url_is_refused():
    failed, result = run_module(vllm_wait.main, {"url": "127.0.0.1:8000"})
    assert failed and "http://HOST:PORT" in result["msg"]


def test_the_serving_gap_runs_from_the_old_server_leaving_to_the_first_healthy_answer():
    from ansible_collections.jetson.specdec.plugins.module_utils.vllm.health import serving_gap
    props = {"ActiveExitTimestampMonotonic": "1000000000", "ActiveEnterTimestampMonotonic": "1002000000"}
    # stopped at 1000 s, restarted at 1002 s, the wait began at 1003 s, healthy at 1041.5 s
    assert serving_gap(props, 1003.0, 1041.5) == {"seconds": 41.5, "stopped_at_monotonic": 1000.0}
    # the first start of a unit (never active before), or no systemd data: no gap
    assert serving_gap({"ActiveExitTimestampMonotonic": "0", "ActiveEnterTimestampMonotonic": "1002000000"}, 1003.0, 1041.5) is None
    assert serving_gap({}, 1003.0, 1041.5) is None
    assert serving_gap({"ActiveExitTimestampMonotonic": "x"}, 1003.0, 1041.5) is None
    # an unchanged unit: its last restart was long before this wait, which must not count it again
    assert serving_gap(props, 5000.0, 5001.0) is None
    # still running since before it last left the active state (left after it entered): no restart to measure
    assert serving_gap({"ActiveExitTimestampMonotonic": "1002000000", "ActiveEnterTimestampMonotonic": "1000000000"},
                       1003.0, 1041.5) is None


def test_a_ready_server_reports_the_gap_of_the_restart_it_followed():
    import time as real_time
    now = real_time.monotonic()
    show = ("ActiveState=active\nNRestarts=0\nActiveExitTimestampMonotonic=%d\nActiveEnterTimestampMonotonic=%d\n"
            % (int((now - 30) * 1e6), int((now - 28) * 1e6)))
    answers = {"/health": (200, ""), "/v1/models": (200, '{"data": [{"id": "m"}]}'), "/version": (200, '{"version": "0.20.0"}')}
    with mock.patch.object(basic.AnsibleModule, "run_command", lambda self, cmd, **kw: (0, show, "")), \
            mock.patch.object(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name), \
            mock.patch.object(vllm_wait, "http_get", lambda url, path, *a, **k: answers[path]):
        failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "service": "vllm", "timeout": 60})
    assert not failed, result
    assert result["models"] == ["m"] and 29.0 <= result["serving_gap_s"] <= 40.0, result
    assert abs(result["stopped_at_monotonic"] - (now - 30)) < 0.01


def test_a_missing_unit_is_nothing_to_wait_for_only_when_asked():
    """The rollout's look at the running service before it changes anything: a host without the unit
    (never deployed) is not unhealthy. Without unit_missing_ok the wait fails as before."""
    missing = ["LoadState=not-found\nActiveState=inactive\nSubState=dead\nNRestarts=0\n"]
    with mock.patch.object(basic.AnsibleModule, "run_command", _fake_run_command(list(missing))), \
            mock.patch.object(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name):
        failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "service": "vllm",
                                                     "timeout": 30, "interval": 1, "unit_missing_ok": True})
        assert not failed and result["unit_missing"] is True and "models" not in result
        failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "service": "vllm",
                                                     "timeout": 30, "interval": 1})
        assert failed and "not running" in result["msg"]
    loaded = ["LoadState=loaded\nActiveState=inactive\nSubState=dead\nNRestarts=0\n"]
    with mock.patch.object(basic.AnsibleModule, "run_command", _fake_run_command(loaded)), \
            mock.patch.object(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name):
        failed, result = run_module(vllm_wait.main, {"url": "http://127.0.0.1:9", "service": "vllm",
                                                     "timeout": 30, "interval": 1, "unit_missing_ok": True})
    assert failed and "not running" in result["msg"]  # a unit that exists and is down is unhealthy
