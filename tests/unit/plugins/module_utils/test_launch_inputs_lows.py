"""Issue 34 lows on the vllm_server side: '~' in secrets, admin groups, environment names."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import inputs


@pytest.mark.parametrize("value", ["~", "~root", "~/k", "~+", "~-", "a:~", "a:~root", "k-1:~/x", "::~", "~abc123"])
@pytest.mark.parametrize("var", ["vllm_server_api_key", "vllm_server_hf_token"])
def test_a_tilde_sh_would_expand_is_refused_without_echoing_the_secret(var, value):
    out = inputs.check_secret(var, value)
    assert len(out) == 1 and out[0].startswith("input.secret_value: %s has a '~'" % var), out
    assert value not in out[0].split(":", 1)[1].replace("'~'", "")


@pytest.mark.parametrize("value", ["a~b", "ab~", "k=~", "x=~root", "hf_abc~", "a~:b", "%~"])
def test_a_tilde_sh_keeps_is_accepted(value):
    assert inputs.check_secret("vllm_server_api_key", value) == []


@pytest.mark.parametrize("group", ["kmem", "staff", "sys", "tty", "crontab", "libvirt", "incus-admin", "podman",
                                   "sudo", "docker", "disk", "shadow", "adm", "wheel", "root", "lxd"])
def test_groups_that_reach_root_or_secrets_are_refused(group):
    out = inputs.check_account("vllm", "vllm", ["video", group])
    assert len(out) == 1 and out[0].startswith("input.supplementary_groups:") and repr(group) in out[0], out


@pytest.mark.parametrize("group", ["video", "render", "i2c", "gpio", "dialout", "audio"])
def test_device_groups_pass(group):
    assert inputs.check_account("vllm", "vllm", [group]) == []


@pytest.mark.parametrize("name", ["PYTHONPATH", "pythonpath", "PYTHONUSERBASE", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
                                  "HF_TOKEN_PATH", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "LD_PRELOAD", "HF_HOME"])
def test_environment_names_that_change_what_runs_or_where_secrets_go(name):
    out = inputs.check_environment({name: "/tmp/x"})
    assert len(out) == 1 and out[0].startswith("input.environment: vllm_server_environment must not set %s" % name), out


@pytest.mark.parametrize("name", ["HF_ENDPOINT", "hf_endpoint", "HF_HUB_ENDPOINT"])
def test_a_hub_endpoint_never_receives_the_token(name):
    out = inputs.check_environment({name: "https://mirror.example"}, "hf_abc")
    assert len(out) == 1 and out[0].startswith("input.environment:") and "send the token" in out[0], out
    assert "hf_abc" not in out[0]
    # A mirror without a token is the documented use.
    assert inputs.check_environment({name: "https://mirror.example"}, "") == []
    assert inputs.check_environment({name: "https://mirror.example"}) == []


def test_the_whole_check_passes_the_token_to_the_environment_rule():
    opts = dict(service_name="vllm", user="vllm", group="vllm", supplementary_groups=["video"],
                hf_home="/var/lib/vllm/huggingface", api_key="", hf_token="hf_abc", host="127.0.0.1",
                environment={"HF_ENDPOINT": "https://mirror.example"}, extra_args=[], runtime="native",
                native_bin="/opt/vllm/bin/vllm")
    assert [r.split(":", 1)[0] for r in inputs.input_refusals(opts)] == ["input.environment"]
