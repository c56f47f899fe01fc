# -*- coding: utf-8 -*-
"""What one apply of a launch writes, removes and restarts (launch/unit.py)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.unit import exec_start, plan_apply

BASE = "[Service]\nType=simple\nExecStart=/opt/vllm/bin/vllm serve m --port 8000\nRestart=on-failure\n"
SPEC_LINE = "ExecStart=/opt/vllm/bin/vllm serve m --port 8000 --speculative-config '{\"method\":\"eagle3\"}'"
SPEC_UNIT = BASE.replace("ExecStart=/opt/vllm/bin/vllm serve m --port 8000", SPEC_LINE)
TRIAL = "# trial\n[Service]\nExecStart=\n" + SPEC_LINE + "\n"


def test_exec_start_is_the_last_command_not_the_reset_nor_exec_start_pre():
    assert exec_start(TRIAL) == SPEC_LINE
    assert exec_start("ExecStartPre=-/bin/rm x\nExecStart=/a b\n") == "ExecStart=/a b"
    assert exec_start("ExecStart=\n") is None
    assert exec_start(None) is None


def test_a_new_unit_is_written_and_started():
    plan = plan_apply(None, None, unit_wanted=BASE)
    assert plan["write_unit"] and plan["reload"] and plan["restart"]
    assert not plan["write_trial"] and not plan["remove_trial"] and not plan["promoted"]


def test_the_same_unit_again_changes_nothing():
    plan = plan_apply(BASE, None, unit_wanted=BASE)
    assert not any(plan[k] for k in ("write_unit", "write_trial", "remove_trial", "reload", "restart", "promoted"))


def test_the_secrets_file_changed_restarts_without_a_file_change():
    plan = plan_apply(BASE, None, unit_wanted=BASE, restart=True)
    assert plan["restart"] and not plan["reload"]


def test_a_trial_is_written_over_the_unit_and_restarts():
    plan = plan_apply(BASE, None, trial_wanted=TRIAL)
    assert plan["write_trial"] and plan["reload"] and plan["restart"]
    assert not plan["write_unit"] and plan["refusal"] is None


def test_a_trial_without_a_unit_is_refused():
    plan = plan_apply(None, None, trial_wanted=TRIAL)
    assert plan["refusal"] == "no_unit"


def test_the_baseline_after_a_trial_removes_it_and_restarts():
    plan = plan_apply(BASE, TRIAL, unit_wanted=BASE)
    assert plan["remove_trial"] and plan["reload"] and plan["restart"] and not plan["promoted"]
    assert not plan["write_unit"]


def test_a_kept_trial_becomes_the_unit_without_a_restart():
    plan = plan_apply(BASE, TRIAL, unit_wanted=SPEC_UNIT)
    assert plan["write_unit"] and plan["remove_trial"] and plan["reload"]
    assert plan["promoted"] and not plan["restart"]


def test_a_kept_trial_restarts_when_the_secrets_file_changed():
    plan = plan_apply(BASE, TRIAL, unit_wanted=SPEC_UNIT, restart=True)
    assert plan["restart"] and not plan["promoted"]


def test_a_kept_launch_other_than_the_trial_restarts():
    other = SPEC_UNIT.replace("eagle3", "ngram")
    plan = plan_apply(BASE, TRIAL, unit_wanted=other)
    assert plan["restart"] and not plan["promoted"]


def test_a_stopped_service_is_never_restarted():
    assert not plan_apply(None, None, unit_wanted=BASE, state="stopped")["restart"]
    assert not plan_apply(BASE, None, unit_wanted=BASE, restart=True, state="stopped")["restart"]


def test_exactly_one_of_unit_and_trial():
    with pytest.raises(ValueError):
        plan_apply(BASE, None)
    with pytest.raises(ValueError):
        plan_apply(BASE, None, unit_wanted=BASE, trial_wanted=TRIAL)
