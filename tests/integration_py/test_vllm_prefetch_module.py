# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""jetson.specdec.vllm_prefetch with the real Hugging Face CLI (`hf`, huggingface_hub 2.x) against a loopback mirror.

Issue 19 (fetch the draft or head while the baseline serves) and issue 18 (a model download failing).
The mirror speaks the Hub's HTTP API as far as `hf download` uses it (revision info, file tree, resolve,
and the X-Error-Code header that huggingface_hub turns into RepositoryNotFoundError / GatedRepoError),
so the CLI writes its real cache layout and prints its own errors. The operator's HF_ENDPOINT is how a
fleet points boards at a mirror: here it is the only way the CLI reaches anything.
"""
import hashlib
import json
import os
import pwd
import resource
import shutil
import struct
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.jetson.specdec.plugins.modules import vllm_prefetch
from ansible_collections.jetson.specdec.tests.integration_py import private_tmpfs
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

HF = os.path.join(os.path.dirname(sys.executable), "hf")
SIMULATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "simulator")
COMMIT = "0d6c9d0e5f1e4d8b8d2c1f0e9a8b7c6d5e4f3a2b"
TOKEN = "hf_loopbacktesttoken"
pytestmark = pytest.mark.skipif(not os.path.isfile(HF), reason="needs huggingface_hub's hf CLI in the venv (requirements.txt)")


def _safetensors(num):
    header = json.dumps({"w": {"dtype": "F16", "shape": [num], "data_offsets": [0, 2 * num]}}).encode()
    return struct.pack("<Q", len(header)) + header + b"\0" * (2 * num)


REPOS = {
    "acme/tiny-draft": {"config.json": b'{"model_type": "llama", "num_hidden_layers": 1}', "model.safetensors": _safetensors(64)},
    "acme/gated-draft": {"config.json": b'{"model_type": "llama"}', "model.safetensors": _safetensors(8)},
}
# A sharded draft whose second shard (1 MiB) does not fit on the small disks of the disk-full tests, while its
# config, index and first shard do: a download cut short leaves a snapshot that looks usable at first sight.
SHARDS = {"model-00001-of-00002.safetensors": _safetensors(1024), "model-00002-of-00002.safetensors": _safetensors(512 * 1024)}
REPOS["acme/sharded-draft"] = dict(SHARDS, **{
    "config.json": b'{"model_type": "llama", "num_hidden_layers": 2}',
    "model.safetensors.index.json": json.dumps({
        "metadata": {"total_size": 2 * (1024 + 512 * 1024)},
        "weight_map": {"layers.0.w": "model-00001-of-00002.safetensors", "layers.1.w": "model-00002-of-00002.safetensors"},
    }).encode()})


class _Mirror(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requests = []
    stall = threading.Event()

    def log_message(self, *args):
        pass

    def _send(self, code, body=b"", headers=()):
        self.send_response(code)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        _Mirror.requests.append((path, self.headers.get("Authorization")))
        if "/stalled-draft" in path:
            time.sleep(30)
        if "/busy-draft" in path:  # a Hub at its rate limit, as it answers a fleet fetching at once
            return self._send(429, b'{"error": "Too Many Requests"}', [("Retry-After", "1")])
        for repo, files in REPOS.items():
            if ("/api/models/%s/" % repo) in path or path.startswith("/%s/resolve/" % repo):
                break
        else:
            return self._send(404, b'{"error": "Repository not found"}',
                              [("X-Error-Code", "RepoNotFound"), ("X-Error-Message", "Repository not found")])
        if repo == "acme/gated-draft" and self.headers.get("Authorization") != "Bearer %s" % TOKEN:
            return self._send(401, b'{"error": "gated"}', [
                ("X-Error-Code", "GatedRepo"),
                ("X-Error-Message", "Access to model %s is restricted and you are not in the authorized list." % repo)])
        if "/revision/" in path:
            body = {"id": repo, "sha": COMMIT, "siblings": [{"rfilename": name} for name in sorted(files)]}
            return self._send(200, json.dumps(body).encode(), [("Content-Type", "application/json")])
        if "/tree/" in path:
            body = [{"type": "file", "path": name, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}
                    for name, data in sorted(files.items())]
            return self._send(200, json.dumps(body).encode(), [("Content-Type", "application/json")])
        name = path.split("/resolve/", 1)[1].split("/", 1)[1]
        data = files[name]
        self._send(200, data, [("X-Repo-Commit", COMMIT), ("ETag", '"%s"' % hashlib.sha1(data).hexdigest())])

    do_HEAD = do_GET


@pytest.fixture(scope="module")
def mirror():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Mirror)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()


@pytest.fixture
def hf_home(tmp_path):
    path = tmp_path / "huggingface"
    path.mkdir()
    return str(path)


def prefetch(hf_home, models, endpoint, **extra):
    args = dict(models=models, hf_home=hf_home, cli=HF, user="root", timeout=60,
                environment=dict({"HF_ENDPOINT": endpoint}, **extra.pop("environment", {})))
    args.update(extra)
    return run_module(vllm_prefetch.main, args)


def test_a_draft_is_fetched_into_the_cache_vllm_reads_and_not_fetched_twice(mirror, hf_home):
    failed, result = prefetch(hf_home, ["acme/tiny-draft"], mirror)
    assert not failed and result["changed"], result
    entry = result["models"][0]
    assert entry["status"] == "fetched", entry
    snapshot = os.path.join(hf_home, "hub", "models--acme--tiny-draft", "snapshots", COMMIT)
    assert entry["path"] == snapshot
    assert os.path.isfile(os.path.join(snapshot, "model.safetensors"))
    with open(os.path.join(hf_home, "hub", "models--acme--tiny-draft", "refs", "main")) as handle:
        assert handle.read().strip() == COMMIT
    # A converged host: the cache answers, the CLI does not start and nothing reaches the mirror.
    before = len(_Mirror.requests)
    failed, result = prefetch(hf_home, ["acme/tiny-draft"], mirror)
    assert not failed and not result["changed"] and result["models"][0]["status"] == "cached", result
    assert len(_Mirror.requests) == before


def test_a_repository_the_hub_does_not_have_is_unavailable_with_the_clis_words(mirror, hf_home):
    failed, result = prefetch(hf_home, ["acme/no-such-draft"], mirror, fail_on_unavailable=False)
    assert not failed, result
    entry = result["models"][0]
    assert (entry["status"], entry["cause"], entry["definite"]) == ("failed", "not_found", True), entry
    assert "Model 'acme/no-such-draft' not found" in entry["line"]
    assert "vllm_server_speculative_model" in entry["fix"]
    assert "not found" in result["unavailable"]["acme/no-such-draft"]
    # the default fails the task (vllm_server's deploy path), naming the model and the fix
    failed, result = prefetch(hf_home, ["acme/no-such-draft"], mirror)
    assert failed and "acme/no-such-draft was not fetched (not_found)" in result["msg"], result


def test_a_gated_model_names_the_token_and_the_token_from_the_secrets_file_opens_it(mirror, hf_home, tmp_path):
    failed, result = prefetch(hf_home, ["acme/gated-draft"], mirror, fail_on_unavailable=False)
    entry = result["models"][0]
    assert (entry["cause"], entry["definite"]) == ("gated", True), entry
    assert "requires approval" in entry["line"] and "vllm_server_hf_token" in entry["fix"]
    # The role's secrets file (KEY=VALUE, 0600): only its token reaches the CLI, through the environment.
    env_file = tmp_path / "vllm.env"
    env_file.write_text("VLLM_API_KEY=not-for-the-hub\nHF_TOKEN=%s\n" % TOKEN)
    env_file.chmod(0o600)
    _Mirror.requests[:] = []
    failed, result = prefetch(hf_home, ["acme/gated-draft"], mirror, env_file=str(env_file))
    assert not failed and result["models"][0]["status"] == "fetched", result
    assert {auth for path, auth in _Mirror.requests if "gated-draft" in path} == {"Bearer %s" % TOKEN}


def test_a_mirror_nobody_answers_leaves_the_fetch_to_vllm(hf_home):
    failed, result = prefetch(hf_home, ["acme/tiny-draft"], "http://127.0.0.1:1")
    assert not failed, result  # not definite: the task does not fail even by default
    entry = result["models"][0]
    assert (entry["cause"], entry["definite"]) == ("unreachable", False), entry
    assert result["unavailable"] == {}
    assert "HF_ENDPOINT" in entry["fix"]


def test_offline_with_the_model_not_cached_is_unavailable(mirror, hf_home):
    failed, result = prefetch(hf_home, ["acme/tiny-draft"], mirror, fail_on_unavailable=False,
                              environment={"HF_HUB_OFFLINE": "1"})
    entry = result["models"][0]
    assert (entry["cause"], entry["definite"]) == ("offline_not_cached", True), entry
    assert "offline mode is enabled" in entry["line"]
    assert not os.path.isdir(os.path.join(hf_home, "hub", "models--acme--tiny-draft", "snapshots"))


def test_a_hub_at_its_rate_limit_fails_the_rung_without_a_restart_and_names_the_fixes(mirror, hf_home):
    failed, result = prefetch(hf_home, ["acme/busy-draft"], mirror, fail_on_unavailable=False)
    entry = result["models"][0]
    assert (entry["cause"], entry["definite"]) == ("rate_limited", True), entry
    assert "429 Too Many Requests" in entry["line"]  # the CLI's own words
    assert "acme/busy-draft" in result["unavailable"] and "vllm_server_hf_token" in entry["fix"]
    assert not os.path.isdir(os.path.join(hf_home, "hub", "models--acme--busy-draft", "snapshots"))


def test_a_download_that_does_not_finish_is_stopped(mirror, hf_home):
    started = time.time()
    failed, result = prefetch(hf_home, ["acme/stalled-draft"], mirror, timeout=3)
    assert time.time() - started < 20
    entry = result["models"][0]
    assert not failed and (entry["cause"], entry["definite"]) == ("timeout", False), entry
    assert "rollout_prefetch_timeout" in entry["fix"]


def test_check_mode_says_what_it_would_fetch_and_fetches_nothing(mirror, hf_home):
    before = len(_Mirror.requests)
    failed, result = prefetch(hf_home, ["acme/tiny-draft"], mirror, _ansible_check_mode=True)
    assert not failed and result["changed"] and result["models"][0]["status"] == "would_fetch", result
    assert os.listdir(hf_home) == [] and len(_Mirror.requests) == before


@pytest.mark.parametrize("model", ["../etc", "-x/y", "/opt/models/draft", "acme/draft;id", "acme/draft name",
                                   "acme/../../etc", "acme"])
def test_what_is_not_a_hub_id_is_refused_before_any_fetch(mirror, hf_home, model):
    before = len(_Mirror.requests)
    failed, result = prefetch(hf_home, [model], mirror)
    assert failed and "is not a Hugging Face repository id" in result["msg"], result
    assert len(_Mirror.requests) == before and os.listdir(hf_home) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another account needs root")
def test_the_cli_runs_as_the_service_account():
    # The simulator's hf stand-in (the test bed's boards use it), where another account may run it
    # (pytest's own temporary directories are private to root).
    base = tempfile.mkdtemp(prefix="specdec-prefetch-")
    try:
        _run_as_nobody(base)
    finally:
        shutil.rmtree(base)


def _run_as_nobody(base):
    os.chmod(base, 0o755)
    sim = os.path.join(base, "sim")
    shutil.copytree(SIMULATOR, sim, ignore=shutil.ignore_patterns("__pycache__", "tests"))
    for root, dirs, files in os.walk(sim):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
        for name in files:
            path = os.path.join(root, name)
            os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)
    profile = os.path.join(sim, "profiles", "thor_t5000.json")
    nobody = pwd.getpwnam("nobody")
    hf_home = os.path.join(base, "huggingface")
    os.mkdir(hf_home)
    os.chown(hf_home, nobody.pw_uid, nobody.pw_gid)
    model = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    failed, result = prefetch(hf_home, [model], "http://127.0.0.1:1", user="nobody", cli=os.path.join(sim, "bin", "hf"),
                              environment={"JETSON_SIM_PROFILE": profile})
    assert not failed and result["models"][0]["status"] == "fetched", result
    written = [os.path.join(root, name) for root, dirs, files in os.walk(os.path.join(hf_home, "hub"))
               for name in dirs + files]
    assert written and all(os.lstat(path).st_uid == nobody.pw_uid for path in written), written
    # the snapshot the simulated Hub wrote counts as cached: a converged board runs no CLI (molecule idempotence)
    failed, again = prefetch(hf_home, [model], "http://127.0.0.1:1", user="nobody", cli=os.path.join(sim, "bin", "hf"),
                             environment={"JETSON_SIM_PROFILE": profile})
    assert not failed and again["models"][0]["status"] == "cached" and not again["changed"], again


def test_without_a_cli_the_model_is_left_to_vllm(mirror, hf_home, tmp_path):
    failed, result = prefetch(hf_home, ["acme/tiny-draft"], mirror, cli=str(tmp_path / "bin" / "hf"))
    entry = result["models"][0]
    assert not failed and (entry["status"], entry["cause"]) == ("no_cli", "no_cli"), result
    assert "huggingface_hub" in entry["fix"] and not result["changed"]


# ---------------------------------------------------------------------------------------------------------
# The disk filling up during the download (issue 34). The errors are the kernel's, met by the real CLI in its
# own write path: ENOSPC from a small tmpfs (private_tmpfs.py: a mount namespace of one process), EFBIG from
# RLIMIT_FSIZE (what a FAT32 card's 4 GiB limit or a `ulimit -f` gives), no privileges needed for the latter.
# ---------------------------------------------------------------------------------------------------------

SHARDED = "acme/sharded-draft"
BLOBS = "hub/models--acme--sharded-draft/blobs"
STALE = BLOBS + "/0123456789abcdef0123456789abcdef01234567.incomplete"  # a killed or older CLI's leftover


def _weights_in_snapshot(files):
    return sorted(name.rsplit("/", 1)[1] for name in files if "/snapshots/" in name and name.endswith(".safetensors"))


def test_a_disk_that_fills_up_mid_download_fails_the_rung_naming_the_disk_and_leaves_nothing_half_written(mirror, tmp_path):
    why = private_tmpfs.available()
    if why:
        pytest.skip(why)
    hf_home = tmp_path / "huggingface"
    hf_home.mkdir()
    args = dict(models=[SHARDED], hf_home=str(hf_home), cli=HF, user="root", timeout=120,
                environment={"HF_ENDPOINT": mirror}, fail_on_unavailable=False)
    # 256 KiB: the config, the index and the first shard fit; the 1 MiB second shard does not.
    answer = private_tmpfs.run({"mount": str(hf_home), "size": 256 * 1024, "plant": {STALE: 64 * 1024},
                                "module": "vllm_prefetch",
                                "runs": [args, dict(args, fail_on_unavailable=True), dict(args, _ansible_check_mode=True)]},
                               env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    (failed, result), (failed_default, result_default), (dummy, check) = answer["runs"]
    entry = result["models"][0]
    # The rollout's call (fail_on_unavailable false): a definite cause, so the rung fails without a restart.
    assert not failed and (entry["status"], entry["cause"], entry["definite"]) == ("failed", "no_space", True), entry
    assert "No space left on device" in entry["line"] or "Errno 28" in entry["line"], entry  # the CLI's own words
    said = result["unavailable"][SHARDED]
    # where, how much, what was cleaned up, and the fix
    assert "disk full at %s" % hf_home in said, said
    assert entry["free_bytes"] is not None and entry["free_bytes"] < 256 * 1024, entry
    assert "free now" in said and "vllm_server_hf_home" in entry["fix"] and "larger disk" in entry["fix"], said
    if entry["needed_bytes"] is not None:  # huggingface_hub's own warning, when it could check before writing
        assert entry["needed_bytes"] >= 1024 * 1024 and "was needed" in said, said
    # The stale partial file is gone with whatever the CLI left: no *.incomplete, the space handed back.
    assert entry["removed_partial"][0] >= 1 and entry["removed_partial"][1] >= 64 * 1024, entry
    assert not [name for name in answer["files"] if name.endswith(".incomplete")], answer["files"]
    assert "model-00002-of-00002.safetensors" not in _weights_in_snapshot(answer["files"]), answer["files"]
    # vllm_server's deploy (the default): the task fails with that sentence.
    assert failed_default and "was not fetched (no_space): disk full at" in result_default["msg"], result_default
    # A later run does not take the cut-short snapshot (index, config and perhaps the first shard) for a cached model.
    assert check["models"][0]["status"] == "would_fetch", check


def _cli_with_a_file_size_limit(tmp_path, limit):
    """The real hf under RLIMIT_FSIZE: a write past ``limit`` bytes fails with EFBIG (SIGXFSZ ignored, as the
    default action would kill the CLI before it could say anything)."""
    wrapper = tmp_path / "bin" / "hf"
    wrapper.parent.mkdir()
    wrapper.write_text("#!%s\nimport os, resource, signal, sys\n"
                       "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                       "resource.setrlimit(resource.RLIMIT_FSIZE, (%d, %d))\n"
                       "os.execv(%r, [%r] + sys.argv[1:])\n" % (sys.executable, limit, limit, HF, HF))
    wrapper.chmod(0o755)
    return str(wrapper)


def test_a_file_larger_than_the_filesystem_takes_fails_the_rung_as_file_too_large(mirror, hf_home, tmp_path):
    cli = _cli_with_a_file_size_limit(tmp_path, 128 * 1024)
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == resource.RLIM_INFINITY  # only the CLI is limited
    failed, result = prefetch(hf_home, [SHARDED], mirror, cli=cli, fail_on_unavailable=False)
    entry = result["models"][0]
    assert not failed and (entry["cause"], entry["definite"]) == ("file_too_large", True), entry
    assert "File too large" in entry["line"] or "Errno 27" in entry["line"], entry
    said = result["unavailable"][SHARDED]
    assert "file too large for the filesystem or the file size limit at %s" % hf_home in said, said
    assert "FAT32" in entry["fix"] and "LimitFSIZE" in entry["fix"], entry
    left = [os.path.join(root, name) for root, dirs, files in os.walk(hf_home) for name in files]
    assert not [name for name in left if name.endswith(".incomplete")], left
    failed, check = prefetch(hf_home, [SHARDED], mirror, cli=cli, _ansible_check_mode=True)
    assert check["models"][0]["status"] == "would_fetch", check


def test_the_clean_up_after_a_full_disk_follows_no_link_the_service_account_planted(tmp_path):
    # The cache belongs to the service account and the clean-up runs as root: blobs/ made a link to another
    # directory must not make it remove that directory's files (issue 34's class of planted links).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.incomplete").write_bytes(b"x" * 10)
    repo = tmp_path / "huggingface" / "hub" / "models--acme--sharded-draft"
    repo.mkdir(parents=True)
    os.symlink(str(elsewhere), str(repo / "blobs"))
    assert vllm_prefetch.remove_partial_downloads(str(tmp_path / "huggingface"), SHARDED) == (0, 0)
    assert (elsewhere / "keep.incomplete").exists()
    # a real blobs directory: partial files go, a link named like one and finished blobs stay
    os.unlink(str(repo / "blobs"))
    (repo / "blobs").mkdir()
    (repo / "blobs" / "aa.1f2e3d4c.incomplete").write_bytes(b"x" * 100)
    (repo / "blobs" / "bb").write_bytes(b"x" * 7)
    os.symlink(str(elsewhere / "keep.incomplete"), str(repo / "blobs" / "cc.incomplete"))
    assert vllm_prefetch.remove_partial_downloads(str(tmp_path / "huggingface"), SHARDED) == (1, 100)
    assert sorted(os.listdir(str(repo / "blobs"))) == ["bb", "cc.incomplete"]
    assert (elsewhere / "keep.incomplete").exists()
