# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Issue 17's rules: runtime and image gates, and the bypasses that must not get through."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.compat import draft_mismatch, tokenizer_family
from ansible_collections.jetson.specdec.plugins.module_utils.launch.gates import (
    image_l4t, image_vllm_version, is_jetson_vllm_image, is_orin_image, split_image,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.rules import plan_launch

HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
DRAFT = "meta-llama/Llama-3.2-1B-Instruct"
TARGET = "meta-llama/Llama-3.1-8B-Instruct"
CATALOG = {
    TARGET: {"family": "llama3", "weight_bytes": 16060522496, "kv_bytes_per_token": 131072, "vocab_size": 128256,
             "eagle3_heads": [{"model": HEAD, "weight_bytes": 850000000}],
             "draft_models": [{"model": DRAFT, "weight_bytes": 2471628800, "vocab_size": 128256}]},
    "Qwen/Qwen3-8B": {"family": "qwen3", "weight_bytes": 16381470720, "vocab_size": 151936, "eagle3_heads": [],
                      "draft_models": [{"model": "Qwen/Qwen3-0.6B", "weight_bytes": 1192099840,
                                        "vocab_size": 151936}]},
}
ORIN_R36 = "ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra-aarch64-cu126-22.04"


def inputs(**over):
    base = dict(family="thor", l4t_major=39, l4t_minor=2, installed_vllm_version="0.20.1", vllm_version="",
                runtime="native", image="", model=TARGET, speculation=True, force=False, method="auto",
                spec_model="", k=None, draft_tensor_parallel_size=1, spec_extra={}, catalog=CATALOG,
                expected_concurrency=1, max_spec_concurrency=2, gpu_memory_utilization=0.80,
                gpu_memory_utilization_max=0.90, utilization_drop=0.05)
    base.update(over)
    return base


def rules(plan):
    return [r["rule"] for r in plan["refusals"]]


def message(plan, rule):
    return [r["message"] for r in plan["refusals"] if r["rule"] == rule][0]


# --- the bypasses ---------------------------------------------------------------------------------

@pytest.mark.parametrize("extra", [{"model": "me/adhoc-eagle3-head"}, {"method": "eagle3"},
                                   {"num_speculative_tokens": 9}, {"draft_tensor_parallel_size": 2}])
def test_speculative_extra_cannot_set_what_the_role_decides(extra):
    plan = plan_launch(inputs(spec_extra=extra))
    assert rules(plan) == ["config.speculative_extra_owned_key"]
    assert list(extra)[0] in message(plan, "config.speculative_extra_owned_key")
    assert plan["speculative_config"] is None


def test_speculative_extra_keeps_its_other_keys():
    plan = plan_launch(inputs(spec_extra={"max_model_len": 2048}))
    assert rules(plan) == [] and plan["speculative_config"]["max_model_len"] == 2048
    assert plan["speculative_config"]["model"] == HEAD


def test_method_auto_does_not_launch_an_uncatalogued_head_as_a_draft():
    plan = plan_launch(inputs(spec_model="me/adhoc-eagle3-head"))
    assert rules(plan) == ["catalog.uncatalogued_speculator"]
    assert "vllm_server_speculative_method: draft_model" in message(plan, "catalog.uncatalogued_speculator")


def test_method_auto_with_catalogued_names_picks_their_method():
    assert plan_launch(inputs(spec_model=HEAD))["speculative_config"]["method"] == "eagle3"
    assert plan_launch(inputs(spec_model=DRAFT))["speculative_config"]["method"] == "draft_model"


def test_a_qwen_draft_for_a_llama_target_is_refused_with_the_reason():
    plan = plan_launch(inputs(method="draft_model", spec_model="Qwen/Qwen3-0.6B"))
    assert rules(plan) == ["draft.incompatible"]
    text = message(plan, "draft.incompatible")
    assert "vocab_size 151936" in text and "128256" in text and "the catalog" in text


def test_local_config_json_decides_over_the_catalog():
    configs = {"/models/target": {"vocab_size": 1024, "model_type": "llama"},
               "/models/other-vocab": {"vocab_size": 2048, "model_type": "llama"},
               "/models/same": {"vocab_size": 1024, "model_type": "llama"},
               "/models/qwen-1024": {"vocab_size": 1024, "model_type": "qwen3"}}
    base = dict(model="/models/target", method="draft_model", model_configs=configs, force=True, family="unknown")
    plan = plan_launch(inputs(spec_model="/models/other-vocab", **base))
    assert rules(plan) == ["draft.incompatible"] and "its config.json" in message(plan, "draft.incompatible")
    plan = plan_launch(inputs(spec_model="/models/qwen-1024", **base))
    assert rules(plan) == ["draft.incompatible"] and "tokenizer" in message(plan, "draft.incompatible")
    plan = plan_launch(inputs(spec_model="/models/same", **base))
    assert rules(plan) == [] and plan["speculative_config"]["model"] == "/models/same"


def test_an_unknown_draft_is_launched_with_a_warning_vllm_checks_it():
    plan = plan_launch(inputs(method="draft_model", spec_model="acme/mystery-draft"))
    assert rules(plan) == []
    assert any("could not be compared" in w for w in plan["warnings"])


@pytest.mark.parametrize("family", ["unknown", "agx_xavier", "orin_nx", "orin_nano"])
def test_force_does_not_lift_the_eagle3_board_rule(family):
    plan = plan_launch(inputs(family=family, force=True, method="eagle3"))
    assert any(rule.startswith("family.") for rule in rules(plan)), rules(plan)
    plan = plan_launch(inputs(family=family, force=True, spec_model=HEAD))
    assert any(rule.startswith("family.") for rule in rules(plan)), rules(plan)


def test_force_on_another_board_picks_a_draft_not_eagle3():
    plan = plan_launch(inputs(family="agx_xavier", force=True))
    assert rules(plan) == [] and plan["speculative_config"]["method"] == "draft_model"


@pytest.mark.parametrize("over,allowed", [
    (dict(k=6), False),
    (dict(k=6, measured_acceptance=0.55), False),
    (dict(k=6, measured_acceptance=0.61), True),
    (dict(k=6, k_tuning=True), True),
    (dict(k=6, force=True), True),
    (dict(k=5), True),
    (dict(k=3, family="agx_orin"), True),
    (dict(k=4, family="agx_orin"), False),
])
def test_k_above_the_board_start_needs_evidence(over, allowed):
    plan = plan_launch(inputs(**over))
    assert ("config.k_above_start" not in rules(plan)) is allowed, plan["refusal_text"]


# --- runtime and image gates ----------------------------------------------------------------------

def test_an_r35_board_with_a_latest_orin_image_is_not_waved_through():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=35, runtime="container", method="draft_model",
                              image="ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin"))
    assert rules(plan) == ["runtime.image_l4t_unknown"]


def test_an_image_for_another_l4t_is_refused():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=35, runtime="container", image=ORIN_R36))
    assert rules(plan) == ["runtime.image_l4t_mismatch"]
    assert "r36.4" in message(plan, "runtime.image_l4t_mismatch")


def test_a_jetpack_tagged_image_without_orin_in_its_name_is_accepted():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=36, l4t_minor=4, runtime="container", image=ORIN_R36,
                              image_facts={"present": True, "vllm_version": "0.10.1.1"}))
    assert rules(plan) == []


def test_a_minor_l4t_difference_warns():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=36, l4t_minor=3, runtime="container",
                              image="dustynv/vllm:0.9.2-r36.4-cu128-24.04"))
    assert rules(plan) == []
    assert any("r36.4" in w and "r36.3" in w for w in plan["warnings"])


def test_the_old_orin_image_must_support_the_method():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=36, runtime="container", method="draft_model",
                              image="dustynv/vllm:0.8.6-r36.4-cu128-24.04"))
    assert rules(plan) == ["runtime.method_unsupported"]
    assert "0.8.6" in message(plan, "runtime.method_unsupported")
    plan = plan_launch(inputs(family="agx_orin", l4t_major=36, runtime="container", image=ORIN_R36,
                              method="draft_model"))
    assert rules(plan) == ["runtime.vllm_version_unknown"]


def test_thor_with_vllm_openai_latest_reads_the_version_from_the_image_on_the_host():
    image = "vllm/vllm-openai:latest"
    plan = plan_launch(inputs(runtime="container", image=image, image_facts={"present": True, "vllm_version": "0.21.0"},
                              container_runtime="nvidia", nvidia_runtime_present=True))
    assert rules(plan) == []
    plan = plan_launch(inputs(runtime="container", image=image, image_facts={"present": False}))
    assert rules(plan) == ["runtime.vllm_version_unknown"]
    assert "pull the image" in message(plan, "runtime.vllm_version_unknown")
    plan = plan_launch(inputs(runtime="container", image=image, image_facts={"present": True, "vllm_version": "0.11.0"}))
    assert rules(plan) == ["runtime.vllm_too_old"] and "the image on the host" in message(plan, "runtime.vllm_too_old")


def test_an_orin_whose_l4t_cannot_be_read_gets_no_speculation():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=None))
    assert rules(plan) == ["runtime.l4t_unknown"]
    assert rules(plan_launch(inputs(family="agx_orin", l4t_major=None, speculation=False))) == []


def test_the_container_path_needs_the_nvidia_runtime():
    over = dict(runtime="container", image="vllm/vllm-openai:v0.20.1", container_runtime="nvidia")
    plan = plan_launch(inputs(nvidia_runtime_present=False, **over))
    assert rules(plan) == ["runtime.nvidia_container_runtime_missing"]
    assert "nvidia-ctk" in message(plan, "runtime.nvidia_container_runtime_missing")
    assert rules(plan_launch(inputs(nvidia_runtime_present=False, speculation=False, **over))) == [
        "runtime.nvidia_container_runtime_missing"]
    assert rules(plan_launch(inputs(nvidia_runtime_present=True, **over))) == []
    assert rules(plan_launch(inputs(nvidia_runtime_present="False", **over))) == ["runtime.nvidia_container_runtime_missing"]
    assert rules(plan_launch(inputs(nvidia_runtime_present="", **over))) == []
    native_runtime = dict(over)
    native_runtime.update(nvidia_runtime_present=False, container_runtime="")
    assert rules(plan_launch(inputs(**native_runtime))) == []


@pytest.mark.parametrize("state,rule", [("not running", "runtime.docker_not_running"),
                                        ("absent", "runtime.docker_missing")])
def test_the_container_path_needs_a_docker_daemon_that_answers(state, rule):
    """Refused for the baseline too: the unit's `docker run` would crash-loop, so nothing may change."""
    over = dict(runtime="container", image="vllm/vllm-openai:v0.20.1", container_runtime="nvidia",
                nvidia_runtime_present=True)
    for speculation in (True, False):
        plan = plan_launch(inputs(docker_daemon=state, speculation=speculation, **over))
        assert rules(plan) == [rule], (speculation, plan["refusals"])
    text = message(plan_launch(inputs(docker_daemon=state, **over)), rule)
    assert "vllm_server_runtime: native" in text and "runtime.docker_daemon" in text
    if state == "not running":
        assert "systemctl enable --now docker" in text
    # running, unknown (no probes), or a native launch: no refusal
    for fine in ("running", None, "", "None"):
        assert rules(plan_launch(inputs(docker_daemon=fine, **over))) == []
    assert rules(plan_launch(inputs(docker_daemon=state))) == []  # native runtime: Docker is not used


def test_image_helpers():
    assert split_image("ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra-aarch64-cu126-22.04@sha256:ab") == (
        "ghcr.io/nvidia-ai-iot/vllm", "r36.4-tegra-aarch64-cu126-22.04")
    assert split_image("registry:5000/vllm") == ("registry:5000/vllm", "")
    assert image_l4t(ORIN_R36) == (36, 4)
    assert image_l4t("ghcr.io/nvidia-ai-iot/vllm:r36.4.tegra-aarch64-cu126-22.04") == (36, 4)
    assert image_l4t("dustynv/vllm:0.8.6-r36.4-cu128-24.04") == (36, 4)
    assert image_l4t("vllm/vllm-openai:v0.20.1") is None
    assert image_vllm_version("dustynv/vllm:0.8.6-r36.4-cu128-24.04") == (0, 8, 6)
    assert image_vllm_version(ORIN_R36) is None
    assert is_jetson_vllm_image("dustynv/vllm:r36.4.0") and not is_jetson_vllm_image("vllm/vllm-openai:latest")
    assert is_orin_image(ORIN_R36) and is_orin_image("ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin")
    assert not is_orin_image("ghcr.io/nvidia-ai-iot/vllm:latest-jetson-thor")


def test_orin_images_never_run_on_thor_whatever_their_tag():
    plan = plan_launch(inputs(runtime="container", image=ORIN_R36, vllm_version="0.20.1"))
    assert "runtime.orin_image_on_thor" in rules(plan)


def test_compat_helpers():
    assert tokenizer_family("llama3") == tokenizer_family("llama") == "llama"
    assert tokenizer_family("qwen2_moe") == tokenizer_family("qwen3") == "qwen"
    assert draft_mismatch(TARGET, DRAFT, CATALOG) == (None, True)
    assert draft_mismatch(TARGET, "acme/x", CATALOG) == (None, False)


# --- issue 33 item 2: the tag says nothing, the image does ----------------------------------------

ORIN_DIGEST = "ghcr.io/nvidia-ai-iot/vllm@sha256:" + "4f" * 32
R36_LABELS = [{"l4t": "r36.4.0"}, {"com.nvidia.l4t.version": "36.4.3"}, {"L4T_VERSION": "R36.4"}]


@pytest.mark.parametrize("image", [ORIN_DIGEST, "ghcr.io/nvidia-ai-iot/vllm:latest", "dustynv/vllm@sha256:" + "0a" * 32,
                                   "ghcr.io/nvidia-ai-iot/vllm:latest@sha256:" + "4f" * 32])
@pytest.mark.parametrize("labels", R36_LABELS)
def test_an_orin_image_whose_tag_says_nothing_never_runs_on_thor(image, labels):
    facts = {"present": True, "labels": labels, "vllm_version": "0.20.1"}
    for speculation in (True, False):
        plan = plan_launch(inputs(runtime="container", image=image, image_facts=facts, speculation=speculation))
        assert "runtime.orin_image_on_thor" in rules(plan), plan["refusals"]
        assert "its labels say it is built for Orin" in message(plan, "runtime.orin_image_on_thor")
    assert is_orin_image(image, facts) and not is_orin_image(image)


def test_a_jetson_image_on_thor_whose_build_cannot_be_read_is_refused_not_guessed():
    # not on the host: no labels, no version; the digest cannot be told from the Orin build
    plan = plan_launch(inputs(runtime="container", image=ORIN_DIGEST, image_facts={"present": False}))
    assert "runtime.image_l4t_unknown" in rules(plan) and "runtime.orin_image_on_thor" not in rules(plan)
    assert "pull the pinned image" in message(plan, "runtime.image_l4t_unknown")
    # a Thor build says so: its labels or its tag
    thor = {"present": True, "labels": {"l4t": "r38.2.0"}, "vllm_version": "0.20.1"}
    assert rules(plan_launch(inputs(runtime="container", image=ORIN_DIGEST, image_facts=thor))) == []
    assert rules(plan_launch(inputs(runtime="container", image="ghcr.io/nvidia-ai-iot/vllm:latest-jetson-thor",
                                    vllm_version="0.20.1"))) == []
    # upstream images are not Jetson builds: unchanged
    assert rules(plan_launch(inputs(runtime="container", image="vllm/vllm-openai@sha256:" + "1b" * 32,
                                    image_facts={"present": True, "labels": {}, "vllm_version": "0.21.0"}))) == []


@pytest.mark.parametrize("image,facts", [
    (ORIN_R36, None),
    ("dustynv/vllm:0.10.2-r36.4-cu128-24.04", None),
    (ORIN_DIGEST, {"present": True, "labels": {"l4t": "r36.4.0"}, "vllm_version": "0.20.1"}),
    ("ghcr.io/nvidia-ai-iot/vllm:latest", {"present": True, "labels": {"l4t": "r36.4.0"}, "vllm_version": "0.20.1"}),
])
@pytest.mark.parametrize("family", ["agx_orin", "orin_nx"])
def test_an_r36_jetson_image_is_refused_on_an_r39_orin(image, facts, family):
    plan = plan_launch(inputs(family=family, l4t_major=39, l4t_minor=2, runtime="container", image=image,
                              image_facts=facts, vllm_version="0.20.1", force=True))
    assert "runtime.image_l4t_mismatch" in rules(plan), plan["refusals"]
    text = message(plan, "runtime.image_l4t_mismatch")
    assert "r36.4" in text and "r39" in text and "vllm/vllm-openai" in text


def test_an_r39_orin_runs_an_r39_jetson_image_or_upstream():
    r39 = "ghcr.io/nvidia-ai-iot/vllm:r39.2-tegra-aarch64-cu130-24.04"
    assert "runtime.image_l4t_mismatch" not in rules(plan_launch(inputs(
        family="agx_orin", l4t_major=39, l4t_minor=2, runtime="container", image=r39, vllm_version="0.20.1")))
    assert rules(plan_launch(inputs(family="agx_orin", l4t_major=39, l4t_minor=2, runtime="container",
                                    image="vllm/vllm-openai:v0.20.1"))) == []
    # the digest of an r39 build, read from its labels
    facts = {"present": True, "labels": {"l4t": "r39.2"}, "vllm_version": "0.20.1"}
    assert rules(plan_launch(inputs(family="agx_orin", l4t_major=39, l4t_minor=2, runtime="container",
                                    image=ORIN_DIGEST, image_facts=facts))) == []


# --- issue 33 item 7: vllm_server_speculative_extra takes vLLM's own keys -------------------------

@pytest.mark.parametrize("extra,version", [
    ({"disable_padded_drafter_batch": True}, "0.20.1"),
    ({"disable_padded_drafter_batch": True}, "0.32.0"),
    ({"use_heterogeneous_vocab": True}, "0.32.0"),
    ({"draft_sample_method": "greedy", "rejection_sample_method": "standard"}, "0.32.1"),
    ({"suffix_decoding_max_tree_depth": 16, "parallel_drafting": False}, "0.21.0"),
    ({"disable_by_batch_size": 4}, "0.20.1"),
])
def test_speculative_extra_accepts_the_serving_vllms_fields(extra, version):
    plan = plan_launch(inputs(spec_extra=extra, installed_vllm_version=version))
    assert rules(plan) == [], plan["refusals"]
    for key, value in extra.items():
        assert plan["speculative_config"][key] == value
    assert plan["speculative_config"]["model"] == HEAD


def test_the_rendered_command_line_carries_the_extra_keys():
    from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import render_spec_config_json
    plan = plan_launch(inputs(spec_extra={"use_heterogeneous_vocab": True}, installed_vllm_version="0.32.0"))
    text = render_spec_config_json(plan["speculative_config"])
    assert '"use_heterogeneous_vocab":true' in text and text.startswith('{"method":"eagle3"')


@pytest.mark.parametrize("extra,version,named", [
    ({"use_heterogeneous_vocab": True}, "0.20.1", "before 0.32"),     # 0.32's field on 0.20
    ({"disable_by_batch_size": 4}, "0.32.0", "vLLM 0.32"),             # removed before 0.32 (PR #35060)
    ({"disable_padded_drafter_batchh": True}, "0.32.0", "vLLM 0.32"),  # a typo
    ({"speculative_model": "x/y"}, "0.20.1", "before 0.32"),           # the old separate flag's name
    ({"target_model_config": "x"}, "0.32.0", "vLLM 0.32"),             # the engine fills it
])
def test_speculative_extra_refuses_keys_the_serving_vllm_does_not_have(extra, version, named):
    plan = plan_launch(inputs(spec_extra=extra, installed_vllm_version=version))
    assert rules(plan) == ["config.speculative_extra_unknown_key"], plan["refusals"]
    text = message(plan, "config.speculative_extra_unknown_key")
    assert list(extra)[0] in text and named in text and "Fix:" in text
    assert "explicit extra mapping" not in text and plan["speculative_config"] is None


def test_speculative_extra_with_an_unknown_version_takes_any_known_field():
    plan = plan_launch(inputs(spec_extra={"use_heterogeneous_vocab": True}, installed_vllm_version=None,
                              vllm_version="", force=True, speculation=True))
    assert "config.speculative_extra_unknown_key" not in rules(plan)


def test_the_field_tables_are_vllms_own():
    """The 0.32 table is the class vLLM 0.32 really has, where the real lane's venv is on this machine."""
    import ast
    import glob
    from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_fields import (
        ENGINE_FIELDS, SPECULATIVE_CONFIG_TABLES, settable_fields, speculative_fields)
    assert speculative_fields((0, 32, 0))[1] == speculative_fields((0, 40, 1))[1] == "vLLM 0.32"
    assert speculative_fields((0, 20, 1))[1] == "vLLM before 0.32"
    assert not ENGINE_FIELDS & settable_fields((0, 32, 0))[0]
    import os
    # only a finished lane venv (setup_venv.sh's marker): `make test` builds one while this tier runs
    sources = [s for s in glob.glob(os.path.expanduser("~/.cache/jetson-specdec/vllm-lane-*/lib/python3*/site-packages/"
                                                       "vllm/config/speculative.py"))
               if os.path.exists(os.path.join(s.split("/lib/python3")[0], ".jetson-specdec-lane-complete"))]
    if not sources:
        pytest.skip("no real-lane venv with vLLM 0.32 on this machine")
    with open(sources[0]) as handle:
        tree = ast.parse(handle.read())
    cls = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SpeculativeConfig"][0]
    fields = set(n.target.id for n in cls.body if isinstance(n, ast.AnnAssign))
    assert fields == set(SPECULATIVE_CONFIG_TABLES[0][2])


# --- issue 33 item 4: the advice to raise k is one the rules accept ---------------------------------

@pytest.mark.parametrize("acceptance", [0.72, "0.72", 0.61])
def test_a_measured_acceptance_above_0_6_allows_raising_agx_orin_from_3_to_4(acceptance):
    plan = plan_launch(inputs(family="agx_orin", l4t_major=39, k=4, measured_acceptance=acceptance))
    assert "config.k_above_start" not in rules(plan), plan["refusals"]
    assert plan["speculative_config"]["num_speculative_tokens"] == 4


@pytest.mark.parametrize("acceptance", [None, "", "None", 0.55, 0.6, "1.5", True])
def test_without_a_measured_acceptance_above_0_6_raising_k_is_refused(acceptance):
    plan = plan_launch(inputs(family="agx_orin", l4t_major=39, k=4, measured_acceptance=acceptance))
    assert rules(plan) == ["config.k_above_start"]


def test_the_rollout_passes_the_last_verdicts_acceptance_to_every_plan():
    import os
    import yaml
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
    with open(os.path.join(repo, "roles", "vllm_server", "vars", "main.yml")) as handle:
        launch_input = yaml.safe_load(handle)["__vllm_server_launch_input"]["plan"]
    assert launch_input["measured_acceptance"] == "{{ vllm_server_measured_acceptance }}"
    for rel in ("check.yml", "baseline.yml", "host.yml"):
        with open(os.path.join(repo, "roles", "rollout", "tasks", rel)) as handle:
            text = handle.read()
        assert "vllm_server_measured_acceptance: \"{{ rollout_measured_acceptance" in text, rel
    # the rate is the one the state file on the host holds (read in check.yml before the plan)
    with open(os.path.join(repo, "roles", "rollout", "vars", "main.yml")) as handle:
        derived = yaml.safe_load(handle)["rollout_measured_acceptance"]
    assert derived.startswith("{{ rollout_state_file.content") and "jetson.specdec.rollout_stored_acceptance" in derived
    # the evaluation's switches (jetson.specdec.rollout_evaluate: evaluation.switch_args puts it in every plan)
    with open(os.path.join(repo, "roles", "rollout", "tasks", "evaluate_step.yml")) as handle:
        assert "measured_acceptance: \"{{ rollout_measured_acceptance" in handle.read()
    with open(os.path.join(repo, "roles", "rollout", "tasks", "check.yml")) as handle:
        text = handle.read()
    assert text.index("register: rollout_state_file") < text.index("tasks_from: preflight.yml")


# --- issue 33 item 9: no false second refusal on a forced small Orin; the ceiling's message --------

@pytest.mark.parametrize("family", ["orin_nx", "orin_nano"])
@pytest.mark.parametrize("l4t_major", [36, 39])
def test_a_forced_small_orin_asked_for_eagle3_is_refused_once_for_the_board_not_the_catalog(family, l4t_major):
    plan = plan_launch(inputs(family=family, l4t_major=l4t_major, force=True, method="eagle3"))
    assert "family.no_eagle3_on_small_orin" in rules(plan)
    assert "catalog.no_published_head" not in rules(plan)  # the catalog has the head (CATALOG[TARGET])
    assert "no published EAGLE-3 head" not in plan["refusal_text"]
    # on AGX Orin without a head the catalog refusal is still the right one
    no_head = {TARGET: dict(CATALOG[TARGET], eagle3_heads=[])}
    assert "catalog.no_published_head" in rules(plan_launch(inputs(family="agx_orin", method="eagle3", catalog=no_head)))


def test_a_forced_small_orin_without_a_draft_is_told_to_add_a_draft_not_a_head():
    no_draft = {TARGET: dict(CATALOG[TARGET], draft_models=[])}
    plan = plan_launch(inputs(family="orin_nx", l4t_major=39, force=True, catalog=no_draft))
    assert rules(plan) == ["catalog.no_speculator"]
    text = message(plan, "catalog.no_speculator")
    assert "add a same-family draft" in text and "published head" not in text
    assert "published head" in message(plan_launch(inputs(family="agx_orin", catalog={TARGET: dict(
        CATALOG[TARGET], draft_models=[], eagle3_heads=[])})), "catalog.no_speculator")


@pytest.mark.parametrize("util", [0.96, 0.2])
def test_the_utilization_ceiling_message_does_not_claim_2_gib_on_every_board(util):
    plan = plan_launch(inputs(gpu_memory_utilization=util, gpu_memory_utilization_max=0.90))
    text = message(plan, "config.gpu_memory_utilization")
    assert "keeps ~2 GiB" not in text
    assert "10% of the board's memory" in text and "0.7 GiB on an 8 GB Orin Nano" in text and "6.1 GiB" in text


# --- the image advice names the board's own JetPack (issue 33 item 9) ------------------------------

def test_an_r35_orin_is_not_told_to_run_a_jetpack_6_image():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=35, runtime="native", method="draft_model"))
    assert rules(plan) == ["runtime.old_orin_needs_orin_image"]
    text = message(plan, "runtime.old_orin_needs_orin_image")
    assert "L4T r35 is JetPack 5" in text and "on JetPack 6)" not in text, text
    assert "r35.4-tegra" not in text and "cu126" not in text.split("else upgrade")[0], text
    assert "upgrade the board to JetPack 6 (L4T r36" in text


def test_an_r36_orin_is_given_its_jetpack_6_image():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=36, runtime="native", method="draft_model"))
    text = message(plan, "runtime.old_orin_needs_orin_image")
    assert "ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra-aarch64-cu126-22.04 (L4T r36 is JetPack 6)" in text, text


def test_an_r39_orin_with_an_unlabelled_jetson_image_is_pointed_at_upstream_vllm():
    plan = plan_launch(inputs(family="agx_orin", l4t_major=39, runtime="container", method="draft_model",
                              image="ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin"))
    assert "runtime.image_l4t_unknown" in rules(plan)
    text = message(plan, "runtime.image_l4t_unknown")
    assert "upstream vLLM >= 0.20 (vllm/vllm-openai), which L4T r39 runs" in text and "JetPack 5" not in text, text


# --- one refusal per cause (issue 33 item 9) ------------------------------------------------------

@pytest.mark.parametrize("family,l4t_major,image", [
    ("orin_nano", 35, None),
    ("orin_nx", 36, None),
    ("orin_nx", 36, "ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin"),
    ("orin_nano", 39, "vllm/vllm-openai:v0.12.0"),
])
def test_a_small_orin_is_refused_for_its_family_only(family, l4t_major, image):
    plan = plan_launch(inputs(family=family, l4t_major=l4t_major, runtime="container" if image else "native",
                              image=image, catalog={}))
    assert rules(plan) == ["family.speculation_not_supported"], plan["refusal_text"]
    assert plan["speculative_config"] is None
