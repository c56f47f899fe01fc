# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import release as rel


@pytest.mark.parametrize("line, release, major", [
    ("# R36 (release), REVISION: 4.4, GCID: 41062509, BOARD: generic, EABI: aarch64, DATE: Mon Jun 16 16:07:13 UTC 2025",
     "36.4.4", 36),
    ("# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, DATE: Fri Aug 22 00:55:42 UTC 2025",
     "38.2.0", 38),
    ("# R35 (release), REVISION: 3.1, GCID: 32790763, BOARD: t186ref, EABI: aarch64, DATE: Wed Mar 15 07:54:12 UTC 2023",
     "35.3.1", 35),
])
def test_nv_tegra_release_first_line(line, release, major):
    l4t = rel.parse_nv_tegra_release(line + "\n# KERNEL_VARIANT: oot\n")
    assert l4t["release"] == release
    assert l4t["major"] == major and isinstance(l4t["major"], int)
    assert l4t["source"] == "nv_tegra_release"


@pytest.mark.parametrize("text", [
    "", "# R36 (rel", "# RXX (release), REVISION: 4.4", "# R36 (release), REVISION: four.4,",
    "\x00\x00garbage", "KERNEL_VARIANT: oot\n# R36 (release), REVISION: 4.4, GCID: 1",
])
def test_nv_tegra_release_rejects_broken_text(text):
    assert rel.parse_nv_tegra_release(text) is None


def test_dpkg_version_keeps_part_before_dash():
    assert rel.parse_dpkg_version("36.4.4-20250616085344")["release"] == "36.4.4"
    assert rel.parse_dpkg_version("36.5.0-20260115194252")["source"] == "dpkg"
    assert rel.parse_dpkg_version("") is None
    assert rel.parse_dpkg_version("not-a-version") is None


def test_dpkg_status_finds_installed_core_package_only():
    status = ("Package: nvidia-l4t-core\nStatus: deinstall ok config-files\nVersion: 35.3.1-20230319081403\n\n"
              "Package: nvidia-l4t-tools\nStatus: install ok installed\nVersion: 36.4.4-20250616085344\n")
    assert rel.dpkg_status_version(status) is None
    status += "\nPackage: nvidia-l4t-core\nStatus: install ok installed\nVersion: 36.4.4-20250616085344\n"
    assert rel.dpkg_status_version(status) == "36.4.4-20250616085344"


@pytest.mark.parametrize("release, jetpack, label, source", [
    ("36.4.4", "6.2.1", "6.2.1", "exact"),
    ("39.2.0", "7.2", "7.2 GA", "exact"),
    ("36.4.2", "6.1", "6.1 (rev1)", "exact"),
    ("35.3.0", "5.1.1", "5.1.1 PRE", "exact"),
    ("39.2.1", "7.2", None, "major_minor"),
    ("38.2.5", "7.0", None, "major_minor"),
    ("35.6.9", "5.1", None, "major_minor"),
    ("36.4.9", None, None, None),   # 36.4.x spans JetPack 6.1 and 6.2: no guess
    ("32.7.4", None, None, None),   # not in the table at all
    ("40.0.0", None, None, None),
])
def test_jetpack_lookup_never_guesses(release, jetpack, label, source):
    l4t = rel.parse_dpkg_version(release)
    assert rel.jetpack_for(l4t) == (jetpack, label, source)


def test_jetpack_for_none():
    assert rel.jetpack_for(None) == (None, None, None)
