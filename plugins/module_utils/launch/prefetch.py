# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Fetching a candidate's draft or EAGLE-3 head into the board's Hugging Face cache before its start (pure, stdlib only).

vLLM downloads a speculative model it does not find in the cache when it starts, inside the window
in which the host serves nothing. The rollout fetches it first, with the Hugging Face CLI that
comes with vLLM (`hf download`, `huggingface-cli download` before huggingface_hub 0.34), while the
baseline still serves, with the same cache, mirror (HF_ENDPOINT), offline switch and token as the
unit. The texts below are the CLI's own (huggingface_hub 2.x) and those of the Python errors older
versions print.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# owner/name as the Hub spells repository ids (no "..", no leading "-" or ".").
_REPO_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")

# Most specific first: an offline answer also says "Local entry not found"; a missing repository
# also answers "401 Client Error" (the Hub does not tell a private repository from none).
_CAUSES = (
    ("offline_not_cached", (r"offline mode is enabled", r"HF_HUB_OFFLINE"),
     "HF_HUB_OFFLINE is set for the service (vllm_server_environment) and the model is not in the board's "
     "cache: copy it into vllm_server_hf_home/hub (`hf download` on a connected machine), point HF_ENDPOINT "
     "at a mirror the board reaches, or unset HF_HUB_OFFLINE"),
    ("no_space", (r"No space left on device", r"Errno 28\b"),
     "free space on the filesystem of vllm_server_hf_home (old models in <hf_home>/hub: `hf cache rm`), or move "
     "vllm_server_hf_home to a larger disk, then re-run; the host was not restarted"),
    # EDQUOT: the service account's disk quota, not the disk, is full.
    ("quota_exceeded", (r"Disk quota exceeded", r"Errno 122\b"),
     "raise the disk quota of the service account (vllm_server_user) on the filesystem of vllm_server_hf_home, "
     "or free space in its files there, then re-run; the host was not restarted"),
    # EFBIG: a filesystem that cannot hold a file this large (FAT32/vfat stops at 4 GiB: an SD card or a USB
    # disk formatted as it came), or a file size limit on the process (ulimit -f, LimitFSIZE=).
    ("file_too_large", (r"File too large", r"Errno 27\b"),
     "put vllm_server_hf_home on a filesystem that holds files of the model's size (ext4 or xfs; FAT32 stops "
     "at 4 GiB), or lift the file size limit of the account (ulimit -f, LimitFSIZE=), then re-run"),
    ("not_found", (r"Model '[^']*' not found", r"RepositoryNotFoundError", r"Repository Not Found",
                   r"404 Client Error", r"RevisionNotFoundError"),
     "check the speculative model's name (vllm_server_speculative_model or the catalog's draft and head "
     "names); a private repository also needs vllm_server_hf_token"),
    ("gated", (r"requires approval", r"Access denied", r"GatedRepoError", r"Cannot access gated repo",
               r"401 Client Error", r"restricted"),
     "accept the model's licence on its Hub page with the account whose token is vllm_server_hf_token, "
     "and set vllm_server_hf_token (group_vars, vaulted)"),
    # `hf download` says "Local entry not found. 429 Too Many Requests for url: ..." (huggingface_hub 1.x): a
    # rate limit, not a network that does not reach the Hub.
    ("rate_limited", (r"\b429 Too Many Requests", r"\b429 Client Error", r"Too Many Requests for url"),
     "the Hub (or the mirror in HF_ENDPOINT) refused for too many requests (HTTP 429), as a fleet fetching at once "
     "can meet its rate limit: set vllm_server_hf_token (authenticated limits are higher), point HF_ENDPOINT at "
     "a mirror or fill vllm_server_hf_home/hub before the rollout, roll out in smaller batches (rollout_serial), "
     "or re-run later; the host was not restarted"),
    ("unreachable", (r"Connection refused", r"Errno 111", r"Name or service not known",
                     r"Temporary failure in name resolution", r"Max retries exceeded", r"Network is unreachable",
                     r"ConnectError", r"ConnectTimeout", r"timed out", r"Local entry not found",
                     r"LocalEntryNotFoundError", r"couldn't connect to"),
     "make the Hub or the mirror in HF_ENDPOINT (vllm_server_environment) reachable from the host "
     "(DNS, proxy, firewall), or put the model into vllm_server_hf_home/hub before the rollout"),
)
PREFETCH_CAUSES = tuple(cause for cause, _patterns, _fix in _CAUSES) + ("timeout", "no_cli", "unknown")

# The rung cannot start with these: the rollout records the attempt without restarting vLLM.
# A hub that did not answer or a slow link may be better when vLLM tries at its start. A rate limit is not:
# vLLM's own fetch at its start meets the same limit a second later, with the host serving nothing.
DEFINITE_CAUSES = ("offline_not_cached", "no_space", "quota_exceeded", "file_too_large", "gated", "not_found",
                   "rate_limited")

# The disk is the problem, not the model: vLLM's own fetch at its start would fail the same way, with the host
# serving nothing and the disk full under the running baseline. The prefetch says how full and cleans up.
DISK_CAUSES = ("no_space", "quota_exceeded", "file_too_large")

_TIMEOUT_FIX = ("the download did not finish within the prefetch timeout (rollout_prefetch_timeout): vLLM fetches "
                "the rest at its start; raise the timeout or fill the cache before the rollout")
_UNKNOWN_FIX = "run the same `hf download` on the host to see the whole error"

# The CLI prints these around its answer; they are not the error.
_NOISE = (re.compile(r"^Hint: "), re.compile(r"set HF_DEBUG=1"))
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def is_hub_id(model):
    """True for a Hub repository id (owner/name); False for a local path, an empty name or anything else."""
    return isinstance(model, str) and bool(_REPO_ID_RE.match(model)) and ".." not in model


def hub_models(rungs):
    """The distinct Hub ids of the speculative models the ladder's rungs would start, in ladder order.

    Local directories are already on the board, n-gram has no model, and the last rung (off) none.
    """
    seen = []
    for rung in rungs or []:
        model = (rung or {}).get("vllm_server_speculative_model") if isinstance(rung, dict) else None
        if is_hub_id(model) and model not in seen:
            seen.append(model)
    return seen


def cache_repo_dir(hf_home, repo_id):
    """``<hf_home>/hub/models--owner--name``: where huggingface_hub caches a model repository."""
    return "%s/hub/models--%s" % (hf_home.rstrip("/"), repo_id.replace("/", "--"))


def clean_lines(text):
    """The CLI's output without colour codes, hints and empty lines."""
    lines = []
    for line in (text or "").splitlines():
        line = _ANSI.sub("", line).strip()
        if line and not any(pattern.search(line) for pattern in _NOISE):
            lines.append(line)
    return lines


def failure(text, timed_out=False):
    """{cause, line, fix, definite}: why a download failed, the CLI's line that says so, and what fixes it."""
    lines = clean_lines(text)
    if timed_out:
        return {"cause": "timeout", "line": lines[-1] if lines else None, "fix": _TIMEOUT_FIX, "definite": False}
    for cause, patterns, fix in _CAUSES:
        for line in lines:
            if any(re.search(pattern, line, re.IGNORECASE) for pattern in patterns):
                return {"cause": cause, "line": line, "fix": fix, "definite": cause in DEFINITE_CAUSES}
    return {"cause": "unknown", "line": lines[-1] if lines else None, "fix": _UNKNOWN_FIX, "definite": False}


# huggingface_hub's warning before a file it cannot fit (file_download._check_disk_space): the only place the
# CLI says how much it needed. It may be absent (an older CLI, a size the Hub did not send, a disk that
# filled up under a concurrent writer after the check).
_SHORTFALL_RE = re.compile(r"expected file size is: ([0-9.]+) MB\. The target location (.+?) only has ([0-9.]+) MB free")


def disk_shortfall(text):
    """{needed, free, where} (bytes, bytes, directory) from the CLI's "Not enough free disk space" warning, or None.

    The largest file it warned about counts: that is the one the disk could not take."""
    best = None
    for match in _SHORTFALL_RE.finditer(_ANSI.sub("", text or "")):
        needed, free = int(float(match.group(1)) * 1e6), int(float(match.group(3)) * 1e6)
        if best is None or needed > best["needed"]:
            best = {"needed": needed, "free": free, "where": match.group(2)}
    return best


def size_text(num):
    """Bytes as an operator reads them on a board's disk: 1.5 GiB, 312.0 MiB, 48.0 KiB, 12 B."""
    if num is None:
        return "unknown"
    value = float(num)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return "%d B" % num if unit == "B" else "%.1f %s" % (value, unit)
        value /= 1024.0
    return "%.1f GiB" % value


def disk_detail(cause, where, free, shortfall=None, removed=None):
    """The sentence that says where the disk is full, how much was needed and free, and what was cleaned up.

    ``free``: bytes the service account can still write under ``where`` (None when statvfs failed);
    ``shortfall``: disk_shortfall() of the CLI's output; ``removed``: (files, bytes) of partial downloads removed.
    """
    what = {"no_space": "disk full", "quota_exceeded": "disk quota exceeded",
            "file_too_large": "file too large for the filesystem or the file size limit"}[cause]
    parts = ["%s at %s" % (what, where)]
    if shortfall:
        parts.append("a file of %s was needed, %s was free when it started" % (
            size_text(shortfall["needed"]), size_text(shortfall["free"])))
    if free is not None:
        parts.append("%s free now" % size_text(free))
    if removed and removed[0]:
        parts.append("%d partial download%s (%s) removed, nothing half-written is left in the cache" % (
            removed[0], "" if removed[0] == 1 else "s", size_text(removed[1])))
    else:
        parts.append("no partial download was left in the cache")
    return "; ".join(parts)


def snapshot_path(stdout):
    """The snapshot directory the CLI printed last (``hf download -q`` prints only that), or None."""
    for line in reversed(clean_lines(stdout)):
        if line.startswith("/"):
            return line
    return None


def secrets_from_env_file(text, names=("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")):
    """The Hub token lines of the role's secrets file (KEY=VALUE, as systemd's EnvironmentFile reads it).

    Only the token is handed to the CLI, never the API key. The role refuses quotes, white space and
    control characters in these values, so a line is KEY=VALUE verbatim.
    """
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        if key.strip() in names:
            out[key.strip()] = value.strip()
    return out


# Inside the container the cache and the secrets file are where the unit mounts them (launch/argv.py).
CONTAINER_SCRIPT = ('set -a; [ ! -r /run/secrets/vllm.env ] || . /run/secrets/vllm.env; set +a; '
                    'if command -v hf >/dev/null 2>&1; then exec hf download "$@"; fi; '
                    'exec huggingface-cli download "$@"')


def download_argv(opts, repo_id):
    """The command that fetches ``repo_id`` into the cache.

    ``opts``: runtime (native or container), cli (native: the hf or huggingface-cli binary),
    docker_bin, image, hf_home, env_file, environment, container_user.
    """
    if not is_hub_id(repo_id):
        raise ValueError("%r is not a Hub repository id (owner/name)" % (repo_id,))
    if opts.get("runtime") == "container":
        argv = [opts.get("docker_bin") or "/usr/bin/docker", "run", "--rm", "--network", "host",
                "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
        if opts.get("container_user"):
            argv += ["--user", opts["container_user"]]
        for name, value in sorted((opts.get("environment") or {}).items()):
            argv += ["-e", "%s=%s" % (name, value)]
        argv += ["-v", "%s:/huggingface" % opts["hf_home"], "-e", "HF_HOME=/huggingface"]
        if opts.get("env_file"):
            argv += ["-v", "%s:/run/secrets/vllm.env:ro" % opts["env_file"]]
        return argv + ["--entrypoint", "/bin/sh", opts["image"], "-c", CONTAINER_SCRIPT, "hf", "--quiet", "--", repo_id]
    return [opts["cli"], "download", "--quiet", "--", repo_id]
