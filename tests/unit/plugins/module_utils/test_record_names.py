# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.record import names


@pytest.mark.parametrize("value", [
    "20260301T120000Z", "nightly", "jetson-thor-01", "orin.lab.example", "10.0.0.7", "fe80::1",
    "board_7", "run 2026-03-01",
])
def test_ordinary_run_ids_and_host_names_pass(value):
    assert names.check_path_component(value, "run id") == value


@pytest.mark.parametrize("value,needle", [
    ("../../etc", "path separator"),
    ("..", "parent directory"),
    (".", "current or parent"),
    ("a/b", "path separator"),
    ("/abs", "path separator"),
    ("a\\..\\b", "path separator"),
    ("", "empty"),
    ("   ", "empty"),
    ("host\nExecStartPre=true", "control characters (0x0a)"),
    ("tab\there", "0x09"),
    ("nul\x00", "0x00"),
    ("del\x7f", "0x7f"),
    ("-rf", "starts with '-'"),
    (" padded", "leading or trailing"),
    ("x" * 201, "longer than 200"),
    ("é" * 101, "longer than 200"),
    (None, "must be a string"),
    (7, "must be a string"),
])
def test_values_that_escape_or_break_a_path_are_refused(value, needle):
    with pytest.raises(names.UnsafeName) as err:
        names.check_path_component(value, "rollout_run_id")
    msg = str(err.value)
    assert needle in msg and "rollout_run_id" in msg and "Use letters" in msg
