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
