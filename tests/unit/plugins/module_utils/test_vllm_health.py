"""Readiness probes and crash-loop detection of the vllm_wait module (no server, no socket; tests/integration_py has
the HTTP ones and the closed port)."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.vllm.health import (
    cause_lines,
    drop_noise,
    parse_systemctl_show,
    served_models,
    split_url,
    unit_verdict,
)


@pytest.mark.parametrize("url", ["https://x:1", "127.0.0.1:8000", "ftp://h/"])
def test_split_url_refuses_non_http(url):
    with pytest.raises(ValueError):
        split_url(url)


def test_served_models_rejects_other_shapes():
    assert served_models("not json") is None
    assert served_models('{"data": "x"}') is None


def test_unit_verdict():
    props = parse_systemctl_show("ActiveState=activating\nSubState=auto-restart\nNRestarts=5\nExecMainStatus=1\n")
    assert unit_verdict(props, 5, 3) is None
    assert "crash loop" in unit_verdict(props, 2, 3)
    assert "failed" in unit_verdict({"ActiveState": "failed", "Result": "exit-code"}, 0, 3)
    assert unit_verdict({"ActiveState": "active", "SubState": "running", "NRestarts": "0"}, 0, 3) is None
    assert "inactive" in unit_verdict({"ActiveState": "inactive", "SubState": "dead"}, 0, 3)


def test_noise_is_dropped_and_the_cause_lines_are_kept():
    lines = (["INFO starting"] + ["ValueError: 1 validation error for SpeculativeConfig"]
             + ["nanobind: leaked 12 instances!", ' - leaked function "triton::foo"'] * 150
             + ["vllm.service: Failed with result 'exit-code'."])
    kept = drop_noise(lines)
    assert len(kept) == 3
    assert cause_lines(kept) == ["ValueError: 1 validation error for SpeculativeConfig"]
    assert cause_lines(["Value error, User-specified max_model_len (4096) is greater than the derived"]) != []
