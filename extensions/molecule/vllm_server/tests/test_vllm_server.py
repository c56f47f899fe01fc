"""What the role left on each simulated board."""
import json

import pytest


def _facts_family(host):
    return {"thor-01": "thor", "agx-01": "agx_orin", "nano-01": "orin_nano"}[host.backend.get_hostname()]


def _server_argv(host):
    """The argv the running server received, from /proc: proves systemd's unquoting."""
    pid = host.check_output("systemctl show -p MainPID --value vllm")
    return host.file("/proc/%s/cmdline" % pid).content.split(b"\0")[:-1]


def _flag(argv, name):
    return argv[argv.index(name.encode()) + 1].decode() if name.encode() in argv else None


EXPECTED = {
    "thor": ({"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
              "num_speculative_tokens": 5, "draft_tensor_parallel_size": 1}, "0.75"),
    "agx_orin": ({"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                  "num_speculative_tokens": 3, "draft_tensor_parallel_size": 1}, "0.75"),
    "orin_nano": (None, "0.75"),
}


def test_unit_file(host):
    unit = host.file("/etc/systemd/system/vllm.service")
    assert unit.exists and unit.user == "root" and unit.mode == 0o644
    text = unit.content_string
    assert "User=vllm" in text
    assert "NoNewPrivileges=yes" in text
    assert "EnvironmentFile=-/etc/vllm/vllm.env" in text
    # The secret never appears in the unit.
    assert "molecule-secret-key" not in text


def test_server_received_the_config_we_meant(host):
    argv = _server_argv(host)
    spec, util = EXPECTED[_facts_family(host)]
    raw = _flag(argv, "--speculative-config")
    assert (json.loads(raw) if raw else None) == spec
    # Thor and AGX Orin: 0.80 in group_vars, lowered by 0.05 with speculation; Nano: 0.75 baseline.
    assert _flag(argv, "--gpu-memory-utilization") == util


def test_env_file_is_secret(host):
    env = host.file("/etc/vllm/vllm.env")
    assert env.user == "root" and env.group == "root" and env.mode == 0o600
    assert "VLLM_API_KEY=molecule-secret-key" in env.content_string


def test_service_user(host):
    user = host.user("vllm")
    assert user.shell == "/usr/sbin/nologin"
    assert "video" in user.groups


def test_service_running(host):
    service = host.service("vllm")
    if not service.is_running:
        print(host.run("journalctl -u vllm -n 50 --no-pager").stdout)
    assert service.is_running and service.is_enabled
    assert host.process.filter(user="vllm", comm="vllm") or host.run("pgrep -u vllm -f 'vllm serve'").rc == 0


@pytest.mark.parametrize("auth,status", [(True, 200), (False, 401)])
def test_models_endpoint(host, auth, status):
    header = "-H 'Authorization: Bearer molecule-secret-key'" if auth else ""
    script = (
        "import urllib.request,urllib.error,json\n"
        "req=urllib.request.Request('http://127.0.0.1:8000/v1/models'%s)\n"
        "try:\n r=urllib.request.urlopen(req,timeout=10);print(r.status);print(r.read().decode())\n"
        "except urllib.error.HTTPError as e:\n print(e.code)\n"
    ) % (",headers={'Authorization':'Bearer molecule-secret-key'}" if auth else "")
    del header
    out = host.check_output("python3 -c \"%s\"" % script.replace('"', '\\"')).splitlines()
    assert int(out[0]) == status
    if auth:
        assert json.loads(out[1])["data"][0]["object"] == "model"
