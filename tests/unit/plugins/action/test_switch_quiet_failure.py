# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""A failed switch under no_log prints one line: ansible-core 2.19 shows a failed task's msg even then."""
from ansible_collections.jetson.specdec.plugins.action.vllm_switch import quiet_failure

JOURNAL = ("vLLM at http://127.0.0.1:8000 did not become ready: the unit restarted 1 times while starting (crash loop; "
           "last exit status 0). Cause: out_of_memory. Log:\n"
           "(EngineCore_DP0 pid=1080) ERROR 12-06 04:59:42 [core.py:708] EngineCore failed to start.\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 808.72 MiB.\n" * 40)


def test_the_journal_moves_to_detail_and_msg_is_the_first_line():
    result = quiet_failure({"failed": True, "msg": JOURNAL, "cause": "out_of_memory"})
    assert result["detail"] == JOURNAL
    assert "\n" not in result["msg"] and "EngineCore" not in result["msg"]
    assert result["msg"].startswith("vLLM at http://127.0.0.1:8000 did not become ready")
    assert "Cause: out_of_memory." in result["msg"] and not result["msg"].rstrip(")").endswith("Log:")
    assert result["msg"].endswith("(the whole message is in this result's detail)")
    assert result["cause"] == "out_of_memory"


def test_a_long_first_line_is_cut_and_a_short_message_stays_as_it_is():
    long_line = "refused: " + "x" * 1000
    result = quiet_failure({"failed": True, "msg": long_line})
    assert result["detail"] == long_line and len(result["msg"]) < 360 and "..." in result["msg"]
    short = {"failed": True, "msg": "policy.speculation_off: vllm_server_speculation is false for this host."}
    assert quiet_failure(dict(short)) == short
    assert quiet_failure({"failed": True}) == {"failed": True, "msg": "the switch failed"}
