"""Two first-run mistakes an operator makes, on the rollout playbook in check mode (issue 19):

- vllm_server_model forgotten: one clear refusal naming the variable and where to set it, from the
  first check of the preflight, and nothing else failing (a local-connection host whose facts come
  from a Thor fixture tree: read-only, no container, no server);
- a board that cannot be reached over SSH: its record and the report keep the real connection
  error (an unreachable host skips rescue, so the error used to be lost).
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ROOT = os.path.join(REPO, "tests", "fixtures", "boards", "thor-t5000-devkit-r39.2", "root")


def check_run(tmp_path, hosts, run_id, *extra):
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps({"all": {"children": {"jetsons": {"hosts": hosts}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(inv), os.path.join(REPO, "playbooks", "rollout.yml"),
                           "--check", "-e", "rollout_report_dir=%s" % (tmp_path / "reports"), "-e", "rollout_run_id=%s" % run_id]
                          + list(extra),
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc, proc.stdout + proc.stderr


def test_a_forgotten_model_is_one_clear_refusal(tmp_path):
    # jetson_specdec_root: the one name for the board files' root (rollout_facts_root and vllm_server_facts_root follow it)
    proc, out = check_run(tmp_path, {"t1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                            "jetson_specdec_root": ROOT}}, "nomodel")
    assert proc.returncode != 0, out[-3000:]
    assert "input.model_missing: vllm_server_model is not set" in out and "group_vars" in out, out[-3000:]
    assert "Finalization of task args" not in out and "is undefined" not in out, out[-3000:]
    # The preflight's first check stopped it: the refusal is the host's record, once.
    failed_tasks = [line for line in out.splitlines() if line.startswith("fatal: [t1]")]
    assert len(failed_tasks) == 2, failed_tasks  # the refusal, and the check counting the host as failed
    record = json.loads((tmp_path / "reports" / "nomodel" / "hosts" / "t1.json").read_text())
    assert record["status"] == "failed" and record["error"].count("input.model_missing") == 1, record
    assert record["facts"]["family"] == "thor", record  # read under jetson_specdec_root


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the ssh client")
def test_an_unreachable_board_keeps_its_connection_error_in_the_record_and_report(tmp_path):
    # Port 1 on loopback: the connection is refused at once.
    # jetson_specdec_hosts picks the hosts (the second board is not part of this run)
    board = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
             "vllm_server_model": "meta-llama/Llama-3.1-8B-Instruct"}
    proc, out = check_run(tmp_path, {"gone-01": board, "other-01": board}, "gone", "-e", "jetson_specdec_hosts=gone-01")
    assert not (tmp_path / "reports" / "gone" / "hosts" / "other-01.json").exists(), out[-3000:]
    assert proc.returncode != 0, out[-3000:]
    record = json.loads((tmp_path / "reports" / "gone" / "hosts" / "gone-01.json").read_text())
    assert record["status"] == "unreachable", record
    assert "Connection refused" in record["error"] and "port 1" in record["error"], record
    # A run in which every board failed still ends with its report.
    md = (tmp_path / "reports" / "gone" / "report.md").read_text()
    assert "Connection refused" in md and "no record" not in md, md
    assert "unreachable" in md, md
