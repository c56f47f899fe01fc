# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Read model sizes and shapes from local files, without loading weights or downloading.

Standard library only, Python 3.8+.

- ``*.safetensors``: 8 bytes little-endian u64 = header length N, then N bytes of
  JSON {tensor: {dtype, shape, data_offsets: [start, end]}, "__metadata__": {...}};
  offsets are relative to the first byte after the header.  Weight bytes = the sum
  of the tensor byte spans.  Every number is checked before use, and the header
  length is bounded, so a damaged or hostile file raises ``ModelFileError`` and
  never makes us read gigabytes.
- ``model.safetensors.index.json`` (sharded checkpoints): ``metadata.total_size``.
- ``config.json``: the Hugging Face model config (shapes for the KV cache).
- Hugging Face hub cache layout: ``<hf_home>/hub/models--owner--name/`` with
  ``refs/<branch>`` holding a commit and ``snapshots/<commit>/`` holding the files.

The cache belongs to the service account and these readers run as root, so every file is
opened through ``open_model_file``: a link is followed only when it stays inside the model's
own directory (the HF cache's snapshot files are links to ``../../blobs/``), the open never
blocks (``O_NONBLOCK``: a FIFO named ``model.safetensors`` cannot hang the task) and only a
regular file is read (a FIFO, a device or a directory is refused with ``ModelFileError``).
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re
import stat
import struct

# The safetensors reference implementation refuses headers above 100 MB; real
# headers are a few MB at most, so anything larger is treated as corruption.
MAX_HEADER_BYTES = 100 * 1000 * 1000
# config.json / index.json are small text files; refuse to parse anything huge.
MAX_JSON_BYTES = 50 * 1000 * 1000

# Bytes per element for the safetensors dtypes; unknown dtypes skip the span check.
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
    "U32": 4, "I32": 4, "F32": 4,
    "U64": 8, "I64": 8, "F64": 8,
}
_COMMIT_RE = re.compile(r"\A[0-9a-f]{40}\Z")
_REF_NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


class ModelFileError(ValueError):
    """A model file is missing, unreadable or malformed (message says which and why)."""


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_safetensors_header(header_bytes, data_size=None, source="safetensors header"):
    """Parse header JSON bytes; return the sum of tensor byte spans.

    ``data_size`` (file size minus 8 minus header length), when given, bounds every span.
    """
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ModelFileError("%s: header is not valid UTF-8 JSON (%s)" % (source, exc))
    if not isinstance(header, dict):
        raise ModelFileError("%s: header must be a JSON object" % source)
    total = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise ModelFileError("%s: tensor %r entry is not an object" % (source, name))
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype, str):
            raise ModelFileError("%s: tensor %r has no dtype" % (source, name))
        if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
            raise ModelFileError("%s: tensor %r has a bad shape %r" % (source, name, shape))
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_count(o) for o in offsets)
                or offsets[0] > offsets[1]):
            raise ModelFileError("%s: tensor %r has bad data_offsets %r" % (source, name, offsets))
        span = offsets[1] - offsets[0]
        if data_size is not None and offsets[1] > data_size:
            raise ModelFileError("%s: tensor %r ends at byte %d but the file holds only %d data bytes "
                                 "(truncated download?)" % (source, name, offsets[1], data_size))
        if dtype in DTYPE_BYTES:
            numel = 1
            for dim in shape:
                numel *= dim
            if numel * DTYPE_BYTES[dtype] != span:
                raise ModelFileError("%s: tensor %r spans %d bytes but %s%r needs %d"
                                     % (source, name, span, dtype, shape, numel * DTYPE_BYTES[dtype]))
        total += span
    return total


def model_root(path):
    """The directory a model file's links may point into: the HF cache repo dir
    (``.../models--owner--name``, whose ``snapshots/<commit>/`` files link to ``../../blobs/``), else
    the file's own directory (a local model directory)."""
    parts = os.path.normpath(path).split("/")
    for index in range(len(parts) - 3, 0, -1):
        if parts[index].startswith("models--") and parts[index + 1] in ("snapshots", "refs"):
            return "/".join(parts[:index + 1])
    return os.path.dirname(path)


def open_model_file(path, root=None):
    """(binary file object, size) of the regular file at ``path``; never blocks, never leaves ``root``.

    Raises ModelFileError for a link that resolves outside ``root`` (``model_root(path)`` by default),
    for anything but a regular file (FIFO, socket, device, directory) and for a file that cannot be opened.
    """
    root = model_root(path) if root is None else root
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
        raise ModelFileError("%s: resolves to %s, outside the model's directory %s: not read (a link out of the "
                             "cache is refused; it could make a root task read another file)" % (path, real, root))
    try:
        # O_NOFOLLOW on the resolved path: a link put there since realpath() is not followed either.
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except (IOError, OSError) as exc:
        raise ModelFileError("%s: cannot read (%s)" % (path, exc))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ModelFileError("%s: is not a regular file (a FIFO, socket, device or directory): not read" % path)
    return os.fdopen(fd, "rb"), st.st_size


def safetensors_weight_bytes(path):
    """Sum of tensor byte spans of one .safetensors file, reading only its header."""
    try:
        handle, file_size = open_model_file(path)
        with handle:
            prefix = handle.read(8)
            if len(prefix) != 8:
                raise ModelFileError("%s: shorter than the 8-byte header length" % path)
            (header_len,) = struct.unpack("<Q", prefix)
            # Refuse before reading: a corrupt length must not make us read gigabytes.
            if header_len > MAX_HEADER_BYTES:
                raise ModelFileError("%s: header length %d exceeds the %d-byte limit (corrupt file?)"
                                     % (path, header_len, MAX_HEADER_BYTES))
            if header_len > file_size - 8:
                raise ModelFileError("%s: header length %d is larger than the file (%d bytes)"
                                     % (path, header_len, file_size))
            header_bytes = handle.read(header_len)
    except (IOError, OSError) as exc:
        raise ModelFileError("%s: cannot read (%s)" % (path, exc))
    return parse_safetensors_header(header_bytes, file_size - 8 - header_len, path)


def read_json_file(path, what):
    """Load a small JSON file; raise ModelFileError when absent, too large or malformed."""
    try:
        handle, size = open_model_file(path)
        with handle:
            if size > MAX_JSON_BYTES:
                raise ModelFileError("%s: %s is larger than %d bytes" % (path, what, MAX_JSON_BYTES))
            data = json.loads(handle.read(MAX_JSON_BYTES + 1).decode("utf-8"))
    except (IOError, OSError) as exc:
        raise ModelFileError("%s: cannot read %s (%s)" % (path, what, exc))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ModelFileError("%s: %s is not valid JSON (%s)" % (path, what, exc))
    if not isinstance(data, dict):
        raise ModelFileError("%s: %s must be a JSON object" % (path, what))
    return data


def index_total_size(path):
    """``metadata.total_size`` of a model.safetensors.index.json."""
    data = read_json_file(path, "safetensors index")
    meta = data.get("metadata")
    total = meta.get("total_size") if isinstance(meta, dict) else None
    # Some exporters write the number as a float (e.g. 16060522496.0).
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    if not _is_count(total) or total == 0:
        raise ModelFileError("%s: metadata.total_size is missing or not a positive integer" % path)
    return total


def weight_bytes_in_dir(model_dir):
    """Return (bytes, source) for the weights in ``model_dir``; raise ModelFileError if none are usable."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.isfile(index):
        return index_total_size(index), index
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.isfile(single):
        return safetensors_weight_bytes(single), single
    shards = sorted(n for n in os.listdir(model_dir) if n.endswith(".safetensors"))
    if shards:
        return sum(safetensors_weight_bytes(os.path.join(model_dir, n)) for n in shards), \
            os.path.join(model_dir, "*.safetensors")
    # Pickle checkpoints (e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B ships pytorch_model.bin):
    # never unpickle; the file size is a close upper bound of the tensor bytes.
    binary = os.path.join(model_dir, "pytorch_model.bin")
    if os.path.isfile(binary):
        handle, size = open_model_file(binary)
        handle.close()
        return size, binary
    raise ModelFileError("%s: no model.safetensors(.index.json), *.safetensors or pytorch_model.bin" % model_dir)


def hf_cache_repo_dir(hf_home, repo_id):
    """``<hf_home>/hub/models--owner--name`` for an HF repo id."""
    return os.path.join(hf_home, "hub", "models--" + repo_id.replace("/", "--"))


def hf_snapshot_dir(hf_home, repo_id, revision=None):
    """Return the cached snapshot directory of ``repo_id`` or None when it is not cached.

    ``revision`` may be a 40-hex commit or a branch/tag name (default ``main``).
    With no matching ref, a single cached snapshot is used; several are ambiguous.
    """
    repo_dir = hf_cache_repo_dir(hf_home, repo_id)
    snapshots = os.path.join(repo_dir, "snapshots")
    if not os.path.isdir(snapshots):
        return None
    rev = revision or "main"
    if _COMMIT_RE.match(rev):
        candidate = os.path.join(snapshots, rev)
        return candidate if os.path.isdir(candidate) else None
    if _REF_NAME_RE.match(rev):
        ref_file = os.path.join(repo_dir, "refs", rev)
        try:
            handle, dummy = open_model_file(ref_file, repo_dir)
            with handle:
                commit = handle.read(64).decode("ascii", "replace").strip()
        except (IOError, OSError, ModelFileError):
            commit = None
        if commit and _COMMIT_RE.match(commit) and os.path.isdir(os.path.join(snapshots, commit)):
            return os.path.join(snapshots, commit)
    entries = [n for n in os.listdir(snapshots) if os.path.isdir(os.path.join(snapshots, n))]
    if len(entries) == 1:
        return os.path.join(snapshots, entries[0])
    return None


def local_model_dir(model_ref, hf_home):
    """Directory holding ``model_ref``'s files: the path itself, or its HF cache snapshot (or None)."""
    if model_ref.startswith("/"):
        return model_ref if os.path.isdir(model_ref) else None
    if not hf_home:
        return None
    return hf_snapshot_dir(hf_home, model_ref)
