"""`vllm serve` argument handling and speculative-config rejections (exit codes + texts)."""
import json

from conftest import EAGLE_HEAD, LLAMA_W4, run_vllm
import pytest

pytestmark = pytest.mark.simulator  # starts the stand-in on loopback


def test_version_prints_the_emulated_release(profile_file):
    result = run_vllm(["--version"], profile_file(vllm_version="0.10.2"))
    assert result.returncode == 0
    assert result.stdout.strip() == "0.10.2"


def test_unknown_flag_is_an_argparse_error(profile_file):
    result = run_vllm(["serve", LLAMA_W4, "--no-such-flag", "1"], profile_file())
    assert result.returncode == 2
    assert "vllm serve: error: unrecognized arguments: --no-such-flag 1" in result.stderr


def test_malformed_speculative_json_exits_2(profile_file):
    result = run_vllm(["serve", LLAMA_W4, "--speculative-config", "{bad"], profile_file())
    assert result.returncode == 2
    assert "argument --speculative-config/-sc: Value {bad cannot be converted to" in result.stderr


def test_speculative_config_must_be_an_object(profile_file):
    result = run_vllm(["serve", LLAMA_W4, "-sc", "[1, 2]"], profile_file())
    assert result.returncode == 2


def _serve_spec(profile_file, cfg, model=LLAMA_W4, **profile):
    return run_vllm(["serve", model, "--speculative_config", json.dumps(cfg)],
                    profile_file(**profile))


def test_unknown_method_is_a_pydantic_literal_error(profile_file):
    result = _serve_spec(profile_file, {"method": "foobar", "model": EAGLE_HEAD,
                                        "num_speculative_tokens": 3})
    assert result.returncode == 1
    assert "validation error for SpeculativeConfig" in result.stderr
    assert "type=literal_error, input_value='foobar'" in result.stderr
    assert "Input should be 'ngram', 'medusa'" in result.stderr


def test_zero_speculative_tokens_rejected(profile_file):
    result = _serve_spec(profile_file, {"method": "eagle3", "model": EAGLE_HEAD,
                                        "num_speculative_tokens": 0})
    assert result.returncode == 1
    assert "num_speculative_tokens\n  Input should be greater than 0" in result.stderr


def test_tensor_parallel_size_trap(profile_file):
    result = _serve_spec(profile_file, {"method": "eagle3", "model": EAGLE_HEAD,
                                        "num_speculative_tokens": 3, "tensor_parallel_size": 1})
    assert result.returncode == 1
    assert ("'tensor_parallel_size' is not a valid argument in the speculative_config. "
            "Please pass 'draft_tensor_parallel_size' instead.") in result.stderr


def test_draft_with_another_vocabulary_rejected(profile_file):
    result = _serve_spec(profile_file, {"method": "draft_model", "model": "Qwen/Qwen3-0.6B",
                                        "num_speculative_tokens": 3})
    assert result.returncode == 1
    assert ("Target and draft model should have the same vocabulary size. Target model "
            "vocab_size=128256. Draft model vocab_size=151936.") in result.stderr


def test_draft_model_unsupported_on_old_release(profile_file):
    result = _serve_spec(profile_file, {"method": "draft_model",
                                        "model": "meta-llama/Llama-3.2-1B-Instruct",
                                        "num_speculative_tokens": 3}, vllm_version="0.10.2")
    assert result.returncode == 1
    assert "Speculative decoding with draft model is not supported yet." in result.stderr


def test_unknown_draft_repository(profile_file):
    result = _serve_spec(profile_file, {"method": "eagle3", "model": "nobody/missing-head",
                                        "num_speculative_tokens": 3})
    assert result.returncode == 1
    assert "Invalid repository ID or local directory specified: 'nobody/missing-head'" in result.stderr


def test_eagle3_head_must_match_target(profile_file):
    result = _serve_spec(profile_file, {"method": "eagle3", "model": EAGLE_HEAD,
                                        "num_speculative_tokens": 3},
                         model="RedHatAI/Qwen3-8B-quantized.w4a16")
    assert result.returncode == 1
    assert "size mismatch" in result.stderr


def test_unknown_target_repository(profile_file):
    result = run_vllm(["serve", "nobody/missing-model"], profile_file())
    assert result.returncode == 1
    assert "ValueError: Invalid repository ID or local directory specified: " \
           "'nobody/missing-model'" in result.stderr


def test_every_start_says_it_is_simulated(profile_file):
    result = run_vllm(["serve", "nobody/missing-model"], profile_file())
    assert "SIMULATED" in result.stderr.splitlines()[0]
    assert "agx_orin_64gb" in result.stderr.splitlines()[0]
