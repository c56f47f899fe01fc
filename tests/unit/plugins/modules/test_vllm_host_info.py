"""vllm_host_info: the account, its marker, systemd and the local model configs, read in one task."""
import json
import os
from unittest import mock

import pytest

from ansible.module_utils import basic

from ansible_collections.jetson.specdec.plugins.modules import vllm_host_info

from .utils import run_module


def _run(tmp_path, args, systemctl="/usr/bin/systemctl", version_out="systemd 252 (252.22-1~deb12u1)\n", rc=0):
    calls, warnings = [], []

    def run_command(self, cmd, **kwargs):
        calls.append(cmd)
        return rc, version_out, ""

    with mock.patch.object(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: systemctl), \
            mock.patch.object(basic.AnsibleModule, "run_command", run_command), \
            mock.patch.object(basic.AnsibleModule, "warn", lambda self, text: warnings.append(text)), \
            mock.patch.object(vllm_host_info, "SD_BOOTED_DIR", str(tmp_path / "run-systemd-system")):
        failed, result = run_module(vllm_host_info.main, args)
    assert not failed, result
    result["warnings"] = warnings
    return result, calls


def test_root_with_the_marker_is_read_as_it_is_and_systemd_is_booted(tmp_path):
    (tmp_path / "run-systemd-system").mkdir()
    marker = tmp_path / "marker"
    marker.write_text("# created by the role\n")
    result, calls = _run(tmp_path, {"user": "root", "account_marker": str(marker)})
    # the refusal of a uid-0 account is launch/host_checks.py's; here only what passwd says
    assert result["account"] == {"name": "root", "exists": True, "uid": 0, "created_by_role": True}
    assert result["systemd"] == {"booted": True, "version": 252}
    assert calls == [["/usr/bin/systemctl", "--version"]]
    assert result["changed"] is False


def test_a_missing_account_no_systemctl_and_no_systemd(tmp_path):
    result, calls = _run(tmp_path, {"user": "no-such-user-jetson-specdec", "account_marker": str(tmp_path / "m")},
                         systemctl=None)
    assert result["account"]["exists"] is False and result["account"]["uid"] is None
    assert result["systemd"] == {"booted": False, "version": None}  # the role's host.no_systemd refusal
    assert calls == []


def test_the_container_runtime_reads_no_account(tmp_path):
    result, dummy = _run(tmp_path, {}, rc=1)
    assert result["account"] == {"name": None, "exists": False, "uid": None, "created_by_role": False}
    assert result["systemd"]["version"] is None  # systemctl failed: unknown


def test_local_model_configs_are_read_and_a_broken_one_is_left_out(tmp_path):
    target, draft, broken = tmp_path / "target", tmp_path / "draft", tmp_path / "broken"
    for path in (target, draft, broken):
        path.mkdir()
    (target / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 1024}))
    (draft / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 1024, "num_hidden_layers": 1}))
    (broken / "config.json").write_text("{")
    latin = tmp_path / "latin"
    latin.mkdir()
    (latin / "config.json").write_bytes(b'{"model_type": "\xe9"}')  # not UTF-8: skipped, not a crash
    models = [str(target), str(draft), str(broken), str(latin), str(tmp_path / "absent"), "Qwen/Qwen3-0.6B"]
    result, dummy = _run(tmp_path, {"models": models})
    assert sorted(result["model_configs"]) == sorted([str(target), str(draft)])
    assert result["model_configs"][str(draft)]["num_hidden_layers"] == 1
    for bad in (broken, latin):
        assert any(os.path.join(str(bad), "config.json") in w for w in result["warnings"]), result["warnings"]


# Issue 34, medium 7: the unit files of the service's name, and whether the collection wrote them.
def _unit_dirs(tmp_path):
    dirs = tuple(str(tmp_path / d) for d in ("etc", "run", "usr-local-lib", "lib", "usr-lib"))
    for d in dirs:
        os.makedirs(d)
    return dirs


def _unit_result(tmp_path, dirs, name="vllm"):
    with mock.patch.object(vllm_host_info.host_info, "UNIT_DIRS", dirs):
        result, dummy = _run(tmp_path, {"service_name": name})
    return result["unit"]


TEMPLATE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "vllm_server", "templates",
                        "vllm.service.j2")


def test_the_role_template_carries_the_marker():
    with open(TEMPLATE) as handle:
        assert vllm_host_info.host_info.UNIT_MARKER in handle.read()


@pytest.mark.parametrize("content, ours", [
    ("# Ansible managed\n" + "# jetson.specdec.vllm_server unit: the role rewrites this file\n[Unit]\n", True),
    ("# Ansible managed\n# Board family: thor; speculation: off\n[Unit]\n", True),  # written before the marker
    ("[Unit]\nDescription=vLLM by hand\n[Service]\nExecStart=/opt/vllm/bin/vllm serve x\n", False),
    ("[Unit]\nDescription=OpenBSD Secure Shell server\n", False),
])
def test_a_unit_under_etc_is_the_collections_only_with_its_marker(tmp_path, content, ours):
    dirs = _unit_dirs(tmp_path)
    with open(os.path.join(dirs[0], "vllm.service"), "w") as handle:
        handle.write(content)
    unit = _unit_result(tmp_path, dirs)
    assert unit == {"name": "vllm", "paths": [os.path.join(dirs[0], "vllm.service")], "exists": True,
                    "written_by_collection": ours}


@pytest.mark.parametrize("where", ["lib", "usr-lib", "run", "etc-link", "etc-fifo", "etc-and-lib"])
def test_a_unit_elsewhere_a_link_or_a_fifo_is_not_the_collections(tmp_path, where):
    dirs = _unit_dirs(tmp_path)
    marked = "# jetson.specdec.vllm_server unit\n[Unit]\n"
    if where in ("lib", "usr-lib", "run"):
        path = os.path.join(dirs[{"run": 1, "lib": 3, "usr-lib": 4}[where]], "ssh.service")
        with open(path, "w") as handle:
            handle.write(marked)  # even with the marker: the collection never writes there
    elif where == "etc-link":
        with open(os.path.join(dirs[3], "real.service"), "w") as handle:
            handle.write(marked)
        os.symlink(os.path.join(dirs[3], "real.service"), os.path.join(dirs[0], "ssh.service"))
    elif where == "etc-fifo":
        os.mkfifo(os.path.join(dirs[0], "ssh.service"))
    else:
        for d in (dirs[0], dirs[3]):
            with open(os.path.join(d, "ssh.service"), "w") as handle:
                handle.write(marked)
    unit = _unit_result(tmp_path, dirs, name="ssh")
    assert unit["exists"] is True and unit["written_by_collection"] is False


def test_no_unit_of_the_name(tmp_path):
    assert _unit_result(tmp_path, _unit_dirs(tmp_path)) == {"name": "vllm", "paths": [], "exists": False,
                                                            "written_by_collection": False}


@pytest.mark.parametrize("kind", ["fifo", "link_out"])
def test_a_config_json_fifo_or_link_out_is_skipped_with_a_warning(tmp_path, kind):
    model = tmp_path / "model"
    model.mkdir()
    if kind == "fifo":
        os.mkfifo(str(model / "config.json"))
    else:
        (tmp_path / "secret.json").write_text(json.dumps({"model_type": "llama"}))
        os.symlink(str(tmp_path / "secret.json"), str(model / "config.json"))
    result, dummy = _run(tmp_path, {"models": [str(model)]})
    assert result["model_configs"] == {}
    assert any("not a regular file" in w or "outside the model's directory" in w for w in result["warnings"])
