# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""vllm_job_wait: the action's one shell look at an async job, run through /bin/sh on real files
(tests/unit/plugins/modules/test_vllm_job_wait.py reads its lines without a shell)."""
import json
import subprocess
import time

from ansible_collections.jetson.specdec.plugins.plugin_utils.background import COLLECT, LOOK, WAIT, look_paths, parse_look


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


def waiting_look(job, progress, wait):
    """The action's look after its wait on the host (WAIT + LOOK), and how long the shell took."""
    paths = look_paths(str(job), str(progress), wait)
    t0 = time.monotonic()
    out = _sh((WAIT % paths) + LOOK % paths, job.parent)
    return parse_look(out, 0.0), time.monotonic() - t0


def test_a_waiting_look_answers_when_the_job_ends_not_at_the_end_of_its_wait(tmp_path):
    job, progress = _paths(tmp_path)
    # async_wrapper's first record, exactly as ansible-core 2.19 writes it
    job.write_text(json.dumps({"started": True, "finished": False, "ansible_job_id": "123.456"}))
    # written aside and renamed, as async_wrapper's jwrite does: the look never reads half a result
    writer = subprocess.Popen(["/bin/sh", "-c", "sleep 1.5; printf '%%s' '%s' > '%s.tmp'; mv '%s.tmp' '%s'"
                               % (json.dumps({"changed": False, "runs": [1], "started_at": 5}), job, job, job)])
    res, took = waiting_look(job, progress, 20)
    writer.wait()
    assert res["finished"] is True and res["job"]["runs"] == [1]
    assert 1.0 <= took < 5.0, took  # seen within a second of the write, not after 20 s


def test_a_waiting_look_at_a_running_job_answers_after_its_wait(tmp_path):
    job, progress = _paths(tmp_path)
    job.write_text(json.dumps({"started": 1, "finished": 0, "ansible_job_id": "123.456"}))  # older cores: 1 / 0
    res, took = waiting_look(job, progress, 2)
    assert res["finished"] is False and 1.5 <= took < 5.0, took


def test_a_finished_result_that_mentions_started_is_not_waited_on(tmp_path):
    job, progress = _paths(tmp_path)
    job.write_text(json.dumps({"changed": True, "serving": {"started": True, "finished": False}}))
    res, took = waiting_look(job, progress, 20)
    assert res["finished"] is True and took < 1.0, took


def test_a_job_file_not_written_yet_is_waited_for_then_missing(tmp_path):
    job, progress = _paths(tmp_path)
    res, took = waiting_look(job, progress, 1)
    assert res == {"missing": True} and 0.5 <= took < 4.0, took
    writer = subprocess.Popen(["/bin/sh", "-c", "sleep 0.5; printf '{\"rc\": 0}' > '%s.tmp'; mv '%s.tmp' '%s'"
                               % (job, job, job)])
    res, took = waiting_look(job, progress, 10)
    writer.wait()
    assert res["finished"] is True and took < 4.0, took


def test_a_waiting_look_with_shell_characters_in_its_path_is_only_a_path(tmp_path):
    job, dummy = _paths(tmp_path, jid="1; touch pwned")
    job.write_text(json.dumps({"rc": 0}))
    res, unused = waiting_look(job, tmp_path / "$(touch pwned2)", 3)
    assert res["finished"] is True and not list(tmp_path.glob("**/pwned*"))
