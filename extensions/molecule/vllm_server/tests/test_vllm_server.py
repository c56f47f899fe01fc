"""What the role left on each simulated board."""
import json

import pytest


def _facts_family(host):
    return {"thor-01": "thor", "agx-01": "agx_orin", "nano-01": "orin_nano"}[host.backend.get_hostname()]


def _exec_start(host):
    unit = host.file("/etc/systemd/system/vllm.service").content_string
    return [line for line in unit.splitlines() if line.startswith("ExecStart=")][0]


def test_unit_file(host):
    unit = host.file("/etc/systemd/system/vllm.service")
    assert unit.exists and unit.user == "root" and unit.mode == 0o644
    text = unit.content_string
    assert "User=vllm" in text
    assert "NoNewPrivileges=yes" in text
    assert "EnvironmentFile=-/etc/vllm/vllm.env" in text
    # The secret never appears in the unit.
    assert "molecule-secret-key" not in text


def test_speculation_per_board(host):
    line = _exec_start(host)
    family = _facts_family(host)
    if family == "thor":
        assert '"num_speculative_tokens\\":5' in line.replace(' ', '') or '\\"num_speculative_tokens\\":5' in line
        assert "--gpu-memory-utilization 0.75" in line  # 0.80 for Thor, lowered by 0.05
    elif family == "agx_orin":
        assert '\\"num_speculative_tokens\\":3' in line
        assert "--gpu-memory-utilization 0.75" in line
    else:
        assert "--speculative-config" not in line
        assert "--gpu-memory-utilization 0.80" in line


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
