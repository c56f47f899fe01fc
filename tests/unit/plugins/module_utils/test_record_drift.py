# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""drift.py: what runs on a converged host compared with its last good config (issue 30 item 2)."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import drift as d

BASE = ["/opt/vllm/bin/vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "8192"]
SPEC = BASE + ["--speculative-config", '{"method":"eagle3","num_speculative_tokens":3}']


def unit(argv, extra=""):
    return ("[Unit]\nDescription=vLLM\n[Service]\nEnvironmentFile=/etc/vllm/vllm.env\n%sExecStart=%s\n"
            % (extra, d.systemd_command_line(argv)))


def trial(argv):
    return "[Service]\nExecStart=\nExecStart=%s\n" % d.systemd_command_line(argv)


def state(status="reverted", argv=None, kind="baseline"):
    return {"status": status, "last_good": {"kind": kind, "argv": BASE if argv is None else argv}}


@pytest.mark.parametrize("status", ["kept", "reverted", "refused", "off"])
def test_a_host_running_its_last_good_config_has_no_drift(status):
    argv = SPEC if status == "kept" else BASE
    out = d.find_drift(state(status, argv, "candidate" if status == "kept" else "baseline"),
                       {"unit": unit(argv), "trial": None, "need_daemon_reload": False, "secrets_differ": False})
    assert out == {"findings": [], "action": None, "rule": "drift.running_config", "restart": False,
                   "not_serving": False}
    assert d.describe("h", out) == ""


def test_a_reverted_host_whose_unit_speculates_again_is_put_back():
    out = d.find_drift(state(), {"unit": unit(SPEC), "trial": None})
    assert out["action"] == "reapply"
    assert len(out["findings"]) == 1 and "not the last good config (baseline)" in out["findings"][0]
    assert "--speculative-config" in out["findings"][0]
    assert ": it adds --speculative-config " in out["findings"][0] and "it drops" not in out["findings"][0], out
    text = d.describe("agx-02", out)
    assert text.startswith("drift.running_config: agx-02 drifted") and "re-applied" in text


def test_an_added_api_key_makes_the_host_evaluated_again():
    out = d.find_drift(state(), {"unit": unit(BASE), "trial": None, "secrets_differ": True})
    assert out["action"] == "reevaluate"
    assert out["findings"] == ["the secrets file (API key, Hugging Face token) is not what the inventory (vault) sets now"]
    assert "evaluated again" in d.describe("h", out)


def test_a_kept_candidate_whose_unit_changed_is_evaluated_again():
    out = d.find_drift(state("kept", SPEC, "candidate"), {"unit": unit(BASE), "trial": None})
    assert out["action"] == "reevaluate"


def test_a_trial_left_over_a_converged_host_is_drift_even_with_the_same_launch():
    out = d.find_drift(state("kept", SPEC, "candidate"), {"unit": unit(BASE), "trial": trial(SPEC)})
    assert [f for f in out["findings"] if "trial drop-in" in f]
    assert not [f for f in out["findings"] if "not the last good config" in f]  # the trial runs the right argv


def test_a_missing_unit_and_an_unloaded_unit_are_drift():
    assert "the unit file is missing" in d.find_drift(state(), {"unit": None})["findings"][0]
    out = d.find_drift(state(), {"unit": unit(BASE), "need_daemon_reload": True})
    assert out["action"] == "reapply" and "daemon-reload" in out["findings"][0] and out["restart"] is True


@pytest.mark.parametrize("process, drifted", [
    (BASE, False),  # the argv itself (a binary, the docker CLI of a container unit)
    (["/opt/vllm/bin/python3"] + BASE, False),  # a console script: its interpreter first
    (["python3"] + SPEC, True),  # speculating while the unit on disk is the baseline (no restart since)
    (["python3"] + BASE[:-1] + ["4096"], True),
    (BASE[1:], True),  # not the recorded program
    (None, False), ([], False),  # nothing runs (starting, stopped): not compared
])
def test_the_running_process_is_compared_with_the_last_good_argv(process, drifted):
    out = d.find_drift(state(), {"unit": unit(BASE), "trial": None, "process_argv": process})
    assert (out["action"] == "reapply") is drifted and out["restart"] is drifted
    if drifted:
        assert out["findings"][0].startswith("the running vLLM process runs a launch that is not the last good config"), out
        assert "python3" not in out["findings"][0]  # the interpreter is no difference


def test_one_changed_argument_is_drift():
    changed = list(BASE)
    changed[-1] = "4096"  # the context window halved (a revert from role defaults, issue 30 item 4)
    assert d.find_drift(state(), {"unit": unit(changed)})["action"] == "reapply"


@pytest.mark.parametrize("stored", [
    {}, None, {"status": "pending", "last_good": {"kind": "baseline", "argv": BASE}},
    {"status": "failed", "last_good": {"kind": "baseline", "argv": BASE}},
    {"status": "reverted", "last_good": None}, {"status": "reverted", "last_good": {"argv": []}},
    {"status": "reverted", "last_good": {"argv": ["relative/vllm", "serve"]}},
])
def test_hosts_without_a_converged_last_good_config_are_not_compared(stored):
    # they are evaluated anyway (pending, failed, never rolled out)
    assert d.find_drift(stored, {"unit": unit(SPEC), "secrets_differ": True})["action"] is None


def test_what_is_not_read_is_not_compared():
    assert d.find_drift(state(), {})["action"] is None
    assert d.find_drift(state(), None)["action"] is None


def test_bad_input_names_the_field():
    with pytest.raises(d.DriftError, match="running must be a dict"):
        d.find_drift(state(), ["unit"])


def test_boolean_words_are_read_as_ansible_reads_them_and_other_words_are_refused():
    assert d.find_drift(state(), {"unit": unit(BASE), "secrets_differ": "False", "need_daemon_reload": "no"})["action"] is None
    assert d.find_drift(state(), {"unit": unit(BASE), "secrets_differ": "True"})["action"] == "reevaluate"
    with pytest.raises(d.DriftError, match="running.secrets_differ must be a boolean"):
        d.find_drift(state(), {"unit": unit(BASE), "secrets_differ": "maybe"})


def test_a_changed_value_is_named_as_added_and_dropped():
    changed = list(BASE)
    changed[-1] = "4096"
    finding = d.find_drift(state(), {"unit": unit(changed)})["findings"][0]
    assert finding.endswith(": it adds 4096, it drops 8192"), finding


# A unit that does not serve (issue 34: a kept config that crash-loops until systemd's restart limit).
SERVING = {"active_state": "active", "sub_state": "running", "result": "success"}


@pytest.mark.parametrize("systemd, words", [
    ({"active_state": "failed", "sub_state": "failed", "result": "start-limit-hit"}, "restart limit"),
    ({"active_state": "failed", "sub_state": "failed", "result": "exit-code"}, "result exit-code"),
    ({"active_state": "activating", "sub_state": "auto-restart", "result": "exit-code"}, "restarting after a crash"),
    ({"active_state": "inactive", "sub_state": "dead", "result": "success"}, "stopped (inactive)"),
])
def test_a_kept_candidate_that_does_not_serve_is_evaluated_again(systemd, words):
    running = dict({"unit": unit(SPEC), "trial": None, "process_argv": []}, **systemd)
    out = d.find_drift(state("kept", SPEC, "candidate"), running)
    assert out["action"] == "reevaluate" and out["restart"] is True and out["not_serving"] is True, out
    assert len(out["findings"]) == 1 and out["findings"][0].startswith("vLLM is not serving") and words in out["findings"][0]
    assert "evaluated again" in d.describe("h", out)


def test_a_baseline_that_does_not_serve_is_started_again():
    running = {"unit": unit(BASE), "trial": None, "process_argv": [], "active_state": "failed",
               "sub_state": "failed", "result": "start-limit-hit"}
    out = d.find_drift(state("reverted", BASE, "baseline"), running)
    assert out["action"] == "reapply" and out["restart"] is True
    assert "re-applied" in d.describe("h", out)


@pytest.mark.parametrize("systemd", [
    SERVING,
    {"active_state": "activating", "sub_state": "start", "result": "success"},  # starting, not crashing
    {"active_state": "reloading", "sub_state": "reload", "result": "success"},
])
def test_a_serving_or_starting_unit_is_not_drift(systemd):
    running = dict({"unit": unit(SPEC), "trial": None, "process_argv": SPEC}, **systemd)
    assert d.find_drift(state("kept", SPEC, "candidate"), running)["findings"] == []


def test_systemd_words_that_are_not_strings_are_refused_with_the_field():
    with pytest.raises(d.DriftError, match="running.active_state must be"):
        d.find_drift(state(), {"active_state": ["failed"]})
