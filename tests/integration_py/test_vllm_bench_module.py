import json
import socket

import pytest

from ansible_collections.jetson.specdec.plugins.modules import vllm_bench
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module
from ansible_collections.jetson.specdec.tests.integration_py.fake_vllm import FakeVLLM


def _args(srv, **kw):
    args = {"url": srv.url, "concurrency": [1, 2], "num_prompts": 4, "warmup_prompts": 1,
            "input_len": 16, "output_len": 6, "request_timeout": 5, "max_duration": 60}
    args.update(kw)
    return args


def test_success_returns_contract_and_writes_dest(tmp_path):
    dest = tmp_path / "bench.json"
    with FakeVLLM(step_s=0.002, tokens_per_chunk=2, k_spec=2, simulated="agx_orin_64gb; time_scale=0.05") as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, dest=str(dest), power_mode="MAXN"))
    assert not failed, res
    assert res["changed"] is False
    assert [r["concurrency"] for r in res["runs"]] == [1, 2]
    assert res["runs"][0]["output_tokens"] == 24 and res["runs"][0]["tpot_ms_p50"] > 0
    assert res["spec_decode"]["acceptance_rate"] == pytest.approx(0.5)
    assert res["server"]["model"] == "tiny"
    assert res["simulated"].startswith("agx_orin_64gb")
    assert len(res["bench_warnings"]) == 1 and "simulated" in res["bench_warnings"][0]
    assert res["config"] == {"input_len": 16, "output_len": 6, "output_range_ratio": 0.0,
                             "num_prompts": 4, "warmup_prompts": 1,
                             "endpoint": "completions", "seed": 0, "prompt_set": 0, "concurrency": [1, 2],
                             "prompt_kind": "token_ids"}
    saved = json.loads(dest.read_text())
    assert saved["runs"] == res["runs"] and saved["warnings"] == res["bench_warnings"]


def test_check_mode_runs_but_does_not_write(tmp_path):
    dest = tmp_path / "bench.json"
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, dest=str(dest), _ansible_check_mode=True,
                                                        concurrency=[1]))
        assert srv.requests > 0
    assert not failed and res["runs"][0]["completed"] == 4 and not dest.exists()


def test_too_many_failures_fail_with_reasons():
    with FakeVLLM(fault="close_mid", fault_after=1) as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, concurrency=[2]))
    assert failed
    assert "stream_closed: 4" in res["msg"] and "max_failed_ratio" in res["msg"]
    assert res["runs"][0]["errors"] == {"stream_closed": 4}


def test_unreachable_server_message_names_url():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    failed, res = run_module(vllm_bench.main, {"url": "http://127.0.0.1:%d" % port})
    assert failed and "http://127.0.0.1:%d/v1/models" % port in res["msg"]


@pytest.mark.parametrize("bad", [{"concurrency": [0]}, {"num_prompts": 0}, {"max_failed_ratio": 2},
                                 {"prompt_token_ids_range": [5, 5]}, {"max_duration": 0},
                                 {"output_range_ratio": 1.0}, {"output_range_ratio": -0.5}, {"prompt_set": -1}])
def test_invalid_options_fail_before_any_request(bad):
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, **bad))
        assert srv.requests == 0
    assert failed and list(bad)[0] in res["msg"]  # the message names the option


def test_api_key_is_sent_and_not_logged():
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, api_key="s3cret", concurrency=[1]))
        assert set(srv.httpd.auth) == {"Bearer s3cret"}
    assert not failed
    assert "s3cret" not in json.dumps(res)


def test_progress_file_counts_every_request_and_ends_finished(tmp_path):
    progress = tmp_path / "state" / "bench-progress.json"
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, progress_path=str(progress)))
        sent = srv.requests
    assert not failed, res
    snap = json.loads(progress.read_text())
    # the probe, then warmup and measured requests of each level: what the server answered
    assert snap["finished"] is True and snap["step"] == "finished"
    assert snap["requests_total"] == 1 + 2 * (4 + 1) == snap["requests_done"]
    assert snap["requests_done"] <= sent and snap["levels"] == 2 and snap["level"] == 2


def test_progress_is_not_written_in_check_mode(tmp_path):
    progress = tmp_path / "bench-progress.json"
    with FakeVLLM() as srv:
        failed, res = run_module(vllm_bench.main, _args(srv, progress_path=str(progress), concurrency=[1],
                                                        _ansible_check_mode=True))
    assert not failed and not progress.exists()
