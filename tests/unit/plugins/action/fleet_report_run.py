"""Run the jetson.specdec.fleet_report action in-process, as a task would (its real argument validation)."""
from unittest import mock

from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.action import fleet_report


class _Task(object):
    pass


def run_report(args):
    """(failed, result) of the action for the task arguments ``args``; ``_ansible_check_mode`` sets check mode."""
    args = dict(args)
    action = fleet_report.ActionModule.__new__(fleet_report.ActionModule)
    action._task = _Task()
    action._task.check_mode = bool(args.pop("_ansible_check_mode", False))
    action._task.args = args
    action._load_name = "jetson.specdec.fleet_report"
    with mock.patch.object(ActionBase, "run", lambda self, tmp=None, task_vars=None: {}):
        result = action.run(task_vars={})
    return bool(result.get("failed")), result
