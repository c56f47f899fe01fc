"""The rollout lock's warning on a host an interrupted run left mid-change (plugins/action/rollout_state.py)."""
from ansible_collections.jetson.specdec.plugins.action.rollout_state import interrupted_note

PENDING = {"status": "pending", "info": {"run_id": "killed"}, "last_good": {"kind": "baseline"}}


def test_a_pending_host_says_which_run_left_it_and_what_comes_back_first():
    note = interrupted_note("agx-01", {"rollout_state": PENDING, "needs_rollout": True})
    assert note == ("agx-01: run killed was interrupted here (status pending): restoring the last good config "
                    "(baseline) before the host is evaluated again.")


def test_a_taken_over_lock_and_a_kept_candidate_are_named():
    stored = dict(PENDING, last_good={"kind": "candidate"})
    note = interrupted_note("thor-01", {"rollout_state": stored, "needs_rollout": False,
                                        "broken": {"owner": "night-3"}})
    assert "(status pending, its lock taken over: night-3)" in note
    assert note.endswith("restoring the last good config (candidate) before anything else.")


def test_no_note_unless_the_rollouts_own_lock_found_a_pending_host():
    assert interrupted_note("h", {"rollout_state": dict(PENDING, status="kept"), "needs_rollout": False}) is None
    assert interrupted_note("h", {"rollout_state": PENDING, "needs_rollout": True, "failed": True}) is None
    # revert's and the watch's locks carry no config, hence no needs_rollout: they say what they do themselves
    assert interrupted_note("h", {"rollout_state": PENDING}) is None
    assert interrupted_note("h", {"rollout_state": None, "needs_rollout": True}) is None


def test_a_pending_state_without_a_run_id_or_last_good_still_reads():
    note = interrupted_note("h", {"rollout_state": {"status": "pending"}, "needs_rollout": True})
    assert note.startswith("h: run ? was interrupted here") and "(baseline)" in note
