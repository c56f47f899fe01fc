# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""vllm_job_wait: the action's one shell look at an async job, run through /bin/sh on real files
(tests/unit/plugins/modules/test_vllm_job_wait.py reads its lines without a shell)."""
import json
import subprocess

from ansible_collections.jetson.specdec.plugins.plugin_utils.background import COLLECT, LOOK, look_paths, parse_look


def _paths(tmp_path, jid="123.456"):
    (tmp_path / "async").mkdir(exist_ok=True)
    return tmp_path / "async" / jid, tmp_path / "bench progress.json"  # a space: the paths are quoted


def _sh(command, cwd):
    """What the action's _low_level_execute_command runs on the host: one /bin/sh command."""
    return subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=True, cwd=str(cwd)).stdout


def look(job, progress):
    return parse_look(_sh(LOOK % look_paths(str(job), str(progress)), job.parent), 0.0)


def test_a_running_job_returns_its_progress_and_keeps_its_files(tmp_path):
    job, progress = _paths(tmp_path)
    job.write_text(json.dumps({"started": 1, "finished": 0, "ansible_job_id": "123.456"}))
    snap = {"version": 1, "step": "level", "done": 3, "total": 8}
    progress.write_text(json.dumps(snap))
    res = look(job, progress)
    assert res["finished"] is False and res["job"] is None
    assert res["progress"] == snap and res["now"] > 1.7e9  # the host's clock, not the fallback
    assert job.exists() and progress.exists()


def test_a_finished_job_returns_the_benchmarks_result_and_is_collected_once(tmp_path):
    job, progress = _paths(tmp_path)
    result = {"changed": False, "runs": [{"concurrency": 1}], "bench_warnings": []}
    job.write_text(json.dumps(result))
    progress.write_text("{\"version\": 1, \"finished\": true}")
    res = look(job, progress)
    assert res["finished"] is True and res["job"] == result
    _sh(COLLECT % look_paths(str(job), str(progress)), tmp_path)
    assert not job.exists() and not progress.exists()
    assert look(job, progress) == {"missing": True}


def test_a_half_written_status_file_is_a_running_job(tmp_path):
    job, progress = _paths(tmp_path)
    job.write_text("{\"runs\": [")
    res = look(job, progress)
    assert res["finished"] is False and res["progress"] is None


def test_a_path_with_shell_characters_is_only_a_path(tmp_path):
    job, dummy = _paths(tmp_path, jid="1; touch pwned")
    job.write_text(json.dumps({"rc": 0}))
    assert look(job, tmp_path / "$(touch pwned2)")["finished"] is True
    assert not list(tmp_path.glob("**/pwned*"))  # the shell ran in tmp_path/async: nothing was touched
