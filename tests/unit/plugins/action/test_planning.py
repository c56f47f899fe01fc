"""The planning step of vllm_plan and vllm_switch: when the candidate's memory is checked, what spec_headroom is
asked, what a refusal fails, a module that cannot run; and what vllm_plan says it planned."""
import pytest
from ansible.errors import AnsibleConnectionFailure, AnsibleError

from ansible_collections.jetson.specdec.plugins.module_utils.launch.plan import LaunchPlanError
from ansible_collections.jetson.specdec.plugins.plugin_utils import planning
from ansible_collections.jetson.specdec.plugins.plugin_utils.planning import memory_args, needs_memory_check


def _launch(speculation=True, candidate_refusals=(), baseline_refusals=()):
    config = {"method": "eagle3", "model": "h", "num_speculative_tokens": 5}
    return {"candidate": {"plan": {"speculation": speculation, "speculative_config": config},
                          "gpu_memory_utilization": 0.75, "refusals": list(candidate_refusals)},
            "baseline": {"refusals": list(baseline_refusals), "gpu_memory_utilization": 0.8}}


def test_the_memory_of_an_allowed_candidate_is_checked_only_when_the_switch_applies_it():
    assert needs_memory_check(_launch(), True) is True
    assert needs_memory_check(_launch(), False) is False  # the baseline: its memory is the running one's
    assert needs_memory_check(_launch(speculation=False), True) is False  # no speculation planned (a refused family)
    # a refusal of the rules is the answer already: no module run on the host
    assert needs_memory_check(_launch(candidate_refusals=[{"rule": "board.family"}]), True) is False
    assert needs_memory_check(_launch(baseline_refusals=[{"rule": "runtime.image"}]), True) is False


def test_spec_headroom_gets_the_plans_config_and_utilization_and_no_unset_option():
    args = memory_args(_launch(), {"target_model": "m", "l4t_major": None, "gpu_memory_utilization": 0.9,
                                   "reclaimable_bytes": 0})
    assert args["speculative_config"]["method"] == "eagle3"
    assert args["gpu_memory_utilization"] == 0.75  # the candidate's (the drop applied), never the caller's
    assert "l4t_major" not in args  # unset: the module's default, as omit did in the task
    assert args["reclaimable_bytes"] == 0 and args["target_model"] == "m"


def test_reclaiming_the_baseline_counts_its_planned_allocation_free_instead_of_the_callers_bytes():
    memory = {"memory_total_bytes": 64 * 2 ** 30, "reclaimable_bytes": 5}
    assert memory_args(_launch(), memory, reclaim_baseline=True)["reclaimable_bytes"] == int(0.8 * 64 * 2 ** 30)
    assert memory_args(_launch(), memory)["reclaimable_bytes"] == 5


def test_an_error_on_the_way_to_the_host_is_a_failed_result_and_a_lost_connection_stays_one():
    """The step returns its launch when a module cannot run (the role registers the result as the fact)."""
    class Fake(object):
        def __init__(self, error):
            self.error = error

        def _execute_module(self, module_name, module_args, task_vars):
            raise self.error

    result = planning.run_module(Fake(AnsibleError("could not transfer the module")), "jetson.specdec.vllm_unit", {}, {})
    assert result == {"failed": True, "msg": "jetson.specdec.vllm_unit: could not transfer the module"}
    with pytest.raises(AnsibleConnectionFailure):  # unreachable, as for any task
        planning.run_module(Fake(AnsibleConnectionFailure("ssh: connection refused")), "jetson.specdec.vllm_unit", {}, {})


class _Host(object):
    """What the step runs on the host: spec_headroom, answered with ``headroom``."""

    def __init__(self, headroom):
        self.headroom, self.calls = headroom, []

    def _execute_module(self, module_name, module_args, task_vars):
        self.calls.append((module_name, module_args))
        return dict(self.headroom, invocation={"module_args": module_args})


def _step(monkeypatch, launch, headroom=None, check_memory=True, published=None, error=None):
    def fake_plan(inputs):
        if error:
            raise LaunchPlanError(error)
        return launch

    folded = []
    monkeypatch.setattr(planning, "launch_plan", fake_plan)
    monkeypatch.setattr(planning, "with_headroom", lambda lau, hr: folded.append(hr) or dict(
        lau, refusals=lau["refusals"] + ([{"rule": "memory.headroom"}] if hr and not hr.get("fits") else []),
        refusal_message="refused: memory" if hr and not hr.get("fits") else lau["refusal_message"]))
    host = _Host(headroom or {"fits": True})
    args = {"launch_input": {}, "check_memory": check_memory, "memory": {"memory_total_bytes": 100},
            "reclaim_baseline": True}
    result, go_on = planning.plan_step(host, args, {"vllm_server_launch": published or {}}, "jetson.specdec.vllm_plan")
    return result, go_on, host.calls, folded


def _planned(refusals=(), candidate_refusals=()):
    launch = _launch(candidate_refusals=candidate_refusals, baseline_refusals=refusals)
    launch.update(refusals=list(refusals), refusal_message="refused: " + ", ".join(r["rule"] for r in refusals),
                  argv=["vllm", "serve", "m"])
    return launch


def test_a_fitting_candidate_is_checked_on_the_host_and_the_launch_goes_on(monkeypatch):
    result, go_on, calls, folded = _step(monkeypatch, _planned(), headroom={"fits": True, "headroom_bytes": 7})
    assert go_on and not result.get("failed")
    assert [name for name, dummy in calls] == ["jetson.specdec.spec_headroom"]
    assert calls[0][1]["reclaimable_bytes"] == 80  # the planned baseline's 0.8 of 100 bytes
    assert result["memory_check"] == {"fits": True, "headroom_bytes": 7}  # without the module's invocation
    assert folded == [{"fits": True, "headroom_bytes": 7}] and result["argv"] == ["vllm", "serve", "m"]


def test_a_candidate_that_does_not_fit_fails_the_step_with_the_memory_refusal(monkeypatch):
    result, go_on, dummy, dummy2 = _step(monkeypatch, _planned(), headroom={"fits": False})
    assert not go_on and result["failed"] and result["msg"] == "refused: memory"
    assert result["refusals"] == [{"rule": "memory.headroom"}]  # the fact the ladder reads is still returned


def test_a_skipped_check_changes_nothing_and_no_check_runs_for_a_refused_candidate(monkeypatch):
    dummy, go_on, dummy2, folded = _step(monkeypatch, _planned(), headroom={"skipped": True})
    assert go_on and folded == [None]
    result, go_on, calls, folded = _step(monkeypatch, _planned(candidate_refusals=[{"rule": "board.family"}]))
    # a refusal of the candidate alone is the plan's answer when the baseline is applied: not a failure
    assert go_on and calls == [] and folded == [] and result["memory_check"] is None


def test_a_refused_baseline_fails_the_step_and_inputs_that_cannot_be_planned_keep_the_last_launch(monkeypatch):
    result, go_on, calls, dummy = _step(monkeypatch, _planned(refusals=[{"rule": "runtime.image"}]))
    assert not go_on and result["failed"] and result["msg"] == "refused: runtime.image" and calls == []
    result, go_on, dummy, dummy2 = _step(monkeypatch, None, published={"url": "http://127.0.0.1:8000"},
                                         error="k must be an integer")
    assert not go_on and result == {"url": "http://127.0.0.1:8000", "failed": True,
                                    "msg": "jetson.specdec.vllm_plan: k must be an integer"}


def test_vllm_plan_says_what_it_planned_and_why():
    launch = {"speculation": True,
              "plan": {"speculation": True, "speculative_config": {"method": "eagle3", "num_speculative_tokens": 5},
                       "selection_reason": "published EAGLE-3 head", "gpu_memory_utilization": 0.75,
                       "warnings": ["baseline warning"]},
              "candidate": {"warnings": ["candidate warning"]}}
    assert planning.summary(launch) == [
        'speculation: {"method": "eagle3", "num_speculative_tokens": 5}', "why: published EAGLE-3 head",
        "gpu_memory_utilization: 0.75", "candidate warning"]
    launch.update(speculation=False)
    launch["plan"].update(speculation=False)
    assert planning.summary(launch)[0] == "speculation: off" and planning.summary(launch)[-1] == "baseline warning"
