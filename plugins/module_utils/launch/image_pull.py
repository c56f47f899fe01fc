# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether to pull the vLLM image before the switch, and what a failed `docker pull` means (pure, stdlib only).

The image is pulled while the current launch still serves, so the switch is only a restart and a
pull that cannot succeed fails the host before its unit changes. The texts are Docker's own: the
daemon's "Error response from daemon: ..." lines and the registry's error codes (Registry API v2).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

PULL_POLICIES = ("missing", "always", "never")

# Most specific first: a rate limit or a full disk also mention the registry or a layer.
_CAUSES = (
    ("no_space", (r"no space left on device",),
     "free space under Docker's data root on the host (`docker system df`, `docker image prune`), then re-run"),
    ("rate_limited", (r"toomanyrequests", r"pull rate limit"),
     "log in to the registry on the host (`docker login`) or pull through a mirror, then re-run"),
    ("not_found_or_denied", (r"manifest unknown", r"manifest for \S+ not found", r"pull access denied",
                             r"repository does not exist", r"unauthorized", r"authentication required",
                             r"\bdenied\b", r"\bnot found\b"),
     "check vllm_server_container_image (repository and tag exist) and, for a private registry, run "
     "`docker login` on the host"),
    ("unreachable", (r"dial tcp", r"no such host", r"i/o timeout", r"TLS handshake timeout",
                     r"Client\.Timeout exceeded", r"connection refused", r"network is unreachable",
                     r"connection reset by peer"),
     "make the registry reachable from the host (DNS, proxy, firewall), or copy the image to the host "
     "(`docker save` / `docker load`) and set vllm_server_container_pull: never"),
)
PULL_CAUSES = tuple(cause for cause, _patterns, _fix in _CAUSES) + ("timeout", "unknown")
_TIMEOUT_FIX = "the pull did not finish in time: retry when the link is faster, or pre-load the image (`docker load`)"
_UNKNOWN_FIX = "run `docker pull` on the host to see the whole error"


def plan_pull(policy, present):
    """``pull`` (fetch it now), ``keep`` (nothing to do) or ``refuse`` (never pulled and not on the host)."""
    if policy not in PULL_POLICIES:
        raise ValueError("pull policy %r is not one of %s" % (policy, ", ".join(PULL_POLICIES)))
    if policy == "always":
        return "pull"
    if present:
        return "keep"
    return "refuse" if policy == "never" else "pull"


def pull_failure(text, timed_out=False):
    """{cause, line, fix}: why `docker pull` failed, Docker's line that says so, and what to do."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if timed_out:
        return {"cause": "timeout", "line": lines[-1] if lines else None, "fix": _TIMEOUT_FIX}
    for cause, patterns, fix in _CAUSES:
        for line in lines:
            if any(re.search(pattern, line, re.IGNORECASE) for pattern in patterns):
                return {"cause": cause, "line": line, "fix": fix}
    return {"cause": "unknown", "line": lines[-1] if lines else None, "fix": _UNKNOWN_FIX}


def inspect_absent(text):
    """True when `docker image inspect` failed because the image is not on the host (not a daemon fault)."""
    return bool(re.search(r"no such image", text or "", re.IGNORECASE))
