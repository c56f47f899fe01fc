"""vllm_switch: when the switch checks the candidate's memory, what it asks spec_headroom, a module that cannot run."""
import pytest
from ansible.errors import AnsibleConnectionFailure, AnsibleError

from ansible_collections.jetson.specdec.plugins.action.vllm_switch import ActionModule, memory_args, needs_memory_check


def _launch(speculation=True, candidate_refusals=(), baseline_refusals=()):
    config = {"method": "eagle3", "model": "h", "num_speculative_tokens": 5}
    return {"candidate": {"plan": {"speculation": speculation, "speculative_config": config},
                          "gpu_memory_utilization": 0.75, "refusals": list(candidate_refusals)},
            "baseline": {"refusals": list(baseline_refusals)}}


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


def test_an_error_on_the_way_to_the_host_is_a_failed_result_and_a_lost_connection_stays_one():
    """The switch returns its launch when a module cannot run (the role registers the result as the fact)."""
    class Fake(object):
        _module = ActionModule._module

        def __init__(self, error):
            self.error = error

        def _execute_module(self, module_name, module_args, task_vars):
            raise self.error

    result = Fake(AnsibleError("could not transfer the module"))._module("jetson.specdec.vllm_unit", {}, {})
    assert result == {"failed": True, "msg": "jetson.specdec.vllm_unit: could not transfer the module"}
    with pytest.raises(AnsibleConnectionFailure):  # unreachable, as for any task
        Fake(AnsibleConnectionFailure("ssh: connection refused"))._module("jetson.specdec.vllm_unit", {}, {})
