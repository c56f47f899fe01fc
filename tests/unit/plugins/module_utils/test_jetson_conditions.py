# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import os

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.jetson.conditions import comparable, sample
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.files import RootReader

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "conditions")


def board(name, **kwargs):
    return sample(RootReader(os.path.join(FIXTURES, name, "root")), **kwargs)


def test_orin_jetpack6_pinned_at_maxn():
    s = board("agx-orin-r36-maxn-pinned")
    assert s["power_mode"] == {"name": "MAXN", "id": 0} and s["maxn"] is True
    assert s["gpu"]["node"] == "/sys/class/devfreq/17000000.gpu"
    assert s["gpu"]["cur_hz"] == 1300500000 and s["gpu"]["governor"] == "nvhost_podgov"
    assert s["clocks_pinned"] is True and s["throttled"] is False
    assert s["emc"]["cur_hz"] == 3199000000 and s["emc"]["node"].endswith("bpmp/debug/clk/emc")
    assert s["thermal_c"] == {"cpu-thermal": 48.5, "gpu-thermal": 51.2}
    assert s["max_temp_c"] == pytest.approx(51.2, abs=0.1)
    assert s["mem_available_bytes"] == 52428800 * 1024


def test_orin_jetpack5_with_dvfs_and_an_offline_sensor():
    s = board("orin-nx-r35-15w-dvfs")
    assert s["power_mode"]["name"] == "MODE_15W" and s["maxn"] is False
    assert s["gpu"]["node"].endswith("17000000.ga10b")
    assert s["clocks_pinned"] is False and s["throttled"] is False  # DVFS, not throttling
    assert s["emc"] is None  # debugfs not readable: unknown, not an error
    assert list(s["thermal_c"]) == ["CPU-therm"]  # -256 C is an offline sensor


def test_thor_reads_gpc_and_bwmgr():
    s = board("thor-r38-maxn-pinned")
    assert s["gpu"]["node"] == "/sys/class/devfreq/gpu-gpc-0" and s["gpu"]["max_hz"] == 1575000000
    assert s["emc"]["node"] == "/sys/class/devfreq/bwmgr" and s["emc"]["cur_hz"] == 4266000000
    assert s["clocks_pinned"] is True


def test_nvpmodel_query_output_wins_over_the_files():
    s = board("thor-r38-maxn-pinned", nvpmodel_query="NV Power Mode: 120W\n1\n")
    assert s["power_mode"] == {"name": "120W", "id": 1}


def test_an_empty_root_gives_unknowns(tmp_path):
    s = sample(RootReader(str(tmp_path)))
    assert s["gpu"] is None and s["clocks_pinned"] is None and s["throttled"] is None
    assert s["thermal_c"] == {} and s["power_mode"] is None


def test_same_conditions_are_comparable():
    a = board("agx-orin-r36-maxn-pinned")
    assert comparable(a, [a, copy.deepcopy(a)]) == {"comparable": True, "reasons": []}


def test_throttled_round_is_refused_with_the_frequencies():
    out = comparable(board("agx-orin-r36-maxn-pinned"), board("agx-orin-r36-maxn-throttled"))
    assert out["comparable"] is False
    assert any("GPU frequency dropped 29 % (1300 -> 918 MHz)" in r for r in out["reasons"])
    assert any("throttled (918 MHz under a pinned 1300 MHz)" in r for r in out["reasons"])
    hot = comparable(board("agx-orin-r36-maxn-pinned"), board("agx-orin-r36-maxn-throttled"),
                     {"max_temp_c": 90, "gpu_freq_drop": 0.5})
    assert any("97.8 C, above the 90.0 C limit" in r for r in hot["reasons"])


def test_power_mode_and_jetson_clocks_changes_are_named():
    pinned = board("agx-orin-r36-maxn-pinned")
    other = copy.deepcopy(pinned)
    other["power_mode"] = {"name": "MODE_15W", "id": 1}
    other["clocks_pinned"] = False
    reasons = comparable(pinned, other)["reasons"]
    assert any("power mode changed (MAXN -> MODE_15W)" in r for r in reasons)
    assert any("jetson_clocks was set for one round" in r for r in reasons)


def test_a_small_drop_is_within_the_limit_and_limits_are_checked():
    a = board("agx-orin-r36-maxn-pinned")
    b = copy.deepcopy(a)
    b["gpu"]["cur_hz"] = int(a["gpu"]["cur_hz"] * 0.97)
    b["throttled"] = False
    assert comparable(a, b)["comparable"] is True
    assert comparable(a, b, {"gpu_freq_drop": 0.02})["comparable"] is False
    with pytest.raises(ValueError, match="unknown condition limits gpu_drop"):
        comparable(a, b, {"gpu_drop": 0.1})


def test_dvfs_clocks_are_not_compared_by_frequency():
    # Without jetson_clocks the governor idles the GPU low between requests: a reading taken then
    # is not a slower board, so only held clocks are compared by frequency.
    dvfs = board("orin-nx-r35-15w-dvfs")
    assert dvfs["clocks_pinned"] is False
    idle = copy.deepcopy(dvfs)
    idle["gpu"]["cur_hz"] = dvfs["gpu"]["cur_hz"] // 4
    assert comparable(dvfs, idle) == {"comparable": True, "reasons": []}
    pinned = board("agx-orin-r36-maxn-pinned")
    slower = copy.deepcopy(pinned)
    slower["gpu"]["cur_hz"] = pinned["gpu"]["cur_hz"] // 4
    slower["throttled"] = False
    assert comparable(pinned, slower)["comparable"] is False


def _proc(root, pid, comm, cmdline, nodes):
    base = root / "proc" / str(pid)
    (base / "fd").mkdir(parents=True)
    (base / "comm").write_text(comm + "\n")
    (base / "cmdline").write_bytes(b"\0".join(part.encode() for part in cmdline) + b"\0")
    for fd, node in enumerate(nodes):
        os.symlink(node, str(base / "fd" / str(fd)))


def test_gpu_processes_are_the_ones_holding_a_gpu_device_node(tmp_path):
    _proc(tmp_path, 812, "vllm", ["/opt/vllm/bin/python3", "/opt/vllm/bin/vllm", "serve", "m"], ["/dev/null", "/dev/nvmap"])
    _proc(tmp_path, 813, "python3", ["VLLM::EngineCore"], ["/dev/nvhost-gpu"])  # vLLM's engine, renamed by setproctitle
    _proc(tmp_path, 1500, "trainer", ["python3", "train.py"], ["/dev/nvidia0", "/dev/nvidiactl"])
    _proc(tmp_path, 1600, "sshd", ["sshd"], ["/dev/null", "socket:[123]"])
    found = sample(RootReader(str(tmp_path)))["gpu_processes"]
    assert found == [{"pid": 812, "name": "vllm", "vllm": True}, {"pid": 813, "name": "python3", "vllm": True},
                     {"pid": 1500, "name": "trainer", "vllm": False}]
    assert sample(RootReader(str(tmp_path / "nowhere")))["gpu_processes"] is None  # no /proc: unknown


def test_other_gpu_work_makes_rounds_not_comparable_but_a_restarted_vllm_does_not():
    base = {"clocks_pinned": True, "gpu_processes": [{"pid": 812, "name": "vllm", "vllm": True}]}
    restarted = dict(base, gpu_processes=[{"pid": 977, "name": "vllm", "vllm": True}])
    assert comparable([base], [restarted]) == {"comparable": True, "reasons": []}
    busy = dict(base, gpu_processes=base["gpu_processes"] + [{"pid": 1500, "name": "trainer", "vllm": False}])
    assert comparable([base], [busy])["reasons"] == [
        "other GPU processes differed (came: trainer (pid 1500)): stop other GPU work while benchmarking"]
    assert comparable([busy], [base])["reasons"] == [
        "other GPU processes differed (gone: trainer (pid 1500)): stop other GPU work while benchmarking"]
    assert comparable([busy], [dict(busy)])["comparable"]  # the same company in both rounds
