# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""What vllm_prefetch fetches and how it reads the Hugging Face CLI's failures (texts seen from hf 2.4.0 against a
loopback mirror, and the Python errors older huggingface_hub versions print)."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import prefetch

RUNGS = [
    {"rung": 0, "vllm_server_speculative_method": "eagle3", "vllm_server_speculative_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"},
    {"rung": 1, "vllm_server_speculative_method": "eagle3", "vllm_server_speculative_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"},
    {"rung": 2, "vllm_server_speculative_method": "draft_model", "vllm_server_speculative_model": "/opt/models/llama-1b"},
    {"rung": 3, "vllm_server_speculative_method": "ngram", "vllm_server_speculative_model": ""},
    {"rung": 4, "label": "off"},
]


def test_the_hub_models_of_the_ladder_are_distinct_and_in_order_without_local_paths_or_ngram():
    assert prefetch.hub_models(RUNGS) == ["yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"]
    assert prefetch.hub_models(RUNGS[2:]) == []
    assert prefetch.hub_models(None) == []


@pytest.mark.parametrize("model,ok", [
    ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", True), ("RedHatAI/Qwen3-8B-quantized.w4a16", True),
    ("../etc", False), ("-x/y", False), ("/opt/models/draft", False), ("acme/draft;id", False),
    ("acme/draft name", False), ("acme/../../etc", False), ("acme", False), ("a/b/c", False), ("", False), (None, False),
    ("acme/draft\nExecStartPre=/bin/sh", False), (".hidden/x", False),
])
def test_only_hub_ids_are_fetched(model, ok):
    assert prefetch.is_hub_id(model) is ok


@pytest.mark.parametrize("text,cause,definite", [
    ("\x1b[90mHint: The `hf-cli` skill is not installed.\x1b[0m\nError: Model 'acme/x' not found.\nIf the repo is "
     "private, make sure you are authenticated and your token has the required permissions.", "not_found", True),
    ("Error: Access denied. Model 'acme/gated' requires approval.", "gated", True),
    ("Error: Local entry not found. Cannot reach https://huggingface.co/api/models/acme/x/revision/main: offline mode "
     "is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.", "offline_not_cached", True),
    ("Error: Local entry not found. [Errno 111] Connection refused", "unreachable", False),
    # the Hub's rate limit, as `hf download` prints it (huggingface_hub 1.x) and as the exception says it (< 1.0):
    # not a network that does not reach the Hub, and vLLM's fetch at its start would meet it too
    ("\x1b[1m\x1b[31mError: Local entry not found. 429 Too Many Requests for url: "
     "http://127.0.0.1:8080/api/models/acme/x/revision/main.\x1b[0m", "rate_limited", True),
    ("huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: "
     "https://huggingface.co/api/models/acme/x/revision/main", "rate_limited", True),
    # huggingface_hub < 1.0 (huggingface-cli download): the exception's own text
    ("huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. Repository Not Found for url: "
     "https://huggingface.co/api/models/acme/x/revision/main.", "not_found", True),
    ("huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url "
     "https://huggingface.co/acme/gated/resolve/main/config.json.", "gated", True),
    ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
     "with url: /api/models/acme/x (Caused by NameResolutionError: Temporary failure in name resolution)",
     "unreachable", False),
    ("OSError: [Errno 28] No space left on device: '/var/lib/vllm/huggingface/hub/models--acme--x/blobs/abc.incomplete'",
     "no_space", True),
    # EDQUOT: the account's quota on the cache's filesystem, as Python words it
    ("OSError: [Errno 122] Disk quota exceeded: '/var/lib/vllm/huggingface/hub/models--acme--x/blobs/abc.1f2e3d4c.incomplete'",
     "quota_exceeded", True),
    # EFBIG: a FAT32 card (4 GiB per file) or a file size limit (ulimit -f, LimitFSIZE=)
    ("OSError: [Errno 27] File too large", "file_too_large", True),
    ("Something new", "unknown", False),
    ("", "unknown", False),
])
def test_each_failure_names_its_cause_the_clis_line_and_the_fix(text, cause, definite):
    found = prefetch.failure(text)
    assert (found["cause"], found["definite"]) == (cause, definite)
    assert found["cause"] in prefetch.PREFETCH_CAUSES and found["fix"]
    if text:
        assert found["line"] and "\x1b" not in found["line"] and not found["line"].startswith("Hint:")


def test_a_timeout_is_its_own_cause_whatever_was_printed():
    found = prefetch.failure("Fetching 4 files:  25%|", timed_out=True)
    assert (found["cause"], found["definite"]) == ("timeout", False)


def test_the_fixes_name_the_variables_to_change():
    assert "vllm_server_hf_token" in prefetch.failure("Error: Access denied. Model 'a/b' requires approval.")["fix"]
    assert "HF_ENDPOINT" in prefetch.failure("[Errno 111] Connection refused")["fix"]
    assert "HF_HUB_OFFLINE" in prefetch.failure("offline mode is enabled")["fix"]
    limited = prefetch.failure("Error: Local entry not found. 429 Too Many Requests for url: http://m/api")["fix"]
    assert "vllm_server_hf_token" in limited and "rollout_serial" in limited


def test_the_snapshot_path_is_the_last_absolute_line():
    out = "Fetching 2 files\n/var/lib/vllm/huggingface/hub/models--a--b/snapshots/abc\n"
    assert prefetch.snapshot_path(out) == "/var/lib/vllm/huggingface/hub/models--a--b/snapshots/abc"
    assert prefetch.snapshot_path("") is None


def test_only_the_token_of_the_secrets_file_reaches_the_cli():
    text = "# Ansible managed\nVLLM_API_KEY=secret-api-key\nHF_TOKEN=hf_abc\n\nnot a line\n"
    assert prefetch.secrets_from_env_file(text) == {"HF_TOKEN": "hf_abc"}


def test_the_native_command_puts_the_id_after_the_option_end():
    argv = prefetch.download_argv({"runtime": "native", "cli": "/opt/vllm/bin/hf"}, "acme/draft")
    assert argv == ["/opt/vllm/bin/hf", "download", "--quiet", "--", "acme/draft"]
    with pytest.raises(ValueError):
        prefetch.download_argv({"runtime": "native", "cli": "/opt/vllm/bin/hf"}, "--help/x")


def test_the_container_command_uses_the_units_mounts_and_no_secret_on_the_command_line():
    argv = prefetch.download_argv({"runtime": "container", "image": "ghcr.io/acme/vllm:0.20.1", "hf_home": "/var/lib/vllm/hf",
                                   "env_file": "/etc/vllm/vllm.env", "environment": {"HF_ENDPOINT": "https://mirror"},
                                   "container_user": "1001:1001"}, "acme/draft")
    assert argv[:2] == ["/usr/bin/docker", "run"] and "--rm" in argv and "--cap-drop" in argv
    assert "/var/lib/vllm/hf:/huggingface" in argv and "HF_HOME=/huggingface" in argv
    assert "/etc/vllm/vllm.env:/run/secrets/vllm.env:ro" in argv and "HF_ENDPOINT=https://mirror" in argv
    assert argv[argv.index("--user") + 1] == "1001:1001"
    assert argv[-3:] == ["--quiet", "--", "acme/draft"] and "ghcr.io/acme/vllm:0.20.1" in argv
    assert not any("hf_" in a and "TOKEN" in a for a in argv)


def test_the_clis_disk_space_warning_gives_what_was_needed_and_free():
    text = ("/opt/vllm/lib/python3.12/site-packages/huggingface_hub/file_download.py:776: UserWarning: Not enough free "
            "disk space to download the file. The expected file size is: 0.01 MB. The target location /x/blobs only "
            "has 0.18 MB free disk space.\n  warnings.warn(\n\x1b[31mUserWarning: Not enough free disk space to download "
            "the file. The expected file size is: 1050.00 MB. The target location /var/lib/vllm/huggingface/hub/"
            "models--acme--x/blobs only has 0.18 MB free disk space.\x1b[0m\nOSError: [Errno 28] No space left on device")
    found = prefetch.disk_shortfall(text)
    assert found == {"needed": 1050000000, "free": 180000, "where": "/var/lib/vllm/huggingface/hub/models--acme--x/blobs"}
    assert prefetch.disk_shortfall("OSError: [Errno 28] No space left on device") is None


@pytest.mark.parametrize("num,text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1050000000, "1001.4 MiB"),
                                      (5 * 1024 ** 3, "5.0 GiB"), (3 * 1024 ** 4, "3072.0 GiB"), (None, "unknown")])
def test_sizes_read_as_on_a_boards_disk(num, text):
    assert prefetch.size_text(num) == text


def test_the_disk_sentence_says_where_how_much_and_what_was_cleaned_up():
    said = prefetch.disk_detail("no_space", "/var/lib/vllm/huggingface/hub", 4096,
                                {"needed": 2 * 1024 ** 3, "free": 1024 ** 3, "where": "x"}, (2, 3 * 1024 ** 2))
    assert said == ("disk full at /var/lib/vllm/huggingface/hub; a file of 2.0 GiB was needed, 1.0 GiB was free when it "
                    "started; 4.0 KiB free now; 2 partial downloads (3.0 MiB) removed, nothing half-written is left in "
                    "the cache")
    said = prefetch.disk_detail("quota_exceeded", "/c", None, None, (0, 0))
    assert said == "disk quota exceeded at /c; no partial download was left in the cache"
    assert all(cause in prefetch.DEFINITE_CAUSES and cause in prefetch.PREFETCH_CAUSES for cause in prefetch.DISK_CAUSES)
