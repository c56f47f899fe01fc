# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Assemble ``ansible_facts.jetson`` from files under a root and optional probes.

``runner`` is None (no probes) or a callable ``runner(name, args)`` returning
``(rc, stdout, stderr)`` or None when the command does not exist. The module
supplies it; tests pass a fake. Nothing here raises on bad input.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import boards
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import devicetree as dt
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import probes
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import power
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import release
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import sysfiles
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.bootcontrol import parse_boot_control
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.classify import classify
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.files import RootReader
from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import L4T_MODERN_MAJOR, before_modern_l4t

# Below this share of MemAvailable, boards before L4T r39 may be holding memory freed by
# an exited vLLM container (jetson-memory-audit skill).
LOW_AVAILABLE_RATIO = 0.5
# dpkg's status file is large (MBs); only read when nv_tegra_release failed.
DPKG_STATUS_LIMIT = 32 * 1024 * 1024


class _Probe(object):
    """Runs probes through ``runner`` and turns every failure into a warning."""

    def __init__(self, runner, warnings):
        self.runner = runner
        self.warnings = warnings
        self.ran = []

    def __call__(self, name, args, why, optional=False):
        if self.runner is None:
            return None
        result = self.runner(name, args)
        if result is None:
            # docker and a native vllm are "where present": their absence is normal.
            if not optional:
                self.warnings.append("%s was not found, so %s is unknown from probes." % (name, why))
            return None
        self.ran.append(name)
        rc, out, err = result
        if rc != 0:
            detail = (err or out or "").strip().splitlines()
            reason = "timed out" if rc == 124 else "exited with %s" % rc
            self.warnings.append("`%s %s` %s%s, so %s is unknown from probes." % (
                name, " ".join(args), reason, (": " + detail[-1][:160]) if detail else "", why))
            return None
        return out


def _read_devicetree(reader, warnings):
    base = reader.first_existing(["%s/compatible" % d for d in dt.DT_DIRS] + ["%s/model" % d for d in dt.DT_DIRS])
    base = base.rsplit("/", 1)[0] if base else dt.DT_DIRS[0]
    model, problem = dt.parse_model(reader.read_bytes(base + "/model"))
    if problem:
        warnings.append("/%s/model %s, so it was not used." % (base, problem))
    compatible, problem = dt.parse_compatible(reader.read_bytes(base + "/compatible"))
    if problem:
        warnings.append("/%s/compatible %s, so it was not used." % (base, problem))
    parts = dt.module_parts(compatible, boards.KNOWN_BOARDS)
    for part in dt.parse_boardids(reader.read_bytes(base + "/nvidia,boardids"), boards.KNOWN_BOARDS):
        if part not in parts:
            parts.append(part)
    return model, compatible, parts


def _read_l4t(reader, probe, warnings):
    text = reader.read_text("etc/nv_tegra_release")
    l4t = release.parse_nv_tegra_release(text)
    if l4t:
        return l4t
    if text is not None:
        warnings.append("/etc/nv_tegra_release is not in the '# R36 (release), REVISION: 4.4, ...' form, "
                        "so it was ignored.")
    status = reader.read_text("var/lib/dpkg/status", limit=DPKG_STATUS_LIMIT)
    l4t = release.parse_dpkg_version(release.dpkg_status_version(status))
    if l4t:
        return l4t
    out = probe("dpkg-query", ["-W", "-f=${Version}", "nvidia-l4t-core"], "the L4T release")
    return release.parse_dpkg_version(out) if out else None


def _read_memory(reader, warnings):
    info = sysfiles.parse_meminfo(reader.read_text("proc/meminfo"))
    total = info.get("MemTotal")
    if not total:
        warnings.append("/proc/meminfo is missing or has no MemTotal, so memory is unknown.")
        return None, None
    return total, info.get("MemAvailable")


def _read_cuda(reader):
    version = sysfiles.cuda_from_version_json(reader.read_text("usr/local/cuda/version.json"))
    return version or sysfiles.cuda_from_version_txt(reader.read_text("usr/local/cuda/version.txt"))


def _read_power_mode(reader, probe, is_jetson):
    if is_jetson:
        mode = probes.parse_nvpmodel_query(probe("nvpmodel", ["-q"], "the power mode"))
        if mode:
            return mode
    return probes.power_mode_from_files(reader.read_text("var/lib/nvpmodel/status"),
                                        reader.read_text("etc/nvpmodel.conf"))


def _read_runtime(reader, probe):
    runtime = {"docker": False, "docker_daemon": None, "nvidia_runtime": False, "vllm_version": None,
               "vllm_images": []}
    ran_before = len(probe.ran)
    info = probe("docker", ["info"], "the Docker runtime", optional=True)
    if probe.runner:
        # "not running": the CLI is there and `docker info` failed or timed out (the daemon is
        # stopped, hung or refuses us); a container launch would crash-loop on it.
        runtime["docker_daemon"] = ("running" if info is not None else
                                    "not running" if len(probe.ran) > ran_before else "absent")
    if info is not None:
        runtimes, dummy = probes.parse_docker_info(info)
        runtime["docker"] = True
        runtime["nvidia_runtime"] = "nvidia" in runtimes
        images = probe("docker", ["image", "ls", "--format", "{{.Repository}}:{{.Tag}}"], "the vLLM images")
        runtime["vllm_images"] = probes.parse_docker_images(images)
    else:
        # Without a daemon to ask, the installed files are the best evidence.
        runtime["docker"] = any(reader.exists(p) for p in ("usr/bin/docker", "usr/bin/dockerd"))
        runtime["nvidia_runtime"] = (
            probes.docker_daemon_has_nvidia(reader.read_text("etc/docker/daemon.json"))
            or reader.exists("usr/bin/nvidia-container-runtime"))
    if probe.runner:
        runtime["vllm_version"] = probes.parse_vllm_version(
            probe("vllm", ["--version"], "the native vLLM version", optional=True))
    return runtime


def _gib(value):
    return value / float(boards.GIB)


def _advice(facts, mem_available):
    warnings = []
    mode = facts["power_mode"]
    if facts["is_jetson"] and mode and not facts["maxn"]:
        warnings.append(
            "The power mode is %s (id %s), not MAXN, so benchmarks are not comparable with MAXN runs; "
            "select the MAXN mode with nvpmodel before benchmarking." % (mode["name"], mode["id"]))
    l4t = facts["l4t"]
    total = facts["memory_total_bytes"]
    if l4t and before_modern_l4t(l4t["major"]) and total and mem_available is not None \
            and mem_available < LOW_AVAILABLE_RATIO * total:
        warnings.append(
            "L4T %s is older than %d and only %.1f of %.1f GiB is MemAvailable, so memory may look stuck "
            "after a vLLM container exited; run `sudo sync && sudo sysctl -w vm.drop_caches=3` on the host "
            "(then restart docker, or reboot, if that is not enough)."
            % (l4t["release"], L4T_MODERN_MAJOR, _gib(mem_available), _gib(total)))
    if l4t and facts["jetpack"] is None:
        warnings.append("L4T %s is not in the L4T to JetPack table and L4T %d.%d does not belong to a single "
                        "JetPack series, so jetpack is null rather than guessed."
                        % (l4t["release"], l4t["major"], l4t["minor"]))
    return warnings


def _machine_id(text):
    """The 32 hex digits of /etc/machine-id, or None (absent, empty or 'uninitialized')."""
    value = (text or "").strip().lower()
    return value if len(value) == 32 and all(c in "0123456789abcdef" for c in value) else None


def gather(root="/", runner=None):
    """Return the ``jetson`` facts dict for the tree under ``root``."""
    reader = RootReader(root)
    warnings = reader.warnings
    probe = _Probe(runner, warnings)

    model, compatible, dt_parts = _read_devicetree(reader, warnings)
    soc = dt.soc(compatible)
    l4t = _read_l4t(reader, probe, warnings) if (compatible or model or reader.exists("etc/nv_tegra_release")) \
        else None
    bc = parse_boot_control(reader.read_text("etc/nv_boot_control.conf"))
    mem_total, mem_available = _read_memory(reader, warnings)
    is_jetson = bool(
        (soc or "").startswith("tegra") or any(e.startswith("nvidia,tegra") for e in compatible)
        or "jetson" in (model or "").lower() or l4t or boards.family_from_model(model))
    power_mode = _read_power_mode(reader, probe, is_jetson)

    evidence = dict(model=model, compatible=compatible, dt_parts=dt_parts, boot_control=bc,
                    mem_total_bytes=mem_total, soc=soc,
                    power_mode_name=power_mode["name"] if power_mode else None)
    board = classify(**evidence)
    if board["family"] == "thor" and board["variant_source"] in (None, "memory") and runner is not None:
        # Thor's nvidia-smi is real (OpenRM); on Orin it is an "(nvgpu)" stub, so only ask Thor.
        smi = probes.parse_nvidia_smi_name(
            probe("nvidia-smi", ["--query-gpu=name", "--format=csv,noheader"], "the GPU name"))
        if smi:
            board = classify(smi_name=smi, **evidence)
    jetpack, jetpack_label, jetpack_source = release.jetpack_for(l4t)

    facts = {
        "is_jetson": is_jetson,
        "family": board["family"],
        "variant": board["variant"],
        "variant_source": board["variant_source"],
        "super": board["super"],
        "model": model,
        "compatible": compatible,
        "module_part": board["module_part"],
        "soc": soc or boards.FAMILY_SOC.get(board["family"]),
        "cuda_arch": boards.cuda_arch(soc, board["family"]) if is_jetson else None,
        "memory_bandwidth_gbps": boards.bandwidth(board["family"], board["variant"], board["super"]),
        "memory_total_bytes": mem_total,
        "memory_available_bytes": mem_available,
        "l4t": l4t,
        "jetpack": jetpack,
        "jetpack_label": jetpack_label,
        "jetpack_source": jetpack_source,
        "cuda_version": _read_cuda(reader),
        "power_mode": power_mode,
        "maxn": probes.is_maxn(power_mode["name"]) if power_mode else False,
        "os": sysfiles.os_summary(sysfiles.parse_os_release(
            reader.read_text("etc/os-release") or reader.read_text("usr/lib/os-release"))),
        "kernel": sysfiles.parse_kernel(reader.read_text("proc/sys/kernel/osrelease")),
        "runtime": _read_runtime(reader, probe),
        "boot_control": {"tnspec": bc["tnspec"], "compatible_spec": bc["compatible_spec"]},
        "power": power.describe(reader) if is_jetson else None,
        "probes_run": probe.ran,
        # A stable id of this installation (systemd's): the staged rollout's wave bucket in pull mode,
        # where every board is "localhost" (record/wave.py).
        "machine_id": _machine_id(reader.read_text("etc/machine-id")),
    }
    warnings.extend(board["warnings"])
    if not is_jetson:
        warnings.append("No Jetson evidence was found (no Tegra device tree, no /etc/nv_tegra_release), "
                        "so this host is not treated as a Jetson.")
    elif board["family"] == "unknown":
        warnings.append("This Jetson board (model %r, compatible %s) could not be placed in a known family, so "
                        "family is unknown and no board-specific settings apply."
                        % (model, ", ".join(compatible) or "unreadable"))
        # A board we cannot name must not inherit a memory figure from a guess.
        facts["memory_bandwidth_gbps"] = None
    if is_jetson and l4t is None:
        warnings.append("The L4T release could not be read from /etc/nv_tegra_release or dpkg, "
                        "so l4t and jetpack are null.")
    warnings.extend(_advice(facts, mem_available))
    facts["warnings"] = warnings
    return facts
