# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.files import RootReader


def test_reads_under_root_and_reports_problems(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text("ID=ubuntu\n")
    (tmp_path / "etc" / "dir").mkdir()
    reader = RootReader(str(tmp_path))
    assert reader.read_text("etc/os-release") == "ID=ubuntu\n"
    assert reader.read_text("/etc/os-release") == "ID=ubuntu\n"
    assert reader.read_text("etc/missing") is None
    assert reader.warnings == []
    assert reader.read_text("etc/missing", quiet_missing=False) is None
    assert reader.read_bytes("etc/dir") is None
    assert len(reader.warnings) == 2
    assert "directory" in reader.warnings[1]


def test_limit_caps_huge_files(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 1000)
    assert len(RootReader(str(tmp_path)).read_bytes("big", limit=10)) == 10
