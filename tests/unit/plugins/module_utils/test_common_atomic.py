# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The one atomic writer: mode on the descriptor before the rename, fsync, no leftovers."""
import json
import os
import stat

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.common import atomic


def test_text_lands_whole_with_its_mode_and_directory_mode(tmp_path):
    target = tmp_path / "new" / "metrics.prom"
    old = os.umask(0o077)  # the mode asked for wins over the umask, both ways
    try:
        atomic.atomic_write_text(str(target), "a 1\n", mode=0o644, dir_mode=0o755)
    finally:
        os.umask(old)
    assert target.read_text() == "a 1\n"
    assert stat.S_IMODE(os.stat(str(target)).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(str(target.parent)).st_mode) == 0o755
    assert os.listdir(str(target.parent)) == ["metrics.prom"]


def test_mode_is_set_on_the_descriptor_before_the_rename(tmp_path, monkeypatch):
    events = []
    real_fchmod, real_replace, real_fsync = os.fchmod, os.replace, os.fsync
    monkeypatch.setattr(atomic.os, "fchmod", lambda fd, mode: (events.append(("fchmod", mode)), real_fchmod(fd, mode)))
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: (events.append(("fsync", stat.S_ISDIR(os.fstat(fd).st_mode))),
                                                        real_fsync(fd)))
    monkeypatch.setattr(atomic.os, "replace", lambda a, b: (events.append(("replace", None)), real_replace(a, b)))
    monkeypatch.setattr(atomic.os, "chmod", lambda *a: pytest.fail("chmod by path: %r" % (a,)))
    (tmp_path / "d").mkdir()
    atomic.atomic_write_text(str(tmp_path / "d" / "state.json"), "{}", mode=0o640)
    # file fsync (not a directory) before the rename, the directory's after it
    assert events == [("fchmod", 0o640), ("fsync", False), ("replace", None), ("fsync", True)]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "state.json"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        atomic.atomic_write_text(str(target), "new")
    assert target.read_text() == "old"
    assert os.listdir(str(tmp_path)) == ["state.json"]


def test_temporary_name_is_hidden_from_collectors(tmp_path, monkeypatch):
    seen = []
    real_replace = os.replace
    monkeypatch.setattr(atomic.os, "replace", lambda a, b: (seen.append(os.path.basename(a)), real_replace(a, b)))
    atomic.atomic_write_text(str(tmp_path / "jetson_specdec.prom"), "x 1\n")
    assert seen[0].startswith(".jetson_specdec.prom.") and seen[0].endswith(".tmp")


def test_json_is_sorted_and_ends_with_a_newline(tmp_path):
    target = tmp_path / "bench.json"
    atomic.atomic_write_json(str(target), {"b": 1, "a": [1, 2]})
    text = target.read_text()
    assert text.endswith("}\n") and text.index('"a"') < text.index('"b"')
    assert json.loads(text) == {"a": [1, 2], "b": 1}
