"""vllm_wait through AnsibleModule with systemd and the server faked: the serving gap, a bad URL
(tests/integration_py/test_vllm_wait_module.py has the crash loop, the missing unit and a real server)."""
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
