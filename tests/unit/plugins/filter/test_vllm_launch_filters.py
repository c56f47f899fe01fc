"""jetson.specdec.vllm_launch_plan normalizes its inputs exactly as vllm_server_launch does."""
import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.vllm_launch import vllm_launch_plan

THOR = {"family": "thor", "l4t_major": "39", "l4t_minor": "0", "speculation": "true", "model": "meta-llama/Llama-3.1-8B-Instruct",
        "runtime": "native", "vllm_version": "0.20.0", "installed_vllm_version": "0.20.0", "method": "ngram",
        "gpu_memory_utilization": 0.8, "gpu_memory_utilization_max": 0.9, "utilization_drop": 0.05}


def test_unset_concurrency_keys_take_the_rules_defaults_instead_of_crashing():
    # Neither expected_concurrency nor max_spec_concurrency given: concurrency 1 of at most 7, no refusal.
    plan = vllm_launch_plan(dict(THOR))
    assert plan["speculation"] and not plan["refusals"], plan["refusals"]
    assert plan["speculative_config"]["num_speculative_tokens"] == 5


def test_k_tuning_given_as_the_string_false_is_off():
    # "-e vllm_server_k_tuning=false" arrives as a string: k 6 on Thor is then above the start and refused.
    plan = vllm_launch_plan(dict(THOR, k="6", k_tuning="false"))
    assert [r["rule"] for r in plan["refusals"]] == ["config.k_above_start"], plan["refusals"]
    tuned = vllm_launch_plan(dict(THOR, k="6", k_tuning="true"))
    assert not tuned["refusals"] and tuned["speculative_config"]["num_speculative_tokens"] == 6


def test_a_flag_that_is_not_a_boolean_names_the_variable():
    with pytest.raises(AnsibleFilterError, match="vllm_server_k_tuning must be a boolean"):
        vllm_launch_plan(dict(THOR, k_tuning="maybe"))
