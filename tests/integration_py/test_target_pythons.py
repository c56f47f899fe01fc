# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The target-side code on every target Python this machine has (3.8-3.12).

Jetsons run the modules under their own Python: JetPack 5 (Ubuntu 20.04)
ships 3.8, JetPack 6 (22.04) 3.10, JetPack 7 (24.04) 3.12.  The rest of the
unit tests run on the controller's Python only, so this file runs, for each
target Python found:

* the pure facts code on every fixture board, in one process, checked against
  the fixtures' expected.json exactly as test_jetson_detect does;
* every target-side module through Ansible itself (ad-hoc, local connection,
  ``ansible_python_interpreter``): AnsiballZ, argument_spec and exit_json on
  that interpreter, against a fixture tree, a temporary state file and the
  vLLM stand-in.

An interpreter that is not installed is skipped with its version named
(``JETSON_SPECDEC_PYTHON_3_8=/path/to/python3.8`` points at one explicitly).
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.jetson.specdec.tests.unit.plugins.module_utils.test_jetson_detect import (
    BOARDS, NAMES, load, lookup)
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.test_spec_headroom import (
    CATALOG, EAGLE, FP4, NANO_TOTAL, THOR_TOTAL)
# ``sim`` is a fixture: importing it makes it available to the tests here.
from ansible_collections.jetson.specdec.tests.integration_py.test_vllm_bench_simulator import (  # noqa: F401 pylint: disable=unused-import
    STEP_S, sim)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VERSIONS = ["3.8", "3.9", "3.10", "3.11", "3.12"]
ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")
GIB = 1024 ** 3

FACTS_SCRIPT = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.detect import gather
out = {}
for name in json.loads(sys.argv[3]):
    out[name] = gather(os.path.join(sys.argv[2], name, "root"))
print(json.dumps(out))
"""


def _version_of(path):
    try:
        out = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30,
                             universal_newlines=True, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def find_python(version):
    """An interpreter that really is ``version`` (pyenv shims of other versions answer with errors)."""
    explicit = os.environ.get("JETSON_SPECDEC_PYTHON_" + version.replace(".", "_"))
    candidates = [explicit] if explicit else []
    candidates.append(shutil.which("python" + version))
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", version + ".*", "bin",
                                                "python" + version)), reverse=True)
    candidates.append("/usr/bin/python" + version)
    for path in candidates:
        if path and os.access(path, os.X_OK) and _version_of(path) == version:
            return path
    return None


@pytest.fixture(scope="module")
def collections_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("target-collections")
    ns = base / "ansible_collections" / "jetson"
    ns.mkdir(parents=True)
    os.symlink(REPO, str(ns / "specdec"))
    return str(base)


@pytest.fixture(params=VERSIONS, ids=["py" + v for v in VERSIONS])
def target_python(request):
    path = find_python(request.param)
    if path is None:
        pytest.skip("Python %s is not installed here" % request.param)
    return path


def adhoc(python, collections, module, args, check=False):
    """Run one module on localhost under ``python``; return its result dict."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    env.pop("ANSIBLE_CONFIG", None)  # Ansible's defaults (cwd below has no ansible.cfg)
    # Implicit localhost pins the controller's Python; extra vars win over that.
    cmd = [ANSIBLE, "localhost", "-c", "local", "-e", "ansible_python_interpreter=" + python,
           "-m", module, "-a", json.dumps(args)]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=300,
                          cwd=collections, universal_newlines=True, check=False)
    try:
        doc = json.loads(proc.stdout)
        result = doc["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError):
        raise AssertionError("no JSON result from %s (rc %d):\n%s\n%s" % (module, proc.returncode,
                                                                          proc.stdout[-2000:], proc.stderr[-2000:]))
    return result


def test_facts_code_on_every_fixture(target_python, collections_dir):
    out = subprocess.run([target_python, "-c", FACTS_SCRIPT, collections_dir, BOARDS, json.dumps(NAMES)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    facts_by_board = json.loads(out.stdout)
    assert sorted(facts_by_board) == NAMES
    for name in NAMES:
        expected, facts = load(name), facts_by_board[name]
        for key, want in expected["expect"].items():
            assert lookup(facts, key) == want, "%s on %s: %s" % (name, target_python, key)
        for fragment in expected["warnings_match"]:
            assert any(fragment in w for w in facts["warnings"]), (name, fragment, facts["warnings"])


def test_modules_through_ansible(target_python, collections_dir, tmp_path, sim):
    def run(module, args, **kw):
        return adhoc(target_python, collections_dir, module, args, **kw)

    # The modules below really run on this interpreter, not the controller's.
    setup = run("ansible.builtin.setup", {"filter": "ansible_python_version"})
    assert setup["ansible_facts"]["ansible_python_version"].startswith(_version_of(target_python) + ".")

    facts = run("jetson.specdec.jetson_facts",
                {"root": os.path.join(BOARDS, "thor-t5000-devkit-r39.2", "root")})
    assert not facts.get("failed"), facts
    assert facts["ansible_facts"]["jetson"]["family"] == "thor"
    assert facts["ansible_facts"]["jetson"]["l4t"]["major"] == 39

    common = {"target_model": FP4, "catalog": CATALOG, "hf_home": str(tmp_path / "hf"),
              "gpu_memory_utilization": 0.7, "max_model_len": 8192}
    fits = run("jetson.specdec.spec_headroom", dict(common, speculative_config=EAGLE,
                                                    memory_total_bytes=THOR_TOTAL,
                                                    memory_available_bytes=110 * GIB))
    assert not fits.get("failed") and fits["fits"] is True, fits
    nano = run("jetson.specdec.spec_headroom", dict(
        common, target_model="meta-llama/Llama-3.1-8B-Instruct",
        speculative_config={"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct",
                            "num_speculative_tokens": 3},
        memory_total_bytes=NANO_TOTAL, memory_available_bytes=6 * GIB, gpu_memory_utilization=0.5,
        max_model_len=4096, max_num_seqs=4, family="orin_nano", l4t_major=36))
    assert not nano.get("failed") and nano["fits"] is False, nano
    assert "does not fit" in nano["reasons"][0]

    state = str(tmp_path / "state" / "state.json")
    config = {"model": "Qwen/Qwen3-8B", "speculative_config": {"method": "ngram"}}
    planned = run("jetson.specdec.rollout_state", {"state": "write", "status": "kept", "path": state,
                                                   "config": config}, check=True)
    assert planned["changed"] and not os.path.exists(state)
    written = run("jetson.specdec.rollout_state", {"state": "write", "status": "kept", "path": state,
                                                   "config": config})
    assert written["changed"] and json.load(open(state))["status"] == "kept"
    read = run("jetson.specdec.rollout_state", {"path": state, "config": config})
    assert read["needs_rollout"] is False and not read["changed"]

    url = sim()
    ready = run("jetson.specdec.vllm_wait", {"url": url, "timeout": 30, "interval": 1})
    assert not ready.get("failed") and ready["models"], ready
    bench = run("jetson.specdec.vllm_bench", {"url": url, "concurrency": [1, 2], "num_prompts": 4,
                                              "warmup_prompts": 1, "input_len": 32, "output_len": 16,
                                              "request_timeout": 20, "max_duration": 120})
    assert not bench.get("failed"), bench
    for level in bench["runs"]:
        assert level["completed"] == 4 and level["output_tokens"] == 4 * 16
        assert level["tpot_ms_p50"] == pytest.approx(STEP_S * 1000, rel=0.25)
    gone = run("jetson.specdec.vllm_bench", {"url": "http://127.0.0.1:9", "max_duration": 10})
    assert gone.get("failed") and "http://127.0.0.1:9" in gone["msg"]
