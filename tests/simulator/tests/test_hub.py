"""The simulated Hub: `hf download` and vLLM's own fetch at start write the cache huggingface_hub writes."""
import json
import os
import subprocess
import sys
import time

from conftest import EAGLE_HEAD, EAGLE_K3, LLAMA_W4, SIM_ROOT, run_vllm
import pytest

HF = os.path.join(SIM_ROOT, "bin", "hf")


def hf(args, profile_path, hf_home, **env):
    full = dict(os.environ, JETSON_SIM_PROFILE=profile_path, HF_HOME=str(hf_home))
    full.pop("HF_HUB_OFFLINE", None)
    full.pop("HF_TOKEN", None)
    full.update(env)
    return subprocess.run([sys.executable, HF] + list(args), env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=30, check=False)


def test_a_known_model_lands_in_the_cache_layout_with_files_the_memory_check_reads(profile_file, tmp_path):
    from vllm_sim.profile import load_profile
    path = profile_file()
    result = hf(["download", "--quiet", "--", EAGLE_HEAD], path, tmp_path)
    assert result.returncode == 0, result.stderr
    snapshot = result.stdout.strip()
    repo = tmp_path / "hub" / ("models--" + EAGLE_HEAD.replace("/", "--"))
    commit = (repo / "refs" / "main").read_text()
    assert snapshot == str(repo / "snapshots" / commit)
    head = load_profile(path).models[EAGLE_HEAD]
    index = json.loads((repo / "snapshots" / commit / "model.safetensors.index.json").read_text())
    assert index["metadata"]["total_size"] == head.weight_bytes
    # every shard the index names is there (the collection's prefetch counts the snapshot as cached only then)
    for shard in set(index["weight_map"].values()):
        data = (repo / "snapshots" / commit / shard).read_bytes()
        size = int.from_bytes(data[:8], "little")
        assert len(data) == 8 + size and json.loads(data[8:]).get("__metadata__")
    config = json.loads((repo / "snapshots" / commit / "config.json").read_text())
    assert 2 * config["num_hidden_layers"] * config["num_key_value_heads"] * config["head_dim"] * 2 == head.kv_bytes_per_token
    # cached: the same path at once, also offline
    again = hf(["download", "-q", EAGLE_HEAD], path, tmp_path, HF_HUB_OFFLINE="1")
    assert again.returncode == 0 and again.stdout.strip() == snapshot


@pytest.mark.parametrize("faults,env,text", [
    ({}, {}, "Error: Model 'acme/unknown-draft' not found."),
    ({"gated_repo": True}, {}, "Error: Access denied. Model '%s' requires approval." % EAGLE_HEAD),
    ({"hub_unreachable": True}, {}, "Error: Local entry not found. [Errno 111] Connection refused"),
    ({}, {"HF_HUB_OFFLINE": "1"}, "offline mode is enabled"),
])
def test_failures_print_the_clis_words_and_write_nothing(profile_file, tmp_path, faults, env, text):
    model = "acme/unknown-draft" if not faults and not env else EAGLE_HEAD
    result = hf(["download", "--quiet", "--", model], profile_file(faults=faults), tmp_path, **env)
    assert result.returncode == 1 and text in result.stderr, result.stderr
    assert result.stdout == "" and not (tmp_path / "hub").exists()


def test_a_token_opens_a_gated_model(profile_file, tmp_path):
    result = hf(["download", "-q", EAGLE_HEAD], profile_file(faults={"gated_repo": True}), tmp_path, HF_TOKEN="hf_x")
    assert result.returncode == 0, result.stderr


def test_vllm_fetches_an_uncached_head_at_its_start_and_not_again(profile_file, tmp_path):
    path = profile_file(faults={"download_s": 1.5})
    env = {"HF_HOME": str(tmp_path)}
    args = ["serve", LLAMA_W4, "--max-model-len", "4096", "--speculative-config", EAGLE_K3,
            "--gpu-memory-utilization", "1.5"]  # fails after the fetch, before the port opens
    started = time.monotonic()
    first = run_vllm(args, path, env=env)
    assert time.monotonic() - started >= 1.5 and "GPU memory utilization must be within" in first.stderr
    assert (tmp_path / "hub" / ("models--" + EAGLE_HEAD.replace("/", "--")) / "refs" / "main").is_file()
    started = time.monotonic()
    run_vllm(args, path, env=env)
    assert time.monotonic() - started < 1.5


def test_vllm_offline_without_the_head_fails_as_transformers_does(profile_file, tmp_path):
    result = run_vllm(["serve", LLAMA_W4, "--max-model-len", "4096", "--speculative-config", EAGLE_K3], profile_file(),
                      env={"HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 1
    assert "We couldn't connect to 'https://huggingface.co' to load the files" in result.stderr
