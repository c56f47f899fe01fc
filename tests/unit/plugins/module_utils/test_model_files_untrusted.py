"""Issue 34 (high 1, the FIFO/link class): model files in the service account's cache, read by root tasks.

spec_headroom (the memory check), vllm_prefetch (is the snapshot complete) and vllm_host_info (the local
config.json) read files the service account can replace. A FIFO must not hang them, a link out of the
model's directory must not be followed, anything but a regular file is not read. A real HF cache
(snapshot files linking to ../../blobs/) is still read.
"""
import json
import os
import signal
import struct

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import memory
from ansible_collections.jetson.specdec.plugins.module_utils.launch.safetensors import (
    ModelFileError,
    hf_snapshot_dir,
    model_root,
    read_json_file,
    safetensors_weight_bytes,
    weight_bytes_in_dir,
)
from ansible_collections.jetson.specdec.plugins.modules import vllm_prefetch

COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "acme/draft"


@pytest.fixture(autouse=True)
def no_hang():
    """A read that blocks (the bug) fails the test after 10 s instead of hanging the run."""
    def alarm(signum, frame):
        raise AssertionError("blocked on a model file")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _safetensors_bytes(nbytes=64):
    header = json.dumps({"w": {"dtype": "U8", "shape": [nbytes], "data_offsets": [0, nbytes]}}).encode()
    return struct.pack("<Q", len(header)) + header + b"\0" * nbytes


def _cache(tmp_path):
    """An HF cache as huggingface_hub writes it: refs/main, blobs/<hash>, snapshot files linking to the blobs."""
    hf_home = tmp_path / "hf"
    repo = hf_home / "hub" / ("models--" + REPO.replace("/", "--"))
    snap = repo / "snapshots" / COMMIT
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    snap.mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    (repo / "blobs" / "aaa").write_bytes(_safetensors_bytes())
    (repo / "blobs" / "bbb").write_text(json.dumps({"model_type": "llama", "vocab_size": 32000}))
    os.symlink("../../blobs/aaa", str(snap / "model.safetensors"))
    os.symlink("../../blobs/bbb", str(snap / "config.json"))
    return hf_home, repo, snap


def test_a_real_cache_with_links_into_its_blobs_is_read(tmp_path):
    hf_home, repo, snap = _cache(tmp_path)
    assert model_root(str(snap / "config.json")) == str(repo)
    assert hf_snapshot_dir(str(hf_home), REPO) == str(snap)
    assert weight_bytes_in_dir(str(snap)) == (64, str(snap / "model.safetensors"))
    assert read_json_file(str(snap / "config.json"), "config.json")["vocab_size"] == 32000
    assert vllm_prefetch.complete_snapshot(str(hf_home), REPO) == str(snap)


def _plant(tmp_path, snap, name, kind):
    """Replace snapshot file `name` with what the service account could put there."""
    target = snap / name
    os.unlink(str(target))
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    if kind == "fifo":
        os.mkfifo(str(target))
    elif kind == "link_to_fifo":
        os.mkfifo(str(snap / "fifo"))
        os.symlink("fifo", str(target))
    elif kind == "link_to_fifo_outside":
        os.mkfifo(str(outside / "fifo"))
        os.symlink(str(outside / "fifo"), str(target))
    elif kind == "link_outside_the_cache":
        # a well-formed file, but not the cache's: a root task must not read it for the account
        (outside / name).write_bytes(_safetensors_bytes() if name.endswith(".safetensors") else b'{"a": 1}')
        os.symlink(str(outside / name), str(target))
    elif kind == "relative_link_climbing_out":
        (outside / name).write_bytes(b'{"a": 1}')
        os.symlink("../../../../../../outside/" + name, str(target))
    elif kind == "link_to_etc_passwd":
        os.symlink("/etc/passwd", str(target))
    elif kind == "link_to_a_device":
        os.symlink("/dev/zero", str(target))
    elif kind == "directory":
        target.mkdir()
    return target


KINDS = ["fifo", "link_to_fifo", "link_to_fifo_outside", "link_outside_the_cache", "relative_link_climbing_out",
         "link_to_etc_passwd", "link_to_a_device", "directory"]
EXPECTED = {"fifo": "not a regular file", "link_to_fifo": "not a regular file", "directory": "not a regular file",
            "link_to_fifo_outside": "outside the model's directory", "link_to_a_device": "outside the model's directory",
            "link_outside_the_cache": "outside the model's directory",
            "relative_link_climbing_out": "outside the model's directory",
            "link_to_etc_passwd": "outside the model's directory"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_weights_file_is_refused_without_blocking(tmp_path, kind):
    hf_home, repo, snap = _cache(tmp_path)
    target = _plant(tmp_path, snap, "model.safetensors", kind)
    with pytest.raises(ModelFileError) as info:
        safetensors_weight_bytes(str(target))
    assert EXPECTED[kind] in str(info.value)
    with pytest.raises(ModelFileError):
        weight_bytes_in_dir(str(snap))
    # vllm_prefetch: the snapshot is not complete (it would be fetched again), no hang
    assert vllm_prefetch.complete_snapshot(str(hf_home), REPO) is None


@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_config_json_is_refused_without_blocking(tmp_path, kind):
    hf_home, repo, snap = _cache(tmp_path)
    target = _plant(tmp_path, snap, "config.json", kind)
    with pytest.raises(ModelFileError) as info:
        read_json_file(str(target), "config.json")
    assert EXPECTED[kind] in str(info.value)


@pytest.mark.parametrize("kind", ["fifo", "link_to_fifo", "link_to_etc_passwd"])
def test_spec_headroom_facts_fall_back_to_the_catalog_with_the_reason(tmp_path, kind):
    hf_home, repo, snap = _cache(tmp_path)
    _plant(tmp_path, snap, "model.safetensors", kind)
    _plant(tmp_path, snap, "config.json", kind if kind != "link_to_fifo" else "fifo")
    catalog = {REPO: {"weight_bytes": 1000, "kv_bytes_per_token": 2048}}
    facts = memory.gather_model_facts(REPO, str(hf_home), catalog, what="draft")
    assert facts["weight_source"] == "catalog" and facts["kv_source"] == "catalog"
    assert len(facts["warnings"]) == 2
    assert all(EXPECTED[kind] in w or "not a regular file" in w for w in facts["warnings"])


@pytest.mark.parametrize("kind", ["fifo", "link_outside"])
def test_a_planted_ref_does_not_block_the_snapshot_lookup(tmp_path, kind):
    hf_home, repo, snap = _cache(tmp_path)
    ref = repo / "refs" / "main"
    os.unlink(str(ref))
    if kind == "fifo":
        os.mkfifo(str(ref))
    else:
        (tmp_path / "commit").write_text(COMMIT)
        os.symlink(str(tmp_path / "commit"), str(ref))
    # the ref is not read; the single cached snapshot is used, as without a ref
    assert hf_snapshot_dir(str(hf_home), REPO) == str(snap)
