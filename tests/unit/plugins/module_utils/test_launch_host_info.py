"""launch/host_info.py: what vllm_host_info turns its reads into."""
from ansible_collections.jetson.specdec.plugins.module_utils.launch import host_info


def test_the_systemd_version_is_the_number_of_the_first_line():
    assert host_info.systemd_version("systemd 252 (252.22-1~deb12u1)\n+PAM +AUDIT -SELINUX\n") == 252
    assert host_info.systemd_version("systemd 255 (255.4-1ubuntu8.4)") == 255
    assert host_info.systemd_version("systemd 249~rc1") == 249
    # no number (or no systemctl answer): unknown, which the role reads as 0 (no ProtectClock=)
    assert host_info.systemd_version("") is None
    assert host_info.systemd_version(None) is None
    assert host_info.systemd_version("not systemd at all") is None


def test_an_account_is_the_roles_only_when_it_exists_and_has_the_marker():
    assert host_info.account("vllm", 998, True) == {"name": "vllm", "exists": True, "uid": 998, "created_by_role": True}
    assert host_info.account("ubuntu", 1000, False)["created_by_role"] is False
    assert host_info.account("root", 0, False) == {"name": "root", "exists": True, "uid": 0, "created_by_role": False}
    # a marker left behind for an account that is gone does not make a new one the role's
    assert host_info.account("vllm", None, True) == {"name": "vllm", "exists": False, "uid": None, "created_by_role": False}


def test_only_absolute_paths_are_read_as_local_model_directories():
    assert host_info.local_model_paths(["/opt/m/target", "Qwen/Qwen3-0.6B", "/opt/m/target", "", None, 3]) == ["/opt/m/target"]
    assert host_info.local_model_paths(None) == []


def test_a_config_that_is_not_a_json_object_is_left_out_with_a_warning():
    assert host_info.model_config("/m", '{"vocab_size": 1024, "model_type": "llama"}') == (
        {"vocab_size": 1024, "model_type": "llama"}, None)
    config, warning = host_info.model_config("/m", "{not json")
    assert config is None and warning.startswith("/m/config.json is not JSON")
    config, warning = host_info.model_config("/m", "[1, 2]")
    assert config is None and "not a JSON object" in warning
