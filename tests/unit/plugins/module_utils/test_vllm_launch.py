"""The launch unit's argv: validated flags, no injection."""
import json

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import SpecConfigError
from ansible_collections.jetson.specdec.plugins.module_utils.launch.systemd import systemd_command_line
from ansible_collections.jetson.specdec.plugins.module_utils.launch.argv import (
    container_argv,
    native_argv,
    validate_extra_args,
)

BASE = dict(model="meta-llama/Llama-3.1-8B-Instruct", served_model_name="llama", host="127.0.0.1", port=8000,
            gpu_memory_utilization=0.75, max_model_len=8192, max_num_seqs=8, vllm_bin="/opt/vllm/bin/vllm")
SPEC = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 5}


def opts(**over):
    merged = dict(BASE)
    merged.update(over)
    return merged


def test_native_argv_shape():
    argv = native_argv(opts(speculative_config=SPEC, enforce_eager=True, extra_args=["--seed=1"]))
    assert argv[:3] == ["/opt/vllm/bin/vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.75"
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == SPEC
    assert "--enforce-eager" in argv and argv[-1] == "--seed=1"
    assert "--trust-remote-code" not in argv


def test_container_argv_follows_nvidia_serving_guidance():
    argv = container_argv(opts(image="vllm/vllm-openai:v0.20.1", service_name="vllm", container_runtime="nvidia",
                               hf_cache_dir="/var/lib/vllm/huggingface", env_file="/etc/vllm/vllm.env"))
    text = " ".join(argv)
    assert text.startswith("/usr/bin/docker run --rm --name vllm --pull missing --runtime nvidia --network host")
    assert "-v /var/lib/vllm/huggingface:/huggingface -e HF_HOME=/huggingface" in text
    # Secrets: a read-only file the entrypoint sources, not --env-file (docker inspect shows --env-file values).
    assert "-v /etc/vllm/vllm.env:/run/secrets/vllm.env:ro" in text and "--env-file" not in argv
    assert argv[argv.index("vllm/vllm-openai:v0.20.1") + 3:][:2] == ["vllm", "meta-llama/Llama-3.1-8B-Instruct"]


@pytest.mark.parametrize("over", [
    dict(model="evil/model;rm -rf /"),
    dict(model="$(reboot)/x"),
    dict(model="owner/na me"),
    dict(model="/opt/../etc/passwd"),
    dict(served_model_name="a b"),
    dict(host="0.0.0.0; reboot"),
    dict(port=70000),
    dict(port="8000"),
    dict(gpu_memory_utilization=1.5),
    dict(max_model_len=10),
    dict(max_num_seqs=0),
    dict(dtype="int3"),
    dict(vllm_bin="vllm"),
    dict(vllm_bin="/opt/my vllm/bin/vllm"),
    dict(speculative_config='{"method": "eagle3"}'),
    dict(speculative_config={"method": "eagle3", "model": "a/b", "num_speculative_tokens": -1}),
    dict(extra_args="--foo --bar"),
    dict(extra_args=["--foo bar"]),
    dict(extra_args=["--api-key=secret"]),
    dict(extra_args=["--speculative-config"]),
])
def test_bad_input_is_refused_before_anything_renders(over):
    with pytest.raises(SpecConfigError):
        native_argv(opts(**over))


def test_bad_container_image_is_refused():
    with pytest.raises(SpecConfigError):
        container_argv(opts(image="vllm/vllm-openai:latest; reboot"))


def test_extra_args_pass_one_token_each():
    assert validate_extra_args(["--disable-log-requests", "--seed=7"]) == ["--disable-log-requests", "--seed=7"]
    assert validate_extra_args(None) == []


def test_the_rendered_line_keeps_the_json_intact_for_systemd():
    line = systemd_command_line(native_argv(opts(speculative_config=SPEC)))
    assert '"{\\"method\\":\\"eagle3\\"' in line
