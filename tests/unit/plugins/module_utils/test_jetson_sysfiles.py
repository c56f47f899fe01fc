# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import sysfiles as sf


def test_meminfo_in_bytes():
    info = sf.parse_meminfo("MemTotal:       64349916 kB\nMemAvailable:   58000000 kB\nHugePages_Total:       0\n"
                            "NvMapMemUsed:     471460 kB\nbroken line\n")
    assert info["MemTotal"] == 64349916 * 1024
    assert info["MemAvailable"] == 58000000 * 1024
    assert info["HugePages_Total"] == 0
    assert sf.parse_meminfo(None) == {}


def test_meminfo_keeps_parenthesised_keys_and_short_spacing():
    # spec_headroom re-reads MemAvailable with this parser after dropping caches.
    info = sf.parse_meminfo("MemFree:  100 kB\nActive(anon):   2048 kB\n")
    assert info == {"MemFree": 100 * 1024, "Active(anon)": 2048 * 1024}


def test_os_release_quotes():
    fields = sf.parse_os_release('NAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\n# c\n')
    assert sf.os_summary(fields) == {"distribution": "Ubuntu", "version": "22.04"}
    assert sf.os_summary({}) == {"distribution": None, "version": None}


def test_cuda_version_json_and_txt():
    text = '{\n   "cuda" : {"name" : "CUDA SDK", "version" : "12.6.10"},\n' \
           '   "cuda_nvcc" : {"name" : "CUDA NVCC", "version" : "12.6.68"}\n}\n'
    assert sf.cuda_from_version_json(text) == "12.6.68"
    assert sf.cuda_from_version_json('{"cuda_nvcc": {"version": "junk"}}') is None
    assert sf.cuda_from_version_json("{not json") is None
    assert sf.cuda_from_version_json("[1, 2]") is None
    assert sf.cuda_from_version_txt("CUDA Version 10.2.89\n") == "10.2.89"


def test_kernel():
    assert sf.parse_kernel("5.15.148-tegra\n") == "5.15.148-tegra"
    assert sf.parse_kernel("") is None
    assert sf.parse_kernel("\x1b\x00") is None
