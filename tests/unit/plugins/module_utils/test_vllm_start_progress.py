"""vllm/start_progress.py: what a waiting vllm_wait writes and the line the controller prints."""
from ansible_collections.jetson.specdec.plugins.module_utils.vllm.start_progress import describe, snapshot


def test_snapshot_counts_restarts_of_this_wait_only():
    props = {"ActiveState": "activating", "SubState": "auto-restart", "NRestarts": "5"}
    snap = snapshot(100.0, 170.0, 900, "/health answered None", props, 3)
    assert snap["restarts"] == 2 and snap["kind"] == "start" and snap["active_state"] == "activating"
    assert snapshot(100.0, 101.0, 900, "x", {"NRestarts": "?"}, 0)["restarts"] == 0
    assert snapshot(100.0, 101.0, 900, "x", None, 0)["active_state"] is None


def test_describe_says_how_long_the_unit_and_the_last_answer():
    snap = snapshot(100.0, 170.0, 900, "/health answered [Errno 111] Connection refused",
                    {"ActiveState": "active", "SubState": "running", "NRestarts": "0"}, 0)
    assert describe(snap, 170.0, "vLLM start") == (
        "vLLM start: waiting for vLLM to serve, 1 min 10 s of at most 15 min 00 s; unit active (running), "
        "no restart; last answer: /health answered [Errno 111] Connection refused")
    snap = snapshot(100.0, 130.0, 60, "", {"ActiveState": "activating", "SubState": "auto-restart",
                                           "NRestarts": "2"}, 0)
    assert describe(snap, 130.0) == "waiting for vLLM to serve, 30 s of at most 1 min 00 s; unit activating (auto-restart), 2 restarts"
