# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""L4T release parsing (nv_tegra_release, dpkg) and the L4T -> JetPack table."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# "# R36 (release), REVISION: 4.4, GCID: 41062509, BOARD: generic, EABI: aarch64, DATE: ..."
_RELEASE_RE = re.compile(r"^#\s*R(\d{2,3})\s*\(release\),\s*REVISION:\s*(\d+)\.(\d+)(?:[,\s]|$)")
# nvidia-l4t-core package version: "36.4.4-20250616085344"
_DPKG_VERSION_RE = re.compile(r"^(\d{2,3})\.(\d+)\.(\d+)(?:-|$)")

# Verbatim from jetson_stats jtop/core/jetson_variables.py NVIDIA_JETPACK (L4T 34-39).
# Labels keep NVIDIA's suffixes; the plain dotted version is derived from them.
L4T_TO_JETPACK = {
    "39.2.0": "7.2 GA",
    "39.0.0": "7.2 EA",
    "38.4.0": "7.1",
    "38.2.2": "7.0",
    "38.2.1": "7.0",
    "38.2.0": "7.0",
    "36.5.0": "6.2.2",
    "36.4.7": "6.2.1",
    "36.4.4": "6.2.1",
    "36.4.3": "6.2",
    "36.4.2": "6.1 (rev1)",
    "36.4.0": "6.1",
    "36.3.0": "6.0",
    "36.2.0": "6.0 DP",
    "36.0.0": "6.0 EA",
    "35.6.4": "5.1.6",
    "35.6.3": "5.1.5",
    "35.6.2": "5.1.5",
    "35.6.1": "5.1.5",
    "35.6.0": "5.1.4",
    "35.5.0": "5.1.3",
    "35.4.1": "5.1.2",
    "35.3.1": "5.1.1",
    "35.3.0": "5.1.1 PRE",
    "35.2.1": "5.1",
    "35.1.0": "5.0.2 GA",
    "34.1.1": "5.0.1 DP",
    "34.1.0": "5.0 DP",
    "34.0.1": "5.0 PRE-DP",
}

_PLAIN_RE = re.compile(r"^(\d+(?:\.\d+)*)")


def plain_jetpack(label):
    """'7.2 GA' -> '7.2', '6.1 (rev1)' -> '6.1'."""
    match = _PLAIN_RE.match(label or "")
    return match.group(1) if match else None


def _l4t(major, minor, patch, source):
    return {
        "release": "%d.%d.%d" % (major, minor, patch),
        "major": major,
        "minor": minor,
        "patch": patch,
        "source": source,
    }


def parse_nv_tegra_release(text):
    """Return the l4t dict from the first line of /etc/nv_tegra_release, or None."""
    if not text:
        return None
    first = text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""
    match = _RELEASE_RE.match(first.strip())
    if not match:
        return None
    major, minor, patch = (int(group) for group in match.groups())
    return _l4t(major, minor, patch, "nv_tegra_release")


def parse_dpkg_version(version, source="dpkg"):
    """'36.4.4-20250616085344' -> l4t dict; anything else -> None."""
    match = _DPKG_VERSION_RE.match((version or "").strip())
    if not match:
        return None
    major, minor, patch = (int(group) for group in match.groups())
    return _l4t(major, minor, patch, source)


def dpkg_status_version(text, package="nvidia-l4t-core"):
    """Version of an installed ``package`` from /var/lib/dpkg/status, or None."""
    if not text:
        return None
    for stanza in text.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            key, dummy, value = line.partition(":")
            fields[key.strip()] = value.strip()
        if fields.get("Package") != package:
            continue
        # "install ok installed" only; a removed package leaves "deinstall ok config-files".
        if "installed" not in fields.get("Status", "").split()[-1:]:
            continue
        return fields.get("Version")
    return None


def _major_minor(version):
    parts = (version or "").split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


def jetpack_for(l4t):
    """Return (jetpack, label, source) for an l4t dict.

    Exact table hit first. Otherwise the releases of the same L4T major.minor
    must all belong to one JetPack major.minor (39.2.x -> "7.2"); when they
    disagree (36.4.x is 6.1 or 6.2) the answer is None: never a wrong guess.
    """
    if not l4t:
        return None, None, None
    release = l4t["release"]
    label = L4T_TO_JETPACK.get(release)
    if label:
        return plain_jetpack(label), label, "exact"
    prefix = "%d.%d." % (l4t["major"], l4t["minor"])
    series = set()
    for known, known_label in L4T_TO_JETPACK.items():
        if known.startswith(prefix):
            series.add(_major_minor(plain_jetpack(known_label)))
    if len(series) == 1:
        only = series.pop()
        if only:
            return only, None, "major_minor"
    return None, None, None
