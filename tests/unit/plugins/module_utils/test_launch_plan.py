# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The published launch fact (vllm_server_launch): both arms, refusals, URL, health settings."""
import os

import pytest
import yaml

from ansible_collections.jetson.specdec.plugins.module_utils.launch.plan import (
    LaunchPlanError,
    launch_plan,
    rollout_settings,
    url_for,
    with_headroom,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.ladder import fallback_rungs

REPO = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")
# The role's own catalog: the plan is tested on what a deploy uses.
with open(os.path.join(REPO, "roles", "vllm_server", "defaults", "main", "catalog.yml")) as _handle:
    CATALOG = yaml.safe_load(_handle)["vllm_server_model_catalog"]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def inputs(family="thor", speculation=False, health_host="127.0.0.1", **plan):
    base = {"family": family, "l4t_major": "39", "installed_vllm_version": "0.20.1", "vllm_version": "0.20.1",
            "runtime": "native", "image": "", "model": MODEL, "speculation": speculation, "force": False,
            "method": "auto", "spec_model": "", "k": "", "draft_tensor_parallel_size": "", "spec_extra": {},
            "catalog": CATALOG, "expected_concurrency": 1, "max_spec_concurrency": 2, "gpu_memory_utilization": 0.75,
            "gpu_memory_utilization_max": 0.9, "utilization_drop": 0.05}
    base.update(plan)
    return {"host": "board-1", "plan": base,
            "argv": {"model": MODEL, "served_model_name": "", "host": "0.0.0.0", "port": 8000,
                     "max_model_len": 4096, "max_num_seqs": 8, "dtype": "auto", "enforce_eager": False,
                     "trust_remote_code": False, "extra_args": [], "vllm_bin": "/opt/vllm/bin/vllm",
                     "service_name": "vllm"},
            "runtime": "native", "model": MODEL, "catalog": CATALOG, "utilization_drop": 0.05,
            "service_name": "vllm", "unit_path": "/etc/systemd/system/vllm.service", "health_host": health_host,
            "port": "8000", "health_timeout": "900", "health_interval": 5, "crash_loop_restarts": 3}


def test_both_arms_are_planned_once_whatever_this_run_applies():
    fact = launch_plan(inputs(speculation="false"))
    assert fact["applied"] == "baseline" and fact["speculation"] is False
    assert fact["argv"] == fact["baseline"]["argv"]
    assert "--speculative-config" not in fact["baseline"]["argv"]
    assert "--speculative-config" in fact["candidate"]["argv"]
    assert fact["candidate"]["gpu_memory_utilization"] == pytest.approx(0.70)
    # the ladder of the candidate's plan (launch/rules.py decides its rungs), ending with speculation off
    assert fact["candidate"]["rungs"] == fallback_rungs(fact["candidate"]["plan"], CATALOG, MODEL, 0.05, max_model_len=4096)
    assert fact["candidate"]["rungs"][0]["label"].startswith("eagle3")
    assert fact["candidate"]["rungs"][-1]["vllm_server_speculation"] is False


def test_applied_candidate_is_what_the_unit_runs():
    fact = launch_plan(inputs(speculation=True))
    assert fact["applied"] == "candidate" and fact["argv"] == fact["candidate"]["argv"]
    assert fact["refusals"] == [] and fact["refusal_message"] == ""


def test_a_refused_candidate_leaves_the_baseline_usable():
    fact = launch_plan(inputs(family="orin-nano"))
    assert fact["baseline"]["refusals"] == [] and fact["argv"]
    assert fact["candidate"]["argv"] == [] and fact["candidate"]["rungs"] == []
    rules = [r["rule"] for r in fact["candidate"]["refusals"]]
    assert any(rule.startswith("family") for rule in rules), rules
    # the preflight fails with this message when the candidate is applied; the rollout records it
    message = fact["candidate"]["refusal_message"]
    assert message.startswith("vllm_server preflight refused board-1 (nothing was changed):\n")
    assert message.split("\n")[1:] == fact["candidate"]["refusal_text"].split("\n")


def test_url_and_health_settings_come_from_the_role_variables():
    fact = launch_plan(inputs(health_host="192.168.50.7"))
    assert fact["url"] == "http://192.168.50.7:8000"
    assert fact["health"] == {"url": "http://192.168.50.7:8000", "service": "vllm", "timeout": 900, "interval": 5,
                              "crash_loop_restarts": 3}
    assert fact["unit_path"] == "/etc/systemd/system/vllm.service"


def test_ipv6_health_host_gets_brackets():
    assert url_for("::1", 8000) == "http://[::1]:8000"
    assert url_for("[fe80::1]", "8001") == "http://[fe80::1]:8001"


@pytest.mark.parametrize("key, value, name", [("health_host", "", "vllm_server_health_host"),
                                              ("health_interval", 0, "vllm_server_health_interval"),
                                              ("port", "http", "vllm_server_port"),
                                              ("runtime", "podman", "vllm_server_runtime")])
def test_bad_service_settings_name_the_variable(key, value, name):
    bad = inputs()
    bad[key] = value
    with pytest.raises(LaunchPlanError, match=name):
        launch_plan(bad)


def test_headroom_that_does_not_fit_refuses_the_candidate_with_the_fix():
    fact = launch_plan(inputs(speculation=True))
    out = with_headroom(fact, {"fits": False, "reasons": ["Needs 40 GiB, 30 GiB free."],
                               "recommended_gpu_memory_utilization": 0.55, "headroom_warnings": ["tight"]})
    assert [r["rule"] for r in out["refusals"]] == ["memory.headroom"]
    assert "Needs 40 GiB" in out["refusal_message"] and "0.55" in out["refusal_message"]
    assert out["argv"] == [] and out["candidate"]["rungs"] == [] and "tight" in out["candidate"]["warnings"]
    assert fact["refusals"] == []  # the input is not changed


def test_the_memory_reasons_read_as_sentences():
    fact = launch_plan(inputs(speculation=True))
    out = with_headroom(fact, {"fits": False, "recommended_gpu_memory_utilization": 0.79,
                               "reasons": ["vLLM's share 0.75 x 29.5 GiB = 22.13 GiB holds 20 GiB",
                                           "recommended gpu_memory_utilization 0.79"]})
    message = out["candidate"]["refusals"][-1]["message"]
    assert "holds 20 GiB. Recommended gpu_memory_utilization 0.79. Fix:" in message, message


def test_headroom_that_could_not_measure_refuses_with_its_message():
    fact = launch_plan(inputs())
    out = with_headroom(fact, {"failed": False, "msg": "no weight size for the draft"})
    assert out["candidate"]["refusals"][-1] == {"rule": "memory.headroom", "message": "no weight size for the draft"}
    assert out["refusals"] == []  # the baseline this run applies is not refused


def test_headroom_that_fits_changes_nothing_but_the_record():
    fact = launch_plan(inputs(speculation=True))
    out = with_headroom(fact, {"fits": True, "reasons": []})
    assert out["argv"] == fact["argv"] and out["candidate"]["headroom"] == {"fits": True, "reasons": []}


THRESHOLDS = {"keep_throughput_gain": 0.3, "keep_tpot_drop": 0.2, "revert_throughput_gain": 0.1,
              "c8_regression_tolerance": 0.0, "marginal_action": "keep", "z": 2.0}


def test_rollout_settings_take_the_levels_from_the_benchmark():
    out = rollout_settings({"concurrency": [8, 1], "output_len": 128, "output_range_ratio": 0}, THRESHOLDS)
    assert dict((k, out["verdict"][k]) for k in THRESHOLDS) == THRESHOLDS
    assert (out["verdict"]["low_concurrency"], out["verdict"]["high_concurrency"]) == (1, 8)
    assert out["verdict"]["min_rounds"] == 3  # the rest are spec_decide's defaults, checked


# #33 item 6: the regression check covers every benchmarked level above the judged one (docs/verdict.md).
@pytest.mark.parametrize("levels, expected, want_levels, judged, checked", [
    ([1, 8], 1, [1, 8], 1, 8),                 # the default: unchanged (and its config hash)
    ([1, 8], 2, [1, 2, 8], 1, [2, 8]),         # 2 is the skill's low range: judged at 1, checked at 2 and 8
    ([1, 8], 4, [1, 4, 8], 4, 8),              # 3..7: judged at the operator's level
    ([1, 8, 16], 1, [1, 8, 16], 1, [8, 16]),   # every level above, not only the highest
    ([1], 1, [1, 8], 1, 8),                    # no level above: the skill's 8 is added
    ([1, 4], 1, [1, 4], 1, 4),                 # the real lane's small board
    ([1, 8], 9, [1, 8, 9, 16], 9, 16),         # max_speculative_concurrency 10, expected 9: 16 added above 9
    ([1, 8], 8, [1, 8, 16], 8, 16),
    ([2, 4, 8], 2, [2, 4, 8], 2, [4, 8]),
])
def test_the_regression_check_covers_every_level_above_the_judged_one(levels, expected, want_levels, judged, checked):
    out = rollout_settings({"concurrency": levels, "expected_concurrency": expected, "output_len": 128,
                            "output_range_ratio": 0}, THRESHOLDS)
    assert out["levels"] == want_levels
    assert (out["verdict"]["low_concurrency"], out["verdict"]["high_concurrency"]) == (judged, checked)
    above = [level for level in want_levels if level > judged]
    assert (checked if isinstance(checked, list) else [checked]) == above


def test_spec_decide_judges_every_regression_level_and_names_the_one_that_regressed():
    import random

    from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import spec_decide

    from .test_verdict_decide import level as make_level

    settings = rollout_settings({"concurrency": [1, 8, 16], "output_len": 128, "output_range_ratio": 0}, THRESHOLDS)
    params = dict(settings["verdict"], c8_regression_tolerance=0.05)

    def run(c16):
        rng, rounds = random.Random(4), []
        while True:
            out = spec_decide(rounds, **params)
            if out["action"] != "measure_more":
                return out
            cand = out["next_round"]["arm"] == "candidate"
            gain = 0.8 if cand else 0.0
            rounds.append({"arm": out["next_round"]["arm"], "result": {"runs": [
                make_level(rng, 1, 30, 6600.0 / (1 + gain), 50.0 / (1 + gain)),
                make_level(rng, 8, 30, 14000.0 / (1.2 if cand else 1.0), 75.0),
                make_level(rng, 16, 30, 20000.0 / ((1 + c16) if cand else 1.0), 90.0)]}})

    bad = run(-0.30)   # c=8 gains, c=16 drops 30 %: the old check (16 only) saw it, so must this one
    assert (bad["decision"], bad["action"]) == ("revert", "revert")
    assert bad["metrics"]["regression_levels"] == [8, 16]
    assert bad["estimates"]["c8_throughput_change"]["high"] < -0.05  # the highest level keeps the skill's name
    assert bad["estimates"]["throughput_change_c8"]["low"] > 0
    assert any("concurrency 16 changed" in r for r in bad["reasons"])
    good = run(0.10)
    assert good["action"] == "keep"


def test_the_operators_concurrency_is_measured_and_judged_with_the_c1_rule():
    bench = {"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}
    out = rollout_settings(dict(bench, expected_concurrency=4), THRESHOLDS)
    assert out["levels"] == [1, 4, 8]
    assert (out["verdict"]["low_concurrency"], out["verdict"]["high_concurrency"]) == (4, 8)
    two = rollout_settings(dict(bench, expected_concurrency=2), THRESHOLDS)
    assert (two["verdict"]["low_concurrency"], two["verdict"]["high_concurrency"]) == (1, [2, 8])
    plain = rollout_settings(dict(bench, expected_concurrency=1), THRESHOLDS)
    assert plain["levels"] == [1, 8] and (plain["verdict"]["low_concurrency"], plain["verdict"]["high_concurrency"]) == (1, 8)
    assert plain == rollout_settings(bench, THRESHOLDS)  # the same settings (and config hash) as before for c=1
    with pytest.raises(LaunchPlanError, match="levels must be >= 1"):
        rollout_settings(dict(bench, concurrency=[0, 8]), THRESHOLDS)


def test_the_launch_fact_carries_the_expected_concurrency():
    assert launch_plan(inputs(expected_concurrency=3, max_spec_concurrency=7))["expected_concurrency"] == 3
    assert launch_plan(inputs())["expected_concurrency"] == 1


@pytest.mark.parametrize("bench, verdict, match", [
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 1.0}, {}, "rollout_bench_output_range_ratio"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"revert_throughput_gain": 0.5},
     "revert_throughput_gain.*set by rollout_revert_throughput_gain"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"marginal_action": "maybe"},
     "marginal_action.*set by rollout_marginal_action"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"drift_prior": 0.9},
     "set by rollout_noise_cv"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"min_rounds": 5, "max_rounds": 4},
     "min_rounds.*set by rollout_verdict_min_rounds"),
    ({"concurrency": [1, 8], "output_len": 128, "output_range_ratio": 0}, {"round_prompts": 2},
     "set by rollout_bench_num_prompts"),
    ({"concurrency": [], "output_len": 128, "output_range_ratio": 0}, {}, "rollout_bench_concurrency"),
])
def test_impossible_rollout_settings_are_refused_naming_the_setting(bench, verdict, match):
    with pytest.raises(LaunchPlanError, match=match):
        rollout_settings(bench, dict(THRESHOLDS, **verdict))


def test_k_tuning_from_templating_is_a_boolean_and_a_bad_one_names_the_variable():
    from ansible_collections.jetson.specdec.plugins.module_utils.launch.plan import normalize_plan_inputs
    assert normalize_plan_inputs({"k_tuning": "true", "k": "8"})["k_tuning"] is True
    assert normalize_plan_inputs({"k": "8"})["k_tuning"] is False and normalize_plan_inputs({"k": "8"})["k"] == 8
    with pytest.raises(LaunchPlanError, match="vllm_server_k_tuning"):
        normalize_plan_inputs({"k_tuning": "maybe"})


@pytest.mark.parametrize("model, expected", [
    ("meta-llama/Llama-3.1-8B-Instruct", [0, 128000]),  # the 256 special tokens above are not drawn
    ("Qwen/Qwen3-8B", [0, 151643]),  # config.json pads to 151936: rows no text ever produces
    ("/models/local-tiny", None),  # not catalogued: vllm_bench's own default range
])
def test_synthetic_prompts_draw_from_the_targets_tokenizer_vocabulary(model, expected):
    fact = launch_plan(dict(inputs(), model=model))
    assert fact["prompt_token_ids_range"] == expected


def test_the_prefetch_names_the_planned_rungs_hub_model_and_the_units_cache_environment_and_account():
    fact = launch_plan(dict(inputs(speculation=False), service_user="svc-vllm", argv=dict(
        inputs()["argv"], hf_cache_dir="/var/lib/vllm/huggingface", env_file="/etc/vllm/vllm.env",
        environment={"HF_ENDPOINT": "https://mirror"})))
    prefetch = fact["prefetch"]
    # only the first rung's model: a fallback's smaller draft is fetched by vLLM at that rung's start
    assert prefetch["models"] == [fact["candidate"]["rungs"][0]["vllm_server_speculative_model"]]
    assert prefetch["models"][0].startswith("yuhuili/EAGLE3")
    assert (prefetch["hf_home"], prefetch["cli"], prefetch["user"]) == (
        "/var/lib/vllm/huggingface", "/opt/vllm/bin/hf", "svc-vllm")
    assert prefetch["env_file"] == "/etc/vllm/vllm.env" and prefetch["environment"] == {"HF_ENDPOINT": "https://mirror"}


def test_nothing_is_prefetched_for_ngram_a_local_draft_or_a_refused_candidate():
    assert launch_plan(inputs(method="ngram"))["prefetch"]["models"] == []
    assert launch_plan(inputs(method="draft_model", spec_model="/opt/models/llama-1b"))["prefetch"]["models"] == []
    refused = launch_plan(inputs(family="orin_nano"))
    assert refused["candidate"]["refusals"] and refused["prefetch"]["models"] == []


def test_a_switch_on_a_host_the_play_has_not_prepared_is_refused():
    with pytest.raises(LaunchPlanError, match="tasks_from switch runs only after this role's preflight"):
        launch_plan(dict(inputs(), prepared=False))
    # the main entry point and a prepared switch plan as before
    assert launch_plan(dict(inputs(), prepared=True))["argv"] == launch_plan(inputs())["argv"]
