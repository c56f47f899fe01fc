"""vllm_server input validation (issue 18): every class of bad input in several spellings."""
import re

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import inputs
from ansible_collections.jetson.specdec.plugins.module_utils.launch.argv import (
    CONTAINER_ENTRYPOINT,
    container_argv,
    native_argv,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import SpecConfigError
from ansible_collections.jetson.specdec.plugins.module_utils.launch.systemd import systemd_command_line

GOOD = dict(service_name="vllm", user="vllm", group="vllm", supplementary_groups=["video"],
            hf_home="/var/lib/vllm/huggingface", api_key="", hf_token="", environment={"VLLM_LOGGING_LEVEL": "INFO"},
            host="127.0.0.1", extra_args=["--seed", "7"], extra_flags_allowed=[], runtime="native",
            native_bin="/opt/vllm/bin/vllm", docker_bin="/usr/bin/docker", image="vllm/vllm-openai:v0.20.1",
            pull="missing", container_user="", shm_size="2g")


def refusals(**over):
    opts = dict(GOOD)
    opts.update(over)
    return inputs.input_refusals(opts)


def test_good_inputs_pass_both_runtimes():
    assert refusals() == []
    assert refusals(runtime="container") == []


@pytest.mark.parametrize("model", [None, "", "   ", 7, ["a/b"]])
def test_a_missing_model_is_one_clear_refusal_first(model):
    out = refusals(model=model, service_name="../x")
    assert out[0].startswith("input.model_missing: vllm_server_model is ") and "group_vars" in out[0], out
    assert out[1].startswith("input.service_name"), out
    assert refusals(model="meta-llama/Llama-3.1-8B-Instruct") == [] and refusals(model="/models/llama") == []


@pytest.mark.parametrize("name", ["../../tmp/x", "vllm\nExecStartPre=/bin/touch /tmp/pwned", "a/b", "..",
                                  "vllm.service", "-vllm", "", "v" * 65, "vl lm", "vllm%n", None, 7])
@pytest.mark.parametrize("runtime", ["native", "container"])
def test_service_name_is_checked_for_both_runtimes(name, runtime):
    out = refusals(service_name=name, runtime=runtime)
    assert out and out[0].startswith("input.service_name:")


# Issue 34, medium 7: a service name that is a system service's would write /etc/systemd/system/<name>.service
# over it. Several spellings per family (case, a suffix after a dot, family prefixes).
@pytest.mark.parametrize("name", ["ssh", "sshd", "SSH", "Sshd", "ssh.socket", "docker", "docker.io", "containerd",
                                  "getty", "getty-tty1", "serial-getty", "systemd-networkd", "systemd-journald",
                                  "dbus", "dbus-broker", "NetworkManager", "networking", "network-online",
                                  "cron", "rsyslog", "udev", "polkit", "multi-user", "default", "emergency",
                                  "nvpmodel", "nvargus-daemon", "nvidia-persistenced", "snap.lxd.daemon",
                                  "jetson-specdec-pull", "user-runtime-dir", "sys-kernel-debug", "kubelet"])
@pytest.mark.parametrize("runtime", ["native", "container"])
def test_a_system_service_name_is_reserved(name, runtime):
    out = refusals(service_name=name, runtime=runtime)
    assert [r.split(":", 1)[0] for r in out] == ["input.service_name_reserved"], out
    assert "/etc/systemd/system/%s.service" % name in out[0]


@pytest.mark.parametrize("name", ["vllm", "vllm-qwen", "vllm_8000", "VLLM", "vllm.qwen3", "llm-server", "specdec",
                                  "sshvllm"[4:] + "-" + "ssh"])
def test_a_service_name_of_its_own_is_accepted(name):
    assert refusals(service_name=name) == []


@pytest.mark.parametrize("over, rule", [
    (dict(user="root"), "input.account_root"),
    (dict(group="root"), "input.account_root"),
    (dict(user="Vllm"), "input.account_name"),
    (dict(user="vllm\nroot"), "input.account_name"),
    (dict(user="0"), "input.account_name"),
    (dict(user="a" * 33), "input.account_name"),
    (dict(supplementary_groups=["video", "sudo"]), "input.supplementary_groups"),
    (dict(supplementary_groups=["docker"]), "input.supplementary_groups"),
    (dict(supplementary_groups=["video render"]), "input.supplementary_groups"),
    (dict(supplementary_groups=["video\nExecStartPre=/bin/sh"]), "input.supplementary_groups"),
    (dict(supplementary_groups=["%n"]), "input.supplementary_groups"),
    (dict(supplementary_groups="video"), "input.supplementary_groups"),
])
def test_accounts_and_groups(over, rule):
    assert any(r.startswith(rule + ":") for r in refusals(**over))


@pytest.mark.parametrize("path, rule", [
    ("/", "input.path_system"), ("/etc", "input.path_system"), ("/var/lib", "input.path_system"),
    ("/usr/local", "input.path_system"), ("/etc/ssh", "input.path_system"), ("/proc/1", "input.path_system"),
    ("/var/tmp/hf", "input.path_system"), ("/root/hf", "input.path_home"), ("/home/ubuntu/hf", "input.path_home"),
    ("/var/lib/vllm/hf:/etc:rw", "input.path"), ("/var/lib/vllm/hf,ro", "input.path"),
    ("relative/hf", "input.path"), ("/var/lib/vllm/../../etc", "input.path"), ("/var/lib/vllm/./hf", "input.path"),
    ("/var/lib/vllm/hf/", "input.path"), ("//etc", "input.path"), ("/var/lib/vllm/h f", "input.path"),
    ("/var/lib/vllm/hf\nExecStartPre=/x", "input.path"), ("/var/lib/vllm/%h", "input.path"), ("", "input.path"),
])
def test_hf_home_must_be_a_safe_data_path(path, rule):
    assert any(r.startswith(rule + ":") for r in refusals(hf_home=path))


# Issue 34, medium 6: a subdirectory of a system or another program's directory is refused in every spelling;
# only directories below the data roots pass (the host's safe_dir then refuses one the collection did not create).
@pytest.mark.parametrize("path, rule", [
    ("/var/lib/dpkg/info", "input.path_root"), ("/var/lib/sudo/ts", "input.path_root"),
    ("/var/lib/docker", "input.path_root"), ("/var/lib/docker/volumes/x", "input.path_root"),
    ("/var/spool/cron/crontabs", "input.path_root"), ("/var/cache/apt/archives", "input.path_root"),
    ("/var/log/vllm", "input.path_root"), ("/opt/nvidia/vllm", "input.path_root"), ("/var/lib/vllm", "input.path_root"),
    ("/srv", "input.path_system"), ("/data", "input.path_system"), ("/mnt", "input.path_system"),
    ("/var/lib/vllmx/hf", "input.path_root"), ("/var/lib/vllm.d/hf", "input.path_root"), ("/mntx/hf", "input.path_root"),
    ("/Var/lib/vllm/hf", "input.path_root"), ("/VAR/LIB/VLLM/hf", "input.path_root"), ("/DATA/hf", "input.path_root"),
    ("/var/lib/vllm/hf/", "input.path"), ("/var/lib//vllm/hf", "input.path"), ("/var/lib/vllm/./hf", "input.path"),
    ("/var/lib/vllm/../dpkg/info", "input.path"), ("/var/lib/vllm/hf/..", "input.path"),
    ("/var/lib/vllm/../../var/lib/docker", "input.path"), ("/data/../var/lib/docker", "input.path"),
    ("/var/lib/vllm/hf\x00", "input.path"), ("/var/lib/vllm/hf\u2215..\u2215docker", "input.path"),
])
def test_hf_home_outside_the_data_roots_is_refused(path, rule):
    got = refusals(hf_home=path)
    assert [r.split(":", 1)[0] for r in got] == [rule], got


@pytest.mark.parametrize("path", ["/var/lib/vllm/huggingface", "/var/lib/vllm/cache/hf", "/var/cache/vllm/hf",
                                  "/opt/vllm/cache", "/srv/vllm/hf", "/data/huggingface", "/ssd/hf", "/mnt/nvme/hf"])
def test_hf_home_below_a_data_root_is_accepted(path):
    assert refusals(hf_home=path) == []


@pytest.mark.parametrize("value", ["abc\nLD_PRELOAD=/tmp/x.so", "abc\rdef", "has space", '"quoted"', "it's",
                                   "back\\slash", "$HOME", "`id`", "a;reboot", "a|b", "a&b", "a>b", "(x)", "caf\u00e9",
                                   "x" * 4097, "tab\there"])
@pytest.mark.parametrize("var", ["api_key", "hf_token"])
def test_secrets_only_in_the_common_env_file_language(var, value):
    out = refusals(**{var: value})
    assert any(r.startswith("input.secret_value:") for r in out)
    # The refusal must not print the secret.
    assert all(value not in r for r in out)


@pytest.mark.parametrize("env, fragment", [
    ({"LD_PRELOAD": "/tmp/x.so"}, "LD_PRELOAD"),
    ({"ld_preload": "/tmp/x.so"}, "ld_preload"),
    ({"VLLM_API_KEY": "x"}, "VLLM_API_KEY"),
    ({"HF_TOKEN": "x"}, "HF_TOKEN"),
    ({"HF_HOME": "/"}, "HF_HOME"),
    ({"A": "x\nExecStartPre=/bin/sh"}, "control character"),
    ({"BAD-NAME": "x"}, "not a variable name"),
    ({"1X": "x"}, "not a variable name"),
    ({"A=B": "x"}, "not a variable name"),
    ({"A": {"nested": 1}}, "string or number"),
])
def test_environment(env, fragment):
    out = refusals(environment=env)
    assert any(r.startswith("input.environment:") and fragment in r for r in out), out


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "0", "::0", "0:0:0:0:0:0:0:0"])
def test_open_bind_needs_an_api_key_or_an_explicit_opt_in(host):
    assert any(r.startswith("input.open_bind:") for r in refusals(host=host))
    assert refusals(host=host, api_key="k-123") == []
    assert not any(r.startswith("input.open_bind:") for r in refusals(host=host, allow_open_bind=True))


@pytest.mark.parametrize("host", ["-h", "--api-key=x", "-0.0.0.0", "127.0.0.1 --x", "a;b", "", None, "[::]"])
def test_host_that_is_an_option_or_not_an_address(host):
    assert any(r.startswith("input.host:") for r in refusals(host=host))


# --- extra args ------------------------------------------------------------------------------
OWNED_SPELLINGS = [
    "--api_key=SECRET", "--api-key=SECRET", "--api-key", "--api=SECRET", "--api-k", "--API_KEY=x",
    "--gpu_memory_utilization=0.99", "--gpu-memory-utilization=0.99", "--gpu-mem=0.99", "--device-memory-utilization=1",
    "--trust_remote_code", "--trust-remote-code", "--trust", "--no-trust-remote-code",
    "--speculative-config.method=ngram", "--speculative_config.num_speculative_tokens=9", "-sc", "--speculative",
    "--hf-token=hf_x", "--hf_token=hf_x", "--hf-tok=hf_x",
    "--config=/etc/vllm.yaml", "--config", "--model=/x", "--model", "--mod=/x",
    "--host=0.0.0.0", "--port=1", "--por=1", "--uds=/tmp/s", "--served-model-name=x", "--served_model_name=x",
    "--max-model-len=999999", "--max_num_seqs=1024", "--max-num-seq=1", "--dtype=float16", "--enforce_eager",
    "--kv-cache-memory-bytes=9999999999", "--num-gpu-blocks-override=100000", "--download-dir=/etc",
    "--middleware=evil.mod", "--allowed-local-media-path=/", "--ssl-keyfile=/k", "--help", "-h",
]


@pytest.mark.parametrize("arg", OWNED_SPELLINGS)
def test_owned_secret_and_abbreviated_flags_are_refused_in_every_spelling(arg):
    out = inputs.check_extra_args([arg])
    assert len(out) == 1 and out[0].startswith("input.extra_args:"), out
    with pytest.raises(SpecConfigError):
        native_argv(dict(model="a/b", vllm_bin="/opt/vllm/bin/vllm", extra_args=[arg]))


@pytest.mark.parametrize("args", [
    ["--seed", "7"], ["--seed=7"], ["--enable-prefix-caching"], ["--no-enable-prefix-caching"],
    ["--enable_prefix_caching"], ["--chat-template", "/var/lib/vllm/chat.jinja"], ["-q", "awq"], ["-tp=1"],
    ["--compilation-config.level=3"], ["-O3"], ["--max-num-batched-tokens", "2048"], ["--swap-space", "-1"],
])
def test_allow_listed_flags_pass(args):
    assert inputs.check_extra_args(args) == []


@pytest.mark.parametrize("arg", ["--lora-modules=x", "--tool-parser-plugin=/tmp/x.py", "-x", "-t", "--",
                                 "--worker-cls=evil.Worker", "--tokenizer=/etc"])
def test_flags_outside_the_allow_list_are_refused(arg):
    assert any(r.startswith("input.extra_args:") for r in inputs.check_extra_args([arg]))


def test_an_operator_can_allow_a_flag_but_never_an_owned_or_secret_one():
    assert inputs.check_extra_args(["--lora-modules=a=b"], ["--lora-modules"]) == []
    assert inputs.check_extra_args(["--lora_modules=a=b"], ["lora-modules"]) == []
    for flag in ("--api-key", "api_key", "--config", "--no-trust-remote-code", "gpu-memory-utilization"):
        out = inputs.check_extra_args([], [flag])
        assert out and out[0].startswith("input.extra_flags_allowed:"), flag


def test_no_allow_listed_name_abbreviates_a_refused_flag():
    """argparse expands a prefix: an allowed name must never be a prefix of an owned or secret flag."""
    for allowed in inputs.ALLOWED_FLAGS:
        for never in inputs.NEVER_ALLOWED:
            assert allowed == never or not never.startswith(allowed), (allowed, never)


# --- container --------------------------------------------------------------------------------
@pytest.mark.parametrize("image, ok", [
    ("vllm/vllm-openai:latest", False), ("vllm/vllm-openai", False), ("registry.local:5000/img", False),
    ("registry.local:5000/img:latest", False), ("registry.local:5000/img:tag", True),
    ("vllm/vllm-openai:v0.20.1", True), ("vllm/vllm-openai@sha256:" + "a" * 64, True),
    ("vllm/vllm-openai:latest@sha256:" + "b" * 64, True),
])
def test_container_image_must_be_pinned(image, ok):
    out = [r for r in refusals(runtime="container", image=image) if "container_image" in r]
    assert (out == []) is ok, out


@pytest.mark.parametrize("image", ["vllm/vllm-openai:latest", "vllm/vllm-openai"])
def test_moving_tag_is_allowed_only_when_docker_never_pulls_it(image):
    """The skill's vllm/vllm-openai:latest on Thor: the image already on the host is what runs (issue 17)."""
    assert [r for r in refusals(runtime="container", image=image, pull="never") if "container_image" in r] == []
    for pull in ("missing", "always"):
        out = [r for r in refusals(runtime="container", image=image, pull=pull) if "container_image" in r]
        assert out and "vllm_server_container_pull: never" in out[0], out


@pytest.mark.parametrize("over, rule", [
    (dict(pull="sometimes"), "input.container_pull"), (dict(pull=""), "input.container_pull"),
    (dict(container_user="vllm"), "input.container_user"), (dict(container_user="1000"), "input.container_user"),
    (dict(container_user="0:0 --privileged"), "input.container_user"), (dict(shm_size="1t"), "input.container_shm_size"),
    (dict(shm_size="2g --privileged"), "input.container_shm_size"),
    (dict(docker_bin="docker"), "input.executable"), (dict(docker_bin="/usr/bin/docker\nExecStartPre=/x"), "input.executable"),
    (dict(docker_bin="/usr/bin/%n"), "input.executable"), (dict(docker_bin="/usr/bin/../../tmp/docker"), "input.executable"),
])
def test_container_settings(over, rule):
    over = dict(over, runtime="container")
    assert any(r.startswith(rule + ":") for r in refusals(**over))


def test_container_argv_is_hardened_and_keeps_secrets_off_argv_and_inspect():
    argv = container_argv(dict(model="a/b", image="registry.local:5000/vllm:v0.20.1", service_name="vllm",
                               container_runtime="nvidia", hf_cache_dir="/var/lib/vllm/huggingface",
                               env_file="/etc/vllm/vllm.env", environment={"VLLM_LOGGING_LEVEL": "DEBUG"},
                               container_user="1000:1000", pull="never", shm_size="4g"))
    text = " ".join(argv)
    for piece in ("--pull never", "--cap-drop ALL", "--security-opt no-new-privileges", "--shm-size 4g",
                  "--user 1000:1000", "-e VLLM_LOGGING_LEVEL=DEBUG", "-v /var/lib/vllm/huggingface:/huggingface",
                  "-e HF_HOME=/huggingface", "-v /etc/vllm/vllm.env:/run/secrets/vllm.env:ro"):
        assert piece in text, piece
    assert "--ipc" not in argv and "--env-file" not in argv and "--privileged" not in argv
    image_at = argv.index("registry.local:5000/vllm:v0.20.1")
    assert argv[image_at - 2:image_at] == ["--entrypoint", "/bin/sh"]
    assert argv[image_at + 1:image_at + 5] == ["-c", CONTAINER_ENTRYPOINT, "vllm", "a/b"]
    # systemd must hand "$@" to sh unchanged: written as $$@ on the unit line.
    assert '"$$@"' in systemd_command_line(argv).replace('\\"$$@\\"', '"$$@"')


@pytest.mark.parametrize("host", ["-h", "--api-key=x", "-0.0.0.0"])
def test_argv_refuses_a_host_that_starts_with_a_dash(host):
    with pytest.raises(SpecConfigError, match="vllm_server_host"):
        native_argv(dict(model="a/b", vllm_bin="/opt/vllm/bin/vllm", host=host))


def test_refusals_name_the_variable_and_a_fix():
    out = refusals(service_name="../x", user="root", hf_home="/", hf_token="a b", host="0.0.0.0",
                   extra_args=["--api_key=x"], environment={"LD_PRELOAD": "x"})
    assert len(out) == 7
    for line in out:
        assert re.match(r"^input\.[a-z_]+: ", line) and ("Fix:" in line or "must not" in line), line


# Issue 34: a model or draft reference that would carry a shell word, a newline or a path climb onto argv and
# the unit is refused with its own rule id (input.model_ref) before the plan reads it.
@pytest.mark.parametrize("over", [
    {"model": "meta-llama/Llama-3.1-8B-Instruct; rm -rf /"},
    {"model": "$(reboot)/model"},
    {"model": "a/b\nExecStartPre=/bin/true"},
    {"model": "/opt/models/../../etc"},
    {"model": "-h/x"},
    {"speculative_model": "a/b\nExecStartPre=/bin/true"},
    {"speculative_model": "yuhuili/EAGLE3 `id`"},
    {"speculative_model": "a/b%n"},
], ids=["model_semicolon", "model_subshell", "model_newline", "model_dotdot", "model_option", "draft_newline",
        "draft_backtick", "draft_percent"])
def test_a_model_reference_with_shell_or_unit_syntax_is_input_model_ref(over):
    out = refusals(**over)
    assert [r.split(":", 1)[0] for r in out] == ["input.model_ref"], out
    var = "vllm_server_model" if "model" in over else "vllm_server_speculative_model"
    assert var in out[0] and "Fix:" in out[0], out


@pytest.mark.parametrize("over", [{"model": "meta-llama/Llama-3.1-8B-Instruct"}, {"model": "/opt/models/llama-3.1"},
                                  {"speculative_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"},
                                  {"speculative_model": ""}, {"speculative_model": None}])
def test_good_model_references_pass(over):
    assert refusals(**over) == []
