# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""What decides decode speed on a Jetson right now, and whether two rounds saw the same board.

Standard library only.  A benchmark round measured under other clocks than its
counterpart compares the clocks, not speculation: power mode (nvpmodel), whether
``jetson_clocks`` pinned the clocks, the GPU and EMC frequency, temperature and
throttling all move decode speed by tens of percent.

Sources (read under a root prefix, so fixtures can stand in for a board):

* power mode: ``/var/lib/nvpmodel/status`` + ``/etc/nvpmodel.conf`` (the parser
  jetson_facts uses; ``nvpmodel -q`` output can be passed in instead);
* GPU devfreq (``cur_freq``/``min_freq``/``max_freq`` in Hz, ``governor``):
  ``/sys/class/devfreq/17000000.gpu`` (Orin, JetPack 6), ``17000000.ga10b``
  (Orin, JetPack 5), ``gpu-gpc-0`` (Thor), ``17000000.gv11b`` (Xavier);
* EMC: ``/sys/class/devfreq/bwmgr`` (Thor), else the BPMP debugfs clock
  ``/sys/kernel/debug/bpmp/debug/clk/emc/{rate,max_rate}`` (Orin; root only);
* temperatures: ``/sys/class/thermal/thermal_zone*/{type,temp}`` (millidegrees C);
* free memory: ``MemAvailable`` of ``/proc/meminfo``;
* GPU processes: every process with a GPU device node open (``/proc/<pid>/fd``; Orin's
  nvgpu nodes ``/dev/nvhost-gpu``, ``/dev/nvhost-ctrl-gpu``, ``/dev/nvgpu/*``, ``/dev/nvmap``;
  Thor's OpenRM ``/dev/nvidia*``), marked ``vllm`` when its command line names vLLM.  Needs
  root to see other users' processes, as the rollout runs.  Jetson's nvidia-smi lists no
  processes on Orin, and tegrastats none at all, so the open device nodes are the one source
  that works on both.

``jetson_clocks`` pins the GPU by setting its devfreq ``min_freq`` to ``max_freq``;
there is no documented throttle flag, so a GPU running below its pinned maximum
counts as throttled.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import probes
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.sysfiles import parse_meminfo

GPU_DEVFREQ = ("sys/class/devfreq/17000000.gpu", "sys/class/devfreq/17000000.ga10b",
               "sys/class/devfreq/gpu-gpc-0", "sys/class/devfreq/17000000.gv11b")
EMC_DEVFREQ = "sys/class/devfreq/bwmgr"
EMC_DEBUGFS = "sys/kernel/debug/bpmp/debug/clk/emc"
THERMAL = "sys/class/thermal"
_ZONE_RE = re.compile(r"^thermal_zone\d+$")
GPU_NODES = ("/dev/nvhost-gpu", "/dev/nvhost-ctrl-gpu", "/dev/nvgpu/", "/dev/nvmap", "/dev/nvidia")
MAX_GPU_PROCESSES = 32  # a sample stays small; more than this many GPU processes is its own finding
# A pinned clock may read a step below its maximum on some releases (DVFS table rounding).
PINNED_TOLERANCE = 0.02

DEFAULT_LIMITS = {
    "gpu_freq_drop": 0.05,  # a larger drop of the GPU clock between rounds makes them not comparable
    "emc_freq_drop": 0.05,
    "max_temp_c": None,  # optional ceiling: a hotter zone during a round makes it not comparable
}


def _int(text):
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def _freq_node(reader, node, cur="cur_freq", low="min_freq", high="max_freq"):
    values = {"node": "/" + node, "cur_hz": _int(reader.read_text(node + "/" + cur)),
              "min_hz": _int(reader.read_text(node + "/" + low)),
              "max_hz": _int(reader.read_text(node + "/" + high))}
    governor = reader.read_text(node + "/governor")
    if governor is not None:
        values["governor"] = governor.strip()
    return values if values["cur_hz"] is not None else None


def read_gpu(reader):
    for node in GPU_DEVFREQ:
        values = _freq_node(reader, node)
        if values:
            return values
    return None


def read_emc(reader):
    return (_freq_node(reader, EMC_DEVFREQ)
            or _freq_node(reader, EMC_DEBUGFS, cur="rate", low="min_rate", high="max_rate"))


def read_thermal(reader):
    """{zone type: degrees C} of every readable thermal zone (duplicates get the zone name)."""
    base = reader.path(THERMAL)
    try:
        zones = sorted((z for z in os.listdir(base) if _ZONE_RE.match(z)),
                       key=lambda z: int(z[len("thermal_zone"):]))
    except OSError:
        return {}
    temps = {}
    for zone in zones:
        milli = _int(reader.read_text("%s/%s/temp" % (THERMAL, zone)))
        if milli is None or milli <= -40000:  # offline sensors report large negatives
            continue
        name = (reader.read_text("%s/%s/type" % (THERMAL, zone)) or zone).strip() or zone
        temps[name if name not in temps else "%s(%s)" % (name, zone)] = round(milli / 1000.0, 1)
    return temps


def read_gpu_processes(reader):
    """[{pid, name, vllm}] of the processes with a GPU device node open, or None without /proc."""
    base = reader.path("proc")
    try:
        pids = sorted((p for p in os.listdir(base) if p.isdigit()), key=int)
    except OSError:
        return None
    found = []
    for pid in pids:
        fd_dir = os.path.join(base, pid, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone meanwhile, or another user's process without root
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))  # never followed: a device path
            except OSError:
                continue
            if target.startswith(GPU_NODES):
                cmdline = (reader.read_text("proc/%s/cmdline" % pid) or "").replace("\0", " ")
                found.append({"pid": int(pid), "name": (reader.read_text("proc/%s/comm" % pid) or "").strip(),
                              "vllm": "vllm" in cmdline.lower()})
                break
        if len(found) >= MAX_GPU_PROCESSES:
            break
    return found


def _others(samples):
    """The non-vLLM GPU processes of some samples, as "name (pid N)"."""
    return set("%s (pid %d)" % (p["name"] or "?", p["pid"]) for s in samples
               for p in s.get("gpu_processes") or [] if not p.get("vllm"))


def is_pinned(gpu):
    """True when jetson_clocks (or anyone) pinned the GPU floor to its ceiling."""
    if not gpu or not gpu.get("max_hz") or gpu.get("min_hz") is None:
        return None
    return gpu["min_hz"] >= gpu["max_hz"] * (1 - PINNED_TOLERANCE)


def is_throttled(gpu):
    """A pinned GPU running below its maximum: the board pulled the clock down."""
    pinned = is_pinned(gpu)
    if not pinned:
        return False if pinned is False else None
    return gpu["cur_hz"] < gpu["max_hz"] * (1 - PINNED_TOLERANCE)


def sample(reader, nvpmodel_query=None):
    """One reading of the board's conditions (missing sources are None, never an error)."""
    mode = probes.parse_nvpmodel_query(nvpmodel_query) if nvpmodel_query else None
    if mode is None:
        mode = probes.power_mode_from_files(reader.read_text("var/lib/nvpmodel/status"),
                                            reader.read_text("etc/nvpmodel.conf"))
    gpu = read_gpu(reader)
    temps = read_thermal(reader)
    meminfo = parse_meminfo(reader.read_text("proc/meminfo"))
    return {
        "power_mode": mode,
        "maxn": probes.is_maxn(mode["name"]) if mode else None,
        "gpu": gpu,
        "clocks_pinned": is_pinned(gpu),
        "throttled": is_throttled(gpu),
        "emc": read_emc(reader),
        "thermal_c": temps,
        "max_temp_c": max(temps.values()) if temps else None,
        "mem_available_bytes": meminfo.get("MemAvailable"),
        "gpu_processes": read_gpu_processes(reader),
    }


def _samples(value):
    return [s for s in (value if isinstance(value, (list, tuple)) else [value]) if s]


def _lowest(samples, part):
    values = [s[part]["cur_hz"] for s in samples if s.get(part) and s[part].get("cur_hz")]
    return min(values) if values else None


def comparable(before, after, limits=None):
    """Whether a round sampled as ``after`` (one sample or the samples taken during it)
    ran under the conditions of ``before`` (its counterpart's samples).

    Returns {"comparable": bool, "reasons": [...]}: every reason names what changed."""
    lim = dict(DEFAULT_LIMITS)
    lim.update(dict((k, v) for k, v in (limits or {}).items() if v is not None))
    unknown = set(lim) - set(DEFAULT_LIMITS)
    if unknown:
        raise ValueError("unknown condition limits %s; known: %s"
                         % (", ".join(sorted(unknown)), ", ".join(sorted(DEFAULT_LIMITS))))
    first, second = _samples(before), _samples(after)
    reasons = []
    modes = set((s.get("power_mode") or {}).get("name") for s in first + second) - set([None])
    if len(modes) > 1:
        reasons.append("power mode changed (%s): set one nvpmodel mode for both rounds"
                       % " -> ".join(sorted(modes)))
    pinned = set(s.get("clocks_pinned") for s in first + second) - set([None])
    if len(pinned) > 1:
        reasons.append("jetson_clocks was set for one round and not the other")
    # Only held clocks say something by their frequency: under DVFS (no jetson_clocks) the GPU
    # idles low between requests and a reading taken then is not a slower board.
    held = all(s.get("clocks_pinned") for s in first + second)
    for part, key in (("gpu", "gpu_freq_drop"), ("emc", "emc_freq_drop")):
        ref, low = _lowest(first, part), _lowest(second, part)
        if held and ref and low and low < ref * (1 - lim[key]):
            reasons.append("%s frequency dropped %.0f %% (%d -> %d MHz), more than the %.0f %% allowed"
                           % (part.upper(), 100.0 * (1 - float(low) / ref), ref // 1000000,
                              low // 1000000, 100 * lim[key]))
    throttled = [s for s in first + second if s.get("throttled")]
    if throttled:
        worst = min(int(s["gpu"]["cur_hz"] or 0) for s in throttled)
        pinned = int(throttled[0]["gpu"]["max_hz"] or 0)
        reasons.append("the GPU was throttled (%d MHz under a pinned %d MHz)" % (worst // 1000000, pinned // 1000000))
    # The served vLLM changes between arms (another process after each restart); anything else
    # that holds the GPU shares its bandwidth, so a round is compared only under the same company.
    ref_others, round_others = _others(first), _others(second)
    if round_others != ref_others:
        came, went = sorted(round_others - ref_others), sorted(ref_others - round_others)
        reasons.append("other GPU processes differed (%s): stop other GPU work while benchmarking" % "; ".join(
            (["came: " + ", ".join(came)] if came else []) + (["gone: " + ", ".join(went)] if went else [])))
    limit_c = lim["max_temp_c"]
    if limit_c is not None:
        hot = [float(s["max_temp_c"]) for s in first + second if s.get("max_temp_c") is not None]
        if hot and max(hot) > float(limit_c):
            reasons.append("a thermal zone reached %.1f C, above the %.1f C limit" % (max(hot), float(limit_c)))
    return {"comparable": not reasons, "reasons": reasons}
