# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Parse the output of probe commands and of the nvpmodel state files."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

# `nvpmodel -q`:  "NV Power Mode: MAXN\n0"  (the id is the next line), and the
# "NV Power Mode[1]: 120W" form some releases print. NVPM WARN lines may precede.
_NVP_NAME_RE = re.compile(r"NV Power Mode(?:\[(\d+)\])?\s*:\s*(\S+)")
_NVP_ID_RE = re.compile(r"^\s*(\d+)\s*$")
# /var/lib/nvpmodel/status: "pmode:0002" (nvpmodel writes it).
_STATUS_RE = re.compile(r"pmode:0*(\d+)")
# /etc/nvpmodel.conf: "< POWER_MODEL ID=0 NAME=MAXN >"
_CONF_RE = re.compile(r"<\s*POWER_MODEL\s+ID=(\d+)\s+NAME=([A-Za-z0-9_]+)\s*>")
_VLLM_RE = re.compile(r"(\d+\.\d+(?:\.\d+)?(?:[.+\-][0-9A-Za-z.+\-]*)?)")


def is_maxn(name):
    """MAXN or MAXN_* (MAXN_SUPER); wattage-named modes are not."""
    return bool(name) and (name == "MAXN" or name.startswith("MAXN_"))


def parse_nvpmodel_query(output):
    """Return {"name", "id"} from `nvpmodel -q`, or None."""
    lines = (output or "").splitlines()
    for index, line in enumerate(lines):
        match = _NVP_NAME_RE.search(line)
        if not match:
            continue
        mode_id = int(match.group(1)) if match.group(1) is not None else None
        if mode_id is None and index + 1 < len(lines):
            following = _NVP_ID_RE.match(lines[index + 1])
            if following:
                mode_id = int(following.group(1))
        return {"name": match.group(2), "id": mode_id}
    return None


def parse_nvpmodel_conf(text):
    """{id: name} from /etc/nvpmodel.conf POWER_MODEL headers."""
    return dict((int(mode_id), name) for mode_id, name in _CONF_RE.findall(text or ""))


def power_mode_from_files(status_text, conf_text):
    """Active mode from nvpmodel's own state file plus the conf catalogue, or None."""
    match = _STATUS_RE.search(status_text or "")
    if not match:
        return None
    mode_id = int(match.group(1))
    name = parse_nvpmodel_conf(conf_text).get(mode_id)
    if name is None:
        return None
    return {"name": name, "id": mode_id}


def parse_nvidia_smi_name(output):
    """GPU name from `nvidia-smi --query-gpu=name --format=csv,noheader`.

    On Orin (nvgpu) nvidia-smi is a stub answering "<model> (nvgpu)": that
    says nothing about the variant, so it is reported as None.
    """
    for line in (output or "").splitlines():
        name = line.strip()
        if not name:
            continue
        if "(nvgpu)" in name or name.startswith("No devices") or "N/A" == name:
            return None
        return name
    return None


def parse_docker_info(output):
    """Return (runtimes list, default runtime) from `docker info` text output."""
    runtimes = []
    default = None
    for line in (output or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("Runtimes:"):
            runtimes = stripped[len("Runtimes:"):].split()
        elif stripped.startswith("Default Runtime:"):
            default = stripped[len("Default Runtime:"):].strip() or None
    return runtimes, default


def parse_docker_images(output):
    """vLLM images from `docker image ls --format '{{.Repository}}:{{.Tag}}'`."""
    images = []
    for line in (output or "").splitlines():
        image = line.strip()
        if image and "vllm" in image.lower() and image not in images:
            images.append(image)
    return images


def parse_vllm_version(output):
    """`vllm --version` prints the bare version ("0.20.1"); log lines may precede it."""
    for line in reversed((output or "").strip().splitlines()):
        candidate = line.strip()
        match = _VLLM_RE.fullmatch(candidate)
        if match:
            return match.group(1)
    return None


def docker_daemon_has_nvidia(text):
    """True when /etc/docker/daemon.json registers an "nvidia" runtime."""
    try:
        data = json.loads(text or "")
    except ValueError:
        return False
    runtimes = data.get("runtimes") if isinstance(data, dict) else None
    return isinstance(runtimes, dict) and "nvidia" in runtimes


# `python3 -c` run inside an image to read the installed vLLM's version without importing
# vLLM (which initialises torch and wants a GPU): the distribution metadata is enough.
IMAGE_VERSION_SCRIPT = "import importlib.metadata as m; print(m.version('vllm'))"


def parse_image_labels(output):
    """The labels of `docker image inspect --format '{{json .Config.Labels}}' IMAGE` ({} when none)."""
    try:
        labels = json.loads((output or "").strip() or "null")
    except ValueError:
        return None
    return dict((str(k), str(v)) for k, v in labels.items()) if isinstance(labels, dict) else {}


def runtime_version_probes(vllm_bin=None, image=None):
    """The commands that read the configured vLLM's version: [(what, argv), ...] in order of use.

    ``vllm_bin``: the CLI the unit runs (vllm_server_native_bin), asked for ``--version``.
    ``image``: the container image; first `docker image inspect` (is it on the host, its labels),
    then the version inside it, from the distribution metadata (no GPU, no network).
    """
    commands = []
    if vllm_bin:
        commands.append(("native", [vllm_bin, "--version"]))
    if image:
        commands.append(("image_labels", ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}",
                                          image]))
        commands.append(("image_version", ["docker", "run", "--rm", "--network", "none", "--entrypoint", "python3",
                                           image, "-c", IMAGE_VERSION_SCRIPT]))
    return commands
