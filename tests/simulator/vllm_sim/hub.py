"""SIMULATED Hugging Face Hub for the test-bed boards: `hf download` and vLLM's own fetch at start.

The test bed has no network. A model the board profile knows "exists on the Hub"; fetching it
writes what huggingface_hub's cache holds (``<HF_HOME>/hub/models--owner--name/refs/main`` and
``snapshots/<commit>/``) with a config.json and a safetensors index sized from the profile, so
the collection's memory check reads the same numbers from the files as from its catalog.
The texts are huggingface_hub 2.x's `hf` CLI's (seen against a loopback mirror).

Faults (the profile's ``faults``, speculative scope): ``gated_repo`` (401, no access),
``hub_unreachable`` (connection refused), ``download_s`` (wall seconds one fetch takes).
"""
import argparse
import hashlib
import json
import os
import sys
import time

from .profile import ProfileError, load_profile


class HubError(Exception):
    pass


def cache_root():
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return os.path.join(home, "hub")


def repo_dir(root, repo):
    return os.path.join(root, "models--" + repo.replace("/", "--"))


def cached(root, repo):
    """The snapshot of refs/main, or None."""
    base = repo_dir(root, repo)
    try:
        with open(os.path.join(base, "refs", "main")) as handle:
            commit = handle.read().strip()
    except (IOError, OSError):
        return None
    path = os.path.join(base, "snapshots", commit)
    return path if os.path.isfile(os.path.join(path, "config.json")) else None


def _write(path, text):
    tmp = path + ".incomplete"
    with open(tmp, "wb") as handle:
        handle.write(text if isinstance(text, bytes) else text.encode("utf-8"))
    os.rename(tmp, path)


# A real index names every shard in its weight_map, and the collection counts a snapshot as cached only with
# each of them present. The one shard here is a valid safetensors file without tensors (8-byte header length,
# then the header): the weights' size is the index's total_size, read from the profile.
_SHARD = "model-00001-of-00001.safetensors"


def _empty_safetensors():
    header = json.dumps({"__metadata__": {"_simulated": "jetson-sim hub: no weights"}}).encode("utf-8")
    header += b" " * (-len(header) % 8)
    return len(header).to_bytes(8, "little") + header


def fetch(profile, repo, faults, root=None):
    """Put ``repo`` into the cache as the Hub would; returns the snapshot path or raises HubError(text)."""
    root = root or cache_root()
    found = cached(root, repo)
    offline = os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")
    if found:
        return found
    if offline:
        raise HubError("Error: Local entry not found. Cannot reach https://huggingface.co/api/models/%s/revision/main: "
                       "offline mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment "
                       "variable." % repo)
    if faults.get("hub_unreachable"):
        raise HubError("Error: Local entry not found. [Errno 111] Connection refused")
    # The fault makes every speculative model a gated repository, known to the profile or not (as vLLM's start does).
    if faults.get("gated_repo") and not (os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")):
        raise HubError("Error: Access denied. Model '%s' requires approval." % repo)
    model = profile.models.get(repo)
    if model is None:
        raise HubError("Error: Model '%s' not found.\nIf the repo is private, make sure you are authenticated and "
                       "your token has the required permissions.\nIf the repo does not exist, create it with: "
                       "hf repos create %s" % (repo, repo))
    time.sleep(float(faults.get("download_s", 0)))  # wall seconds, not scaled
    commit = hashlib.sha1(repo.encode("utf-8")).hexdigest()
    base = repo_dir(root, repo)
    snapshot = os.path.join(base, "snapshots", commit)
    for path in (snapshot, os.path.join(base, "refs")):
        os.makedirs(path, exist_ok=True)
    # One layer, one KV head, head_dim from the profile's KV bytes per token (bf16: 2 x 2 bytes x head_dim).
    config = {"model_type": model.model_type, "vocab_size": model.vocab_size,
              "max_position_embeddings": model.max_position_embeddings, "num_hidden_layers": 1,
              "num_attention_heads": 1, "num_key_value_heads": 1,
              "head_dim": max(1, model.kv_bytes_per_token // 4), "torch_dtype": "bfloat16",
              "_simulated": "jetson-sim hub: no weights"}
    _write(os.path.join(snapshot, "config.json"), json.dumps(config))
    _write(os.path.join(snapshot, _SHARD), _empty_safetensors())
    _write(os.path.join(snapshot, "model.safetensors.index.json"),
           json.dumps({"metadata": {"total_size": model.weight_bytes}, "weight_map": {"lm_head.weight": _SHARD}}))
    _write(os.path.join(base, "refs", "main"), commit)
    return snapshot


def main(argv=None):
    """`hf download [--quiet] [--] REPO_ID`, the subset the collection uses."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="hf")
    sub = parser.add_subparsers(dest="command")
    download = sub.add_parser("download")
    download.add_argument("repo_id")
    download.add_argument("filenames", nargs="*")
    download.add_argument("--revision", default=None)
    download.add_argument("--cache-dir", default=None)
    download.add_argument("--token", default=None)
    download.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.command != "download":
        parser.print_help()
        return 2
    try:
        profile = load_profile()
    except ProfileError as exc:
        sys.stderr.write("%s\n" % exc)
        return 1
    if args.token:
        os.environ["HF_TOKEN"] = args.token
    try:
        path = fetch(profile, args.repo_id, profile.faults_for(True), args.cache_dir)
    except HubError as exc:
        sys.stderr.write("%s\n" % exc)
        return 1
    sys.stdout.write("%s\n" % path)
    return 0
