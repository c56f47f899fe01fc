# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Parse ordinary Linux files: /proc/meminfo, /etc/os-release, CUDA version files."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

_MEMINFO_RE = re.compile(r"^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+(kB))?\s*$")
_CUDA_TXT_RE = re.compile(r"CUDA Version\s+(\d+\.\d+(?:\.\d+)*)")
_VERSION_RE = re.compile(r"^\d+\.\d+(?:\.\d+)*$")


def parse_meminfo(text):
    """Return {key: bytes} for "kB" lines and raw ints for unitless ones (HugePages_*)."""
    values = {}
    for line in (text or "").splitlines():
        match = _MEMINFO_RE.match(line.strip())
        if not match:
            continue
        key, number, unit = match.groups()
        values[key] = int(number) * 1024 if unit == "kB" else int(number)
    return values


def parse_os_release(text):
    """Return {KEY: value} with shell quoting removed."""
    fields = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, dummy, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in ("'", '"'):
            value = value[1:-1]
        fields[key.strip()] = value
    return fields


def os_summary(fields):
    if not fields:
        return {"distribution": None, "version": None}
    return {
        "distribution": fields.get("NAME") or fields.get("ID"),
        "version": fields.get("VERSION_ID"),
    }


def cuda_from_version_json(text):
    """cuda_nvcc.version from /usr/local/cuda/version.json (what jetson-containers reads)."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    nvcc = data.get("cuda_nvcc")
    version = nvcc.get("version") if isinstance(nvcc, dict) else None
    if isinstance(version, str) and _VERSION_RE.match(version.strip()):
        return version.strip()
    return None


def cuda_from_version_txt(text):
    """'CUDA Version 10.2.89' from the pre-11 version.txt."""
    match = _CUDA_TXT_RE.search(text or "")
    return match.group(1) if match else None


def parse_kernel(text):
    value = (text or "").strip().splitlines()
    if not value:
        return None
    kernel = value[0].strip()
    return kernel if kernel and all(ch.isprintable() for ch in kernel) else None
