# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
import json
import os
import struct

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import safetensors as stm
from ansible_collections.jetson.specdec.plugins.module_utils.launch.safetensors import (
    ModelFileError, hf_snapshot_dir, index_total_size, local_model_dir, parse_safetensors_header,
    safetensors_weight_bytes, weight_bytes_in_dir,
)

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def write_safetensors(path, tensors, metadata=None, data=None):
    """Write a real safetensors file: {name: (dtype, shape, nbytes)} laid out back to back."""
    header, offset = {}, 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    if metadata is not None:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)))
        handle.write(raw)
        handle.write(data if data is not None else b"\0" * offset)
    return offset


def test_sum_of_spans(tmp_path):
    path = str(tmp_path / "model.safetensors")
    expected = write_safetensors(path, {"a": ("BF16", [4, 8], 64), "b": ("F32", [3], 12), "c": ("U8", [5], 5)},
                                 metadata={"format": "pt"})
    assert expected == 81
    assert safetensors_weight_bytes(path) == 81


def test_unknown_dtype_is_counted_without_shape_check(tmp_path):
    path = str(tmp_path / "m.safetensors")
    write_safetensors(path, {"packed": ("F4", [16], 8)})
    assert safetensors_weight_bytes(path) == 8


def test_span_must_match_dtype_and_shape(tmp_path):
    path = str(tmp_path / "m.safetensors")
    write_safetensors(path, {"a": ("F16", [4], 7)})
    with pytest.raises(ModelFileError, match="needs 8"):
        safetensors_weight_bytes(path)


def test_truncated_file_is_detected(tmp_path):
    path = str(tmp_path / "m.safetensors")
    write_safetensors(path, {"a": ("F32", [100], 400)}, data=b"\0" * 10)
    with pytest.raises(ModelFileError, match="truncated"):
        safetensors_weight_bytes(path)


def test_absurd_header_length_is_refused_before_reading(tmp_path, monkeypatch):
    path = str(tmp_path / "m.safetensors")
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", 2 ** 62) + b"{}")
    with pytest.raises(ModelFileError, match="exceeds"):
        safetensors_weight_bytes(path)


def test_header_longer_than_file_is_refused(tmp_path):
    path = str(tmp_path / "m.safetensors")
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", 5000) + b"{}")
    with pytest.raises(ModelFileError, match="larger than the file"):
        safetensors_weight_bytes(path)


@pytest.mark.parametrize("payload, match", [
    (b"\xff\xfe", "UTF-8 JSON"), (b"[1, 2]", "JSON object"), (b"{not json", "UTF-8 JSON"),
    (b'{"a": 3}', "not an object"), (b'{"a": {"shape": [1], "data_offsets": [0, 1]}}', "no dtype"),
    (b'{"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}}', "bad shape"),
    (b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [2, 1]}}', "bad data_offsets"),
    (b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, true]}}', "bad data_offsets"),
])
def test_corrupt_headers_raise_model_file_error(payload, match):
    with pytest.raises(ModelFileError, match=match):
        parse_safetensors_header(payload)


def test_short_file(tmp_path):
    path = str(tmp_path / "m.safetensors")
    with open(path, "wb") as handle:
        handle.write(b"\1\2")
    with pytest.raises(ModelFileError, match="shorter"):
        safetensors_weight_bytes(path)


def test_index_total_size(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 16060522496}, "weight_map": {}}))
    assert index_total_size(str(index)) == 16060522496
    index.write_text(json.dumps({"metadata": {"total_size": 123.0}}))
    assert index_total_size(str(index)) == 123
    for bad in ({"metadata": {}}, {"weight_map": {}}, {"metadata": {"total_size": "1"}}, {"metadata": {"total_size": 0}}):
        index.write_text(json.dumps(bad))
        with pytest.raises(ModelFileError, match="total_size"):
            index_total_size(str(index))


def test_weight_bytes_in_dir_prefers_index_then_single_then_shards_then_bin(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    with pytest.raises(ModelFileError, match="no model.safetensors"):
        weight_bytes_in_dir(str(d))
    (d / "pytorch_model.bin").write_bytes(b"\0" * 33)
    assert weight_bytes_in_dir(str(d)) == (33, str(d / "pytorch_model.bin"))
    write_safetensors(str(d / "model-00001-of-00002.safetensors"), {"a": ("U8", [10], 10)})
    write_safetensors(str(d / "model-00002-of-00002.safetensors"), {"b": ("U8", [20], 20)})
    assert weight_bytes_in_dir(str(d))[0] == 30
    write_safetensors(str(d / "model.safetensors"), {"a": ("U8", [7], 7)})
    assert weight_bytes_in_dir(str(d))[0] == 7
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 999}}))
    assert weight_bytes_in_dir(str(d))[0] == 999


def _cache(tmp_path, repo="owner/name", ref_commit=COMMIT, snapshots=(COMMIT,)):
    repo_dir = tmp_path / "hub" / ("models--" + repo.replace("/", "--"))
    for snap in snapshots:
        (repo_dir / "snapshots" / snap).mkdir(parents=True)
    if ref_commit:
        (repo_dir / "refs").mkdir()
        (repo_dir / "refs" / "main").write_text(ref_commit + "\n")
    return repo_dir


def test_hf_snapshot_via_refs_main(tmp_path):
    repo_dir = _cache(tmp_path, snapshots=(COMMIT, "f" * 40))
    assert hf_snapshot_dir(str(tmp_path), "owner/name") == str(repo_dir / "snapshots" / COMMIT)
    assert hf_snapshot_dir(str(tmp_path), "owner/name", "f" * 40) == str(repo_dir / "snapshots" / ("f" * 40))
    assert hf_snapshot_dir(str(tmp_path), "owner/name", "e" * 40) is None


def test_hf_snapshot_single_without_ref_and_ambiguous(tmp_path):
    repo_dir = _cache(tmp_path, ref_commit=None)
    assert hf_snapshot_dir(str(tmp_path), "owner/name") == str(repo_dir / "snapshots" / COMMIT)
    (repo_dir / "snapshots" / ("a" * 40)).mkdir()
    assert hf_snapshot_dir(str(tmp_path), "owner/name") is None


def test_hf_snapshot_absent_and_refs_not_a_path(tmp_path):
    assert hf_snapshot_dir(str(tmp_path), "no/such") is None
    _cache(tmp_path, ref_commit="../../../../etc")
    # A bad ref is ignored; the single snapshot is used instead.
    assert hf_snapshot_dir(str(tmp_path), "owner/name").endswith(COMMIT)


def test_local_model_dir(tmp_path):
    assert local_model_dir(str(tmp_path), None) == str(tmp_path)
    assert local_model_dir(str(tmp_path / "missing"), None) is None
    assert local_model_dir("owner/name", None) is None
    _cache(tmp_path)
    assert local_model_dir("owner/name", str(tmp_path)).endswith(COMMIT)


def test_json_size_limit(tmp_path, monkeypatch):
    big = tmp_path / "config.json"
    big.write_text(json.dumps({"pad": "x" * 100}))
    monkeypatch.setattr(stm, "MAX_JSON_BYTES", 10)
    with pytest.raises(ModelFileError, match="larger than"):
        stm.read_json_file(str(big), "config.json")
    assert not os.path.exists(str(tmp_path / "nothing.json"))
    with pytest.raises(ModelFileError, match="cannot read"):
        stm.read_json_file(str(tmp_path / "nothing.json"), "config.json")
