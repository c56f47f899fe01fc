"""rollout_publish: the finished record in the run's spool and in the run's custom stats, one task on the controller."""
import json
import os

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.action import rollout_publish
from ansible_collections.jetson.specdec.plugins.plugin_utils import spool as spool_utils
from ansible_collections.jetson.specdec.plugins.module_utils.record.names import UnsafeName

RECORD = {"host": "thor-01", "status": "kept", "simulated": True}


def test_the_record_is_finished_and_spooled_atomically(tmp_path):
    spool = str(tmp_path / "run" / "hosts")
    record, path = spool_utils.publish(RECORD, spool, "thor-01", started=100.0, now=142.25)
    assert path == os.path.join(spool, "thor-01.json")
    assert record["timings"] == {"seconds": 42.2} and "timings" not in RECORD  # the input is not changed
    with open(path) as handle:
        assert json.load(handle) == record
    assert os.listdir(spool) == ["thor-01.json"]  # no temporary file left beside it
    record, dummy = spool_utils.publish(RECORD, spool, "thor-01")
    assert record["timings"] == {"seconds": None}  # no start known (a check that failed first)


@pytest.mark.parametrize("host", ["../etc", "a/b", "..", "-x", "bad\nname"])
def test_a_host_name_that_is_no_file_name_is_refused_before_anything_is_written(tmp_path, host):
    with pytest.raises(UnsafeName) as err:
        spool_utils.publish(RECORD, str(tmp_path / "hosts"), host)
    assert "inventory host name" in str(err.value)
    assert not (tmp_path / "hosts").exists()


class _Obj(object):
    pass


def _action(args, check_mode=False):
    action = rollout_publish.ActionModule.__new__(rollout_publish.ActionModule)
    action._task = _Obj()
    action._task.args, action._task.check_mode = dict(args), check_mode
    action.validate_argument_spec = lambda argument_spec: (None, dict(
        dict((k, v.get("default")) for k, v in argument_spec.items()), **args))
    return action


def test_the_action_returns_the_record_and_the_stats_the_summary_callback_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    spool = str(tmp_path / "hosts")
    result = _action({"record": RECORD, "spool_dir": spool, "started": 1.0}).run(task_vars={"inventory_hostname": "thor-01"})
    assert not result.get("failed") and result["changed"] is False
    assert result["ansible_stats"] == {"data": {"jetson_specdec": {"thor-01": result["record"]}},
                                       "per_host": False, "aggregate": True}
    assert os.path.exists(os.path.join(spool, "thor-01.json"))
    # a queued host: spooled, not summarised (its final record comes later in the run)
    result = _action({"record": RECORD, "spool_dir": spool, "stats": False}).run(task_vars={"inventory_hostname": "agx-01"})
    assert "ansible_stats" not in result and os.path.exists(os.path.join(spool, "agx-01.json"))


def test_the_action_fails_with_the_rule_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    result = _action({"record": RECORD, "spool_dir": str(tmp_path)}).run(task_vars={"inventory_hostname": "a/b"})
    assert result["failed"] and "path separator" in result["msg"]
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = _action({"record": RECORD, "spool_dir": str(blocker / "hosts")}).run(task_vars={"inventory_hostname": "h"})
    assert result["failed"] and "rollout_report_dir" in result["msg"]


def test_each_host_reads_its_own_time_not_the_publish_time_of_its_batch(tmp_path, monkeypatch):
    # two hosts of one batch publish together (at 500): each record reads its own start..end
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(spool_utils.time, "time", lambda: 500.0)
    spool = str(tmp_path / "hosts")
    times = {"evaluated": (100.0, 283.3), "refused": (283.4, 290.0), "no-end": (450.0, None)}
    out = {}
    for host, (started, ended) in times.items():
        args = {"record": dict(RECORD, host=host), "spool_dir": spool, "started": started}
        if ended is not None:
            args["ended"] = ended
        out[host] = _action(args).run(task_vars={"inventory_hostname": host})["record"]["timings"]["seconds"]
    assert out == {"evaluated": 183.3, "refused": 6.6, "no-end": 50.0}  # no end known: until the publish


def test_the_checks_notes_are_said_as_warnings_and_empty_ones_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    notes = ["nx-01 shares its machine id (sha256 ab12...) with nx-02", "", "nx-01: evaluated again: its config changed"]
    result = _action({"record": RECORD, "spool_dir": str(tmp_path), "notes": notes}).run(
        task_vars={"inventory_hostname": "nx-01"})
    assert result["warnings"] == [notes[0], notes[2]] and not result.get("failed")
    # nothing to say: no warnings key at all (the callback would print an empty one)
    result = _action({"record": RECORD, "spool_dir": str(tmp_path), "notes": ["", ""]}).run(
        task_vars={"inventory_hostname": "nx-01"})
    assert "warnings" not in result
