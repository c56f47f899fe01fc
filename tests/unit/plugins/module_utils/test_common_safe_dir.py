"""common/safe_dir.py: a directory for the service account is created without following the links it can plant.

The tests run as root (the unit lane does) and play the service account with uid SVC: it owns the
state directory, the parent of the cache, and plants links, FIFOs and files there.  A "system
directory" is a root-owned directory made by the test (one case points at the real /etc in check mode).
"""
import os
import stat

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.common.safe_dir import (
    MARKER,
    UnsafePathError,
    ensure_dir,
)
from ansible_collections.jetson.specdec.plugins.modules import safe_dir as safe_dir_module

from ..modules.utils import run_module

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="plays the service account with chown (needs root)")

SVC = 4321  # the service account's uid and gid
OTHER = 5432


def _owner_mode(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


@pytest.fixture
def board(tmp_path):
    """A root-owned 'system directory', and the service account's state directory (its own, 0750)."""
    root = tmp_path / "board"
    root.mkdir(mode=0o755)
    os.chmod(str(root), 0o755)
    system = root / "etc"
    system.mkdir()
    os.chmod(str(system), 0o755)
    (system / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    state = root / "state"
    state.mkdir()
    os.chown(str(state), SVC, SVC)
    os.chmod(str(state), 0o750)
    return {"root": root, "system": system, "state": state}


def _refused(path, rule, **kwargs):
    with pytest.raises(UnsafePathError) as info:
        ensure_dir(str(path), SVC, SVC, 0o750, **kwargs)
    assert info.value.rule == rule
    assert str(info.value).startswith(rule + ": ")
    return str(info.value)


def test_a_new_directory_gets_owner_mode_and_marker_and_a_second_run_changes_nothing(board):
    cache = board["state"] / "huggingface"
    result = ensure_dir(str(cache), SVC, SVC, 0o750)
    assert result["changed"] and result["created"] and result["before"] is None
    assert _owner_mode(str(cache)) == (SVC, SVC, 0o750)
    marker = cache / MARKER
    assert stat.S_ISREG(os.lstat(str(marker)).st_mode) and _owner_mode(str(marker)) == (0, 0, 0o644)
    again = ensure_dir(str(cache), SVC, SVC, 0o750)
    assert not again["changed"] and not again["created"]


def test_missing_parents_are_created_root_owned(board):
    cache = board["root"] / "data" / "models" / "hf"
    old = os.umask(0o077)
    try:
        ensure_dir(str(cache), SVC, SVC, 0o750)
    finally:
        os.umask(old)
    assert _owner_mode(str(board["root"] / "data")) == (0, 0, 0o755)
    assert _owner_mode(str(board["root"] / "data" / "models")) == (0, 0, 0o755)
    assert _owner_mode(str(cache)) == (SVC, SVC, 0o750)


def test_check_mode_says_what_it_would_create_and_creates_nothing(board):
    cache = board["state"] / "a" / "hf"
    result = ensure_dir(str(cache), SVC, SVC, 0o750, check_mode=True)
    assert result["changed"] and result["created"]
    assert not os.path.exists(str(board["state"] / "a"))


# The attack of issue 34, in several spellings: the service account replaces its cache (or a directory
# on the way to it) with a link; the system directory keeps its owner and mode, and the run is refused.
@pytest.mark.parametrize("plant", [
    "link_to_system_dir",
    "link_to_system_dir_relative",
    "link_in_a_middle_component",
    "dangling_link",
    "link_to_a_fifo",
    "link_to_the_system_dirs_parent",
])
def test_a_link_the_service_account_planted_is_not_followed(board, plant):
    state, system = board["state"], board["system"]
    cache = state / "huggingface"
    if plant == "link_to_system_dir":
        os.symlink(str(system), str(cache))
    elif plant == "link_to_system_dir_relative":
        os.symlink("../etc", str(cache))
    elif plant == "link_in_a_middle_component":
        os.symlink(str(board["root"]), str(state / "mid"))
        cache = state / "mid" / "etc"
    elif plant == "dangling_link":
        os.symlink(str(board["root"] / "nowhere" / "x"), str(cache))
    elif plant == "link_to_a_fifo":
        os.mkfifo(str(state / "fifo"))
        os.symlink(str(state / "fifo"), str(cache))
    elif plant == "link_to_the_system_dirs_parent":
        os.symlink(str(board["root"]), str(cache))
        cache = cache / "etc"
    for name in os.listdir(str(state)):  # what the service account made is its own
        os.lchown(str(state / name), SVC, SVC)
    before = _owner_mode(str(system)), sorted(os.listdir(str(system)))
    message = _refused(cache, "host.path_link")
    assert "rm " in message  # the fix
    assert (_owner_mode(str(system)), sorted(os.listdir(str(system)))) == before
    assert not os.path.exists(str(board["root"] / "nowhere"))
    # check mode refuses the same way
    _refused(cache, "host.path_link", check_mode=True)


def test_a_link_to_the_real_etc_is_refused_in_check_mode(board):
    cache = board["state"] / "huggingface"
    os.symlink("/etc", str(cache))
    os.lchown(str(cache), SVC, SVC)
    before = _owner_mode("/etc")
    _refused(cache, "host.path_link", check_mode=True)
    assert _owner_mode("/etc") == before


def test_a_root_made_link_in_a_root_only_directory_is_followed(board):
    """An operator's link to another disk (made by root where only root can write) is followed."""
    disk = board["root"] / "nvme"
    disk.mkdir()
    os.symlink(str(disk), str(board["root"] / "cache-disk"))
    result = ensure_dir(str(board["root"] / "cache-disk" / "hf"), SVC, SVC, 0o750)
    assert result["real_path"] == str(disk / "hf")
    assert _owner_mode(str(disk / "hf")) == (SVC, SVC, 0o750)


def test_a_root_owned_link_in_a_directory_others_can_write_is_not_followed(board):
    shared = board["root"] / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o1777)
    os.symlink(str(board["system"]), str(shared / "hf"))
    _refused(shared / "hf", "host.path_link")
    assert _owner_mode(str(board["system"])) == (0, 0, 0o755)


@pytest.mark.parametrize("existing", [
    "other_account_0755",
    "root_0755",
    "root_sticky_1777",
    "root_0710_like_var_lib_docker",
    "service_account_0755",
])
def test_an_existing_directory_the_collection_did_not_create_is_refused(board, existing):
    target = board["root"] / "existing"
    target.mkdir()
    uid, mode = {"other_account_0755": (OTHER, 0o755), "root_0755": (0, 0o755), "root_sticky_1777": (0, 0o1777),
                 "root_0710_like_var_lib_docker": (0, 0o710), "service_account_0755": (SVC, 0o755)}[existing]
    os.chown(str(target), uid, uid)
    os.chmod(str(target), mode)
    message = _refused(target, "host.path_foreign")
    assert "chown %d:%d" % (SVC, SVC) in message
    assert _owner_mode(str(target)) == (uid, uid, mode)
    assert not os.path.exists(str(target / MARKER))


def test_an_existing_directory_with_the_asked_owner_and_mode_is_taken_over(board):
    """What an earlier version of the role made: nothing changes but the marker."""
    target = board["state"] / "huggingface"
    target.mkdir()
    os.chown(str(target), SVC, SVC)
    os.chmod(str(target), 0o750)
    result = ensure_dir(str(target), SVC, SVC, 0o750)
    assert result["changed"] and not result["created"]
    assert os.path.isfile(str(target / MARKER))


def test_a_directory_with_the_marker_gets_the_asked_owner_and_mode(board):
    target = board["root"] / "ours"
    ensure_dir(str(target), SVC, SVC, 0o750)
    os.chown(str(target), 0, 0)
    os.chmod(str(target), 0o755)
    result = ensure_dir(str(target), SVC, SVC, 0o770)
    assert result["changed"] and result["before"] == {"uid": 0, "gid": 0, "mode": "0755"}
    assert _owner_mode(str(target)) == (SVC, SVC, 0o770)


@pytest.mark.parametrize("plant", ["fifo", "file", "file_in_the_middle"])
def test_something_else_than_a_directory_is_refused_without_blocking(board, plant):
    cache = board["state"] / "huggingface"
    if plant == "fifo":
        os.mkfifo(str(cache))
    else:
        cache.write_text("x")
        if plant == "file_in_the_middle":
            cache = cache / "hub"
    _refused(cache, "host.path_not_dir")


def test_a_link_planted_under_the_markers_name_is_not_written_through(board):
    target = board["state"] / "huggingface"
    target.mkdir()
    os.chown(str(target), SVC, SVC)
    os.chmod(str(target), 0o750)
    victim = board["system"] / "passwd"
    os.symlink(str(victim), str(target / MARKER))
    before = victim.read_text()
    ensure_dir(str(target), SVC, SVC, 0o750)
    assert victim.read_text() == before


def test_the_module_fails_with_the_rule_and_changes_nothing(board):
    cache = board["state"] / "huggingface"
    os.symlink(str(board["system"]), str(cache))
    args = {"path": str(cache), "owner": str(SVC), "group": str(SVC), "mode": "0750"}
    failed, result = run_module(safe_dir_module.main, args)
    assert failed and result["rule"] == "host.path_link"
    assert "nothing was changed" in result["msg"]
    assert _owner_mode(str(board["system"])) == (0, 0, 0o755)


def test_the_module_creates_and_reports_a_diff(board):
    cache = board["state"] / "huggingface"
    args = {"path": str(cache), "owner": str(SVC), "group": "root", "mode": "0770"}
    failed, result = run_module(safe_dir_module.main, args)
    assert not failed and result["changed"] and result["created"]
    assert result["diff"]["before"]["state"] == "absent"
    assert result["diff"]["after"] == {"path": str(cache), "state": "directory", "uid": SVC, "gid": 0, "mode": "0770"}
    assert _owner_mode(str(cache)) == (SVC, 0, 0o770)


def test_check_mode_before_the_account_exists_predicts_by_name(board):
    cache = board["state"] / "huggingface"
    args = {"path": str(cache), "owner": "no-such-account-specdec", "group": "no-such-group-specdec", "mode": "0750",
            "_ansible_check_mode": True}
    failed, result = run_module(safe_dir_module.main, args)
    assert not failed and result["changed"] and result["created"], result
    assert result["after"]["uid"] == "no-such-account-specdec" and not os.path.exists(str(cache))
    os.symlink(str(board["system"]), str(cache))  # the walk still refuses a planted link
    failed, result = run_module(safe_dir_module.main, args)
    assert failed and result["rule"] == "host.path_link"
    failed, result = run_module(safe_dir_module.main, dict(args, _ansible_check_mode=False))
    assert failed and "does not exist" in result["msg"]
