"""Issue 34 item 4: every boolean input read strictly: "false" from -e is false, "maybe" is refused.

Role argument validation (type: bool) checks a value but does not replace the variable, so each filter and
task that acts on a boolean converts it; these drive them with the spellings -e produces.
"""
import glob
import os
import re

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.vllm_launch import (
    vllm_launch_argv,
    vllm_launch_plan,
    vllm_server_host_refusals,
    vllm_server_input_refusals,
)
from ansible_collections.jetson.specdec.plugins.module_utils.common.booleans import strict_bool

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
FALSE = ["false", "False", "FALSE", "no", "No", "0", "off", "OFF", "n", "f", " false ", False, 0]
TRUE = ["true", "True", "TRUE", "yes", "Yes", "1", "on", "ON", "y", "t", True, 1]
JUNK = ["maybe", "", "enable", "2", 2, 0.5, [], {}, "false,", "truee", "nope"]
SPELLINGS = [(v, False) for v in FALSE] + [(v, True) for v in TRUE]

ARGV = dict(model="a/b", vllm_bin="/opt/vllm/bin/vllm", image="vllm/vllm-openai:v0.20.1", service_name="vllm")
INPUTS = dict(service_name="vllm", user="vllm", group="vllm", supplementary_groups=["video"],
              hf_home="/var/lib/vllm/huggingface", api_key="", hf_token="", environment={}, host="0.0.0.0",
              extra_args=[], extra_flags_allowed=[], runtime="native", native_bin="/opt/vllm/bin/vllm")
HOST = dict(host="thor-01", runtime="native", user="ubuntu", exists=True, uid=1000, marker=False, wrong_groups=[],
            family="thor", systemd_booted=True)
THOR = {"family": "thor", "l4t_major": "39", "l4t_minor": "0", "model": "meta-llama/Llama-3.1-8B-Instruct",
        "runtime": "native", "vllm_version": "0.20.0", "installed_vllm_version": "0.20.0", "method": "ngram",
        "gpu_memory_utilization": 0.8, "gpu_memory_utilization_max": 0.9, "utilization_drop": 0.05}


@pytest.mark.parametrize("value, on", SPELLINGS)
def test_strict_bool_reads_ansibles_words(value, on):
    assert strict_bool("x", value) is on


@pytest.mark.parametrize("value", JUNK)
def test_strict_bool_refuses_junk_naming_the_variable(value):
    with pytest.raises(ValueError, match="vllm_server_x must be a boolean"):
        strict_bool("vllm_server_x", value)


@pytest.mark.parametrize("runtime", ["native", "container"])
@pytest.mark.parametrize("key, flag", [("trust_remote_code", "--trust-remote-code"), ("enforce_eager", "--enforce-eager")])
@pytest.mark.parametrize("value, on", SPELLINGS)
def test_argv_flags_follow_the_boolean_not_the_string(runtime, key, flag, value, on):
    argv = vllm_launch_argv(dict(ARGV, **{key: value}), runtime)
    assert (flag in argv) is on, argv


@pytest.mark.parametrize("key, var", [("trust_remote_code", "vllm_server_trust_remote_code"),
                                      ("enforce_eager", "vllm_server_enforce_eager")])
@pytest.mark.parametrize("value", JUNK)
def test_argv_refuses_a_flag_that_is_no_boolean(key, var, value):
    with pytest.raises(AnsibleFilterError, match=var + " must be a boolean"):
        vllm_launch_argv(dict(ARGV, **{key: value}))


@pytest.mark.parametrize("value, on", SPELLINGS)
def test_use_existing_user_false_keeps_the_existing_account_refusal(value, on):
    out = vllm_server_host_refusals(dict(HOST, use_existing_user=value))
    assert any(r.startswith("input.existing_account:") for r in out) is (not on), out


@pytest.mark.parametrize("value", JUNK)
def test_use_existing_user_junk_is_an_error(value):
    with pytest.raises(AnsibleFilterError, match="vllm_server_use_existing_user must be a boolean"):
        vllm_server_host_refusals(dict(HOST, use_existing_user=value))


@pytest.mark.parametrize("value, on", SPELLINGS)
def test_allow_open_bind_false_keeps_the_open_bind_refusal(value, on):
    out = vllm_server_input_refusals(dict(INPUTS, allow_open_bind=value))
    assert any(r.startswith("input.open_bind:") for r in out) is (not on), out
    assert not any(r.startswith("input.boolean:") for r in out), out


@pytest.mark.parametrize("value", JUNK)
def test_allow_open_bind_junk_is_refused_and_the_bind_stays_refused(value):
    out = vllm_server_input_refusals(dict(INPUTS, allow_open_bind=value))
    assert any(r.startswith("input.boolean: vllm_server_allow_open_bind must be a boolean") for r in out), out
    assert any(r.startswith("input.open_bind:") for r in out), out


@pytest.mark.parametrize("value", JUNK)
def test_every_boolean_the_role_passes_is_checked(value):
    names = _role_booleans("vllm_server") - {"vllm_server_allow_open_bind"}
    out = vllm_server_input_refusals(dict(INPUTS, host="127.0.0.1", allow_open_bind=False,
                                          booleans=dict((name, value) for name in names)))
    assert sorted(out) == sorted("input.boolean: %s" % strict_bool_error(name, value) for name in names), out
    good = vllm_server_input_refusals(dict(INPUTS, host="127.0.0.1", allow_open_bind="no",
                                           booleans=dict((name, "false") for name in names)))
    assert good == []


def strict_bool_error(name, value):
    try:
        strict_bool(name, value)
    except ValueError as exc:
        return str(exc)
    raise AssertionError(value)


@pytest.mark.parametrize("key, var", [("speculation", "vllm_server_speculation"), ("force", "vllm_server_force_speculation")])
@pytest.mark.parametrize("value, on", SPELLINGS)
def test_the_plan_reads_speculation_strictly(key, var, value, on):
    inputs = dict(THOR, speculation="true")
    inputs[key] = value
    if key == "force":  # the Orin Nano refuses speculation unless forced
        inputs.update(family="orin_nano", l4t_major="36", l4t_minor="4")
    plan = vllm_launch_plan(inputs)
    if key == "speculation":
        assert bool(plan["speculation"]) is on, plan
    else:
        assert any(r["rule"].startswith("family.") for r in plan["refusals"]) is (not on), plan["refusals"]


# --- the role side -----------------------------------------------------------------------------------------------
def _specs(role):
    with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")) as handle:
        return yaml.safe_load(handle)["argument_specs"]


def _role_booleans(role):
    return set(name for spec in _specs(role).values() for name, option in (spec.get("options") or {}).items()
               if option.get("type") == "bool")


def _defaults(role):
    out = {}
    for path in glob.glob(os.path.join(REPO, "roles", role, "defaults", "**", "*.yml"), recursive=True):
        with open(path) as handle:
            out.update(yaml.safe_load(handle) or {})
    return out


@pytest.mark.parametrize("role", ["vllm_server", "rollout"])
def test_every_boolean_default_is_typed_bool_in_every_entry_point_that_lists_it(role):
    bools = set(name for name, value in _defaults(role).items() if isinstance(value, bool))
    assert bools, role
    for entry, spec in _specs(role).items():
        for name, option in (spec.get("options") or {}).items():
            if name in bools:
                assert option.get("type") == "bool", (role, entry, name)
    assert bools <= set((_specs(role)["main"]["options"])), role


def test_the_input_check_gets_every_vllm_server_boolean():
    with open(os.path.join(REPO, "roles", "vllm_server", "tasks", "inputs.yml")) as handle:
        task = yaml.safe_load(handle)[0]
    inputs = task["vars"]["__vllm_server_inputs"]
    assert set(inputs["booleans"]) | {"vllm_server_allow_open_bind"} == _role_booleans("vllm_server")
    for name, value in inputs["booleans"].items():
        assert value == "{{ %s }}" % name


def _bare_boolean_uses():
    """Conditions on a boolean variable without | bool (the string "false" is true in Jinja)."""
    found = []
    names = _role_booleans("vllm_server") | _role_booleans("rollout")
    paths = [p for p in glob.glob(os.path.join(REPO, "roles", "vllm_server", "**", "*"), recursive=True)
             + glob.glob(os.path.join(REPO, "roles", "rollout", "**", "*"), recursive=True)
             + glob.glob(os.path.join(REPO, "playbooks", "*.yml"))
             if p.endswith((".yml", ".j2")) and os.sep + "meta" + os.sep not in p and os.sep + "defaults" + os.sep not in p]
    patterns = [re.compile(r"(\bif\s+|\bnot\s+|\band\s+|\bor\s+|when:\s*|^\s*-\s+)\(?\s*%s\b(?!(\s*\|\s*default\([^)]*\))?\s*\|\s*bool)"
                           r"|\b%s\s+(and|or|if|else)\b" % (name, name)) for name in sorted(names)]
    for path in paths:
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                if not line.lstrip().startswith("#") and any(p.search(line) for p in patterns):
                    found.append("%s:%d: %s" % (os.path.relpath(path, REPO), number, line.strip()))
    return found


def test_no_task_or_template_tests_a_boolean_without_converting_it():
    assert _bare_boolean_uses() == []


def test_the_scan_finds_a_bare_use():
    """The scan itself: the spellings it must catch."""
    for line in ("when: vllm_server_trial", "  - not vllm_server_use_existing_user", "x: \"{{ 'a' if rollout_force else 'b' }}\"",
                 "x: \"{{ rollout_prefetch and y }}\"", "x: \"{{ y and rollout_tune_k }}\""):
        name = re.search(r"(vllm_server|rollout)_[a-z_]+", line).group(0)
        pattern = re.compile(r"(\bif\s+|\bnot\s+|\band\s+|\bor\s+|when:\s*|^\s*-\s+)\(?\s*%s\b(?!(\s*\|\s*default\([^)]*\))?\s*\|\s*bool)"
                             r"|\b%s\s+(and|or|if|else)\b" % (name, name))
        assert pattern.search(line), line
        assert not pattern.search(line.replace(name, name + " | bool")), line
