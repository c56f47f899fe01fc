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


def _main_pid(host):
    return host.check_output("systemctl show -p MainPID --value vllm")


def test_the_running_server_is_confined(host):
    """The hardening is in force on the running process, not only written in the unit (issue 18)."""
    props = dict(line.split("=", 1) for line in host.check_output(
        "systemctl show vllm -p ProtectSystem -p ProtectHome -p CapabilityBoundingSet -p OOMScoreAdjust "
        "-p StartLimitBurst -p StartLimitIntervalUSec -p UMask -p RestrictNamespaces "
        "-p SystemCallArchitectures -p ProtectKernelLogs -p RestrictAddressFamilies -p NoNewPrivileges").splitlines())
    assert props["ProtectSystem"] == "strict" and props["ProtectHome"] == "yes", props
    assert props["CapabilityBoundingSet"] == "" and props["NoNewPrivileges"] == "yes", props
    assert props["OOMScoreAdjust"] == "500" and props["StartLimitBurst"] == "5", props
    assert props["UMask"] == "0027" and props["ProtectKernelLogs"] == "yes", props
    assert props["SystemCallArchitectures"] == "native", props
    assert set(props["RestrictAddressFamilies"].split()) == {"AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"}, props
    # The window holds burst x (restart delay + health timeout): a crash loop after loading still stops.
    assert props["StartLimitIntervalUSec"] != "0", props
    pid = _main_pid(host)
    status = host.file("/proc/%s/status" % pid).content_string
    assert "NoNewPrivs:\t1" in status and "CapEff:\t0000000000000000" in status, status
    assert host.file("/proc/%s/oom_score_adj" % pid).content_string.strip() == "500"
    # ProtectSystem=strict + ReadWritePaths: the service's mount namespace has / read-only and
    # only its state and cache directories writable; ProtectHome=yes covers /home and /root.
    mounts = {}
    for line in host.file("/proc/%s/mountinfo" % pid).content_string.splitlines():
        fields = line.split()
        mounts[fields[4]] = fields[5].split(",")
    assert "ro" in mounts["/"], mounts.get("/")
    assert "rw" in mounts["/var/lib/vllm"], mounts.get("/var/lib/vllm")
    assert "/home" in mounts and "/root" in mounts and "ro" in mounts["/root"], sorted(mounts)


def test_the_role_recorded_the_account_it_created(host):
    marker = host.file("/etc/vllm/accounts/vllm")
    assert marker.exists and marker.user == "root" and "created by jetson.specdec.vllm_server" in marker.content_string


def test_an_account_the_role_did_not_create_kept_its_shell(host):
    """side_effect tried operator1 (a login account) as the service user: refused, shell and home unchanged."""
    if host.backend.get_hostname() != "thor-01":
        pytest.skip("side_effect creates operator1 on thor-01 only")
    user = host.user("operator1")
    assert user.shell == "/bin/bash" and user.home == "/home/operator1"
    assert not host.file("/etc/vllm/accounts/operator1").exists


def test_the_speculative_model_was_fetched_into_the_cache_as_the_service_user(host):
    # vllm_server's install step fetched the head (jetson.specdec.vllm_prefetch) before the unit started it
    spec, dummy = EXPECTED[_facts_family(host)]
    repo = "/var/lib/vllm/huggingface/hub/models--" + (spec or {}).get("model", "none/none").replace("/", "--")
    if spec is None:
        assert not host.file(repo).exists
        return
    ref = host.file(repo + "/refs/main")
    assert ref.exists and ref.user == "vllm", repo
    snapshot = host.file("%s/snapshots/%s/config.json" % (repo, ref.content_string.strip()))
    assert snapshot.exists and snapshot.user == "vllm"
