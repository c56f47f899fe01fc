# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The pull-mode script against faults of its checkout, with the real ansible-pull, git and gpg (issue 34).

No Docker: roles/pull_mode/templates/pull.sh.j2 is rendered with the role's variables
(tests/pull_mode/render_pull_script.yml) and run as the service would run it, against a bare repository on
disk whose commits are signed with a key made for the test (tests/pull_mode/run_pull_mode.py's helpers), a
keyring built by jetson.specdec.pull_keyring, and a playbook that copies the commit's VERSION to a mark file.

A git fetch cut by power loss: a checkout left with a stale lock, an empty HEAD, a half-written ref, a
truncated pack, a half-written file or no .git at all made every later ansible-pull fail. The script sets
the broken checkout aside (kept, named in the log), ansible-pull clones again and verifies the signature, and
the pull metric says it repaired; an unsigned head is still refused after a repair.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import time

import pytest

from ansible_collections.jetson.specdec.plugins.modules import pull_keyring
from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
STALE = 3600  # a lock left by a run an hour ago

pytestmark = pytest.mark.skipif(shutil.which("gpg") is None or shutil.which("git") is None, reason="needs gpg and git")

PLAYBOOK = """---
- name: The pull-mode test playbook
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Say which commit ran
      ansible.builtin.copy:
        src: "{{ playbook_dir }}/../VERSION"
        dest: "{{ lookup('ansible.builtin.env', 'PULL_TEST_MARK') }}"
        mode: "0644"
"""


def _helpers():
    path = os.path.join(REPO, "tests", "pull_mode", "run_pull_mode.py")
    spec = importlib.util.spec_from_file_location("run_pull_mode", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HELPERS = _helpers()


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300, **kwargs)


class Board(object):
    """One board's pull mode in a folder: the script, its keyring, inventory, log and textfile folders."""

    def __init__(self, root, key):
        self.root = root
        self.key = key
        self.src = os.path.join(root, "src")
        self.bare = os.path.join(root, "specdec.git")
        self.base = os.path.join(root, "pull")
        self.checkout = os.path.join(self.base, "ansible_collections", "jetson", "specdec")
        self.aside = os.path.join(self.base, "set-aside")
        self.config = os.path.join(root, "etc")
        self.gnupg = os.path.join(root, "gnupg")
        self.logs = os.path.join(root, "log")
        self.textfiles = os.path.join(root, "textfile")
        self.script = os.path.join(root, "jetson-specdec-pull")
        self.mark = os.path.join(root, "ran")

    def git(self, *argv, key=None, cwd=None, env=None):
        result = run(HELPERS.git_cmd(key) + list(argv), cwd=cwd or self.src, env=env)
        assert result.returncode == 0, (argv, result.stdout, result.stderr)
        return result.stdout.strip()

    def commit(self, version, signed_by=None, gpg_program="gpg"):
        """A commit on main that sets VERSION, signed by ``signed_by`` (a key of make_signing_key) or unsigned."""
        with open(os.path.join(self.src, "VERSION"), "w") as handle:
            handle.write(version + "\n")
        self.git("add", "VERSION")
        argv = ["commit", "-q", "-m", "version " + version]
        env = None
        if signed_by:
            argv = ["-c", "gpg.program=" + gpg_program] + argv
            env = dict(os.environ, GNUPGHOME=signed_by[0])
        self.git(*argv, key=signed_by, env=env)
        self.git("push", "-q", "-f", self.bare, "main")
        return self.git("rev-parse", "HEAD")

    def set_head(self, sha):
        self.git("--git-dir", self.bare, "update-ref", "refs/heads/main", sha, cwd=self.root)

    def setup(self):
        os.makedirs(os.path.join(self.src, "playbooks"))
        with open(os.path.join(self.src, "playbooks", "pull.yml"), "w") as handle:
            handle.write(PLAYBOOK)
        self.git("init", "-q", "-b", "main", self.src, cwd=self.root)
        self.git("add", "playbooks/pull.yml")
        assert run(["git", "init", "-q", "--bare", "-b", "main", self.bare]).returncode == 0
        signed = self.commit("1", signed_by=self.key)
        os.makedirs(os.path.join(self.config, "pull-inventory"))
        with open(os.path.join(self.config, "pull-inventory", "hosts.yml"), "w") as handle:
            handle.write("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                         "      ansible_python_interpreter: %s\n" % os.path.join(VENV_BIN, "python"))
        os.makedirs(os.path.dirname(self.checkout))
        os.mkdir(self.gnupg, 0o700)
        failed, result = run_module(pull_keyring.main, {"path": self.gnupg, "keys": self.key[2]})
        assert not failed, result
        extra = {
            "pull_script_dest": self.script,
            "pull_mode_repo_url": "file://" + self.bare,
            "pull_mode_ansible_pull_bin": os.path.join(VENV_BIN, "ansible-pull"),
            "pull_mode_git_bin": shutil.which("git"),
            "pull_mode_checkout_base": self.base,
            "pull_mode_config_dir": self.config,
            "pull_mode_gnupg_home": self.gnupg,
            "pull_mode_log_dir": self.logs,
            "pull_mode_textfile_dir": self.textfiles,
        }
        argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local",
                "-e", "ansible_python_interpreter=" + os.path.join(VENV_BIN, "python"),
                os.path.join(REPO, "tests", "pull_mode", "render_pull_script.yml")]
        for name, value in extra.items():
            argv[1:1] = ["-e", "%s=%s" % (name, value)]
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"),
                   ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
        result = run(argv, env=env, cwd=REPO)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        return signed

    def env(self):
        """What the service's unit gives the script (roles/pull_mode/vars/main.yml), plus the mark's path."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANSIBLE_", "GIT_", "GNUPG", "PYTHON")) and k != "PYTHONPATH"}
        env.update(ANSIBLE_COLLECTIONS_PATH=self.base, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0",
                   GNUPGHOME=self.gnupg, PULL_TEST_MARK=self.mark,
                   PATH=VENV_BIN + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        return env

    def fire(self):
        """Run the script as the service would: (exit code, pull log, {metric: value}, what the playbook wrote)."""
        if os.path.exists(self.mark):
            os.unlink(self.mark)
        result = run([self.script], env=self.env(), cwd="/")
        with open(os.path.join(self.logs, "pull.log")) as handle:
            log = handle.read()
        with open(os.path.join(self.textfiles, "jetson_specdec_pull.prom")) as handle:
            metrics = dict(re.findall(r"^(jetson_specdec_pull_\w+) (\S+)$", handle.read(), re.M))
        ran = None
        if os.path.exists(self.mark):
            with open(self.mark) as handle:
                ran = handle.read().strip()
        return result.returncode, log, metrics, ran

    def head(self):
        return run(["git", "--git-dir", os.path.join(self.checkout, ".git"), "rev-parse", "HEAD"]).stdout.strip()

    def set_aside(self):
        return sorted(os.listdir(self.aside)) if os.path.isdir(self.aside) else []


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("pull-board"))
    key = HELPERS.make_signing_key(os.path.join(root, "signer"))
    made = Board(root, key)
    made.signed = made.setup()
    rc, log, metrics, ran = made.fire()
    assert rc == 0 and ran == "1", log[-4000:]
    assert metrics["jetson_specdec_pull_last_repaired"] == "0", metrics
    made.good = os.path.join(root, "good-checkout")
    shutil.copytree(made.checkout, made.good, symlinks=True)
    yield made
    run(["gpgconf", "--homedir", key[0], "--kill", "gpg-agent"])


def _restore(board):
    if os.path.lexists(board.checkout):
        shutil.rmtree(board.checkout)
    shutil.copytree(board.good, board.checkout, symlinks=True)


def _stale(path):
    os.utime(path, (time.time() - STALE, time.time() - STALE))


def _lock(name):
    def breakage(checkout):
        path = os.path.join(checkout, ".git", name)
        with open(path, "w") as handle:
            handle.write("")
        _stale(path)
    return breakage


def _empty_head(checkout):
    open(os.path.join(checkout, ".git", "HEAD"), "w").close()


def _half_written_ref(checkout):
    with open(os.path.join(checkout, ".git", "HEAD")) as handle:
        head = handle.read()
    # a branch's ref file, or HEAD itself when ansible-pull's checkout left it detached
    path = os.path.join(checkout, ".git", head.split("ref:", 1)[1].strip() if head.startswith("ref:") else "HEAD")
    sha = run(["git", "--git-dir", os.path.join(checkout, ".git"), "rev-parse", "HEAD"]).stdout.strip()
    with open(path, "w") as handle:
        handle.write(sha[:17])


def _truncated_objects(checkout):
    """Every pack and loose object cut to half its size, as a cut write leaves it."""
    objects = os.path.join(checkout, ".git", "objects")
    cut = 0
    for folder, _dirs, files in os.walk(objects):
        for name in files:
            if name.endswith(".pack") or re.match(r"\A[0-9a-f]{38}\Z", name):
                path = os.path.join(folder, name)
                size = os.path.getsize(path)
                os.chmod(path, 0o644)
                with open(path, "r+b") as handle:
                    handle.truncate(size // 2)
                cut += 1
    assert cut, "no object to cut in %s" % objects


def _half_written_file(checkout):
    path = os.path.join(checkout, "playbooks", "pull.yml")
    with open(path) as handle:
        text = handle.read()
    with open(path, "w") as handle:
        handle.write(text[:len(text) // 2])


def _no_git(checkout):
    shutil.rmtree(os.path.join(checkout, ".git"))


BREAKAGES = [
    ("stale index.lock", _lock("index.lock"), "git lock files older than this run: .git/index.lock"),
    ("stale shallow.lock", _lock("shallow.lock"), "git lock files older than this run: .git/shallow.lock"),
    ("empty HEAD", _empty_head, "HEAD names no commit"),
    ("half-written ref", _half_written_ref, "HEAD names no commit"),
    ("truncated objects", _truncated_objects, ""),
    ("half-written file", _half_written_file, "tracked files differ from HEAD"),
    ("clone cut before .git", _no_git, "it holds files but no .git"),
]


@pytest.mark.parametrize("why,breakage,reason", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_a_checkout_broken_by_a_cut_is_set_aside_and_cloned_again(board, why, breakage, reason):
    _restore(board)
    breakage(board.checkout)
    before = board.set_aside()
    rc, log, metrics, ran = board.fire()
    assert rc == 0, "%s: the pull failed:\n%s" % (why, log[-4000:])
    assert ran == "1", "%s: the playbook did not run:\n%s" % (why, log[-4000:])
    assert metrics["jetson_specdec_pull_last_repaired"] == "1", metrics
    assert metrics["jetson_specdec_pull_last_exit_code"] == "0", metrics
    match = re.search(r"^pull: repaired: the checkout \S+ was broken \((.*)\); set aside as (\S+); cloning again$", log, re.M)
    assert match, log[:3000]
    assert reason in match.group(1), (reason, match.group(1))
    kept = match.group(2)
    assert os.path.isdir(kept) and kept.startswith(board.aside + os.sep), kept
    assert len(board.set_aside()) == min(len(before) + 1, 3), board.set_aside()
    assert board.head() == board.signed
    verify = run(["git", "--git-dir", os.path.join(board.checkout, ".git"), "verify-commit", "HEAD"],
                 env=dict(os.environ, GNUPGHOME=board.gnupg))
    assert verify.returncode == 0 and "Good signature" in verify.stderr, verify.stderr


def test_a_sound_checkout_is_left_alone_and_a_live_lock_is_not_stale(board):
    _restore(board)
    before = board.set_aside()
    rc, log, metrics, ran = board.fire()
    assert rc == 0 and ran == "1" and metrics["jetson_specdec_pull_last_repaired"] == "0", log[-3000:]
    assert "pull: repaired" not in log and board.set_aside() == before
    # a lock taken during this run (another git at work, not a cut) is not a broken checkout
    lock = os.path.join(board.checkout, ".git", "index.lock")
    open(lock, "w").close()
    future = time.time() + 60
    os.utime(lock, (future, future))
    rc, log, metrics, ran = board.fire()
    assert metrics["jetson_specdec_pull_last_repaired"] == "0" and board.set_aside() == before, log[-3000:]
    os.unlink(lock)


def test_only_the_newest_set_aside_checkouts_stay_and_each_removal_is_logged(board):
    while len(board.set_aside()) < 3:  # the earlier repairs' set-aside checkouts count (when they ran)
        _restore(board)
        _empty_head(board.checkout)
        rc, log, metrics, _ran = board.fire()
        assert rc == 0 and metrics["jetson_specdec_pull_last_repaired"] == "1", log[-3000:]
    kept = board.set_aside()
    assert len(kept) == 3, kept
    _restore(board)
    _empty_head(board.checkout)
    rc, log, metrics, _ran = board.fire()
    assert rc == 0, log[-3000:]
    assert re.search(r"^pull: removing the old set-aside checkout %s \(keeping the newest 3\)$"
                     % re.escape(os.path.join(board.aside, kept[0])), log, re.M), log[:3000]
    assert board.set_aside()[:2] == kept[1:] and len(board.set_aside()) == 3


@pytest.mark.parametrize("why,breakage", [(b[0], b[1]) for b in BREAKAGES[:3]], ids=[b[0] for b in BREAKAGES[:3]])
def test_a_repair_still_refuses_an_unsigned_head(board, why, breakage):
    _restore(board)
    breakage(board.checkout)
    unsigned = board.commit("unsigned-" + why.replace(" ", "-"))
    try:
        rc, log, metrics, ran = board.fire()
        assert rc != 0 and ran is None, "%s: an unsigned commit ran:\n%s" % (why, log[-4000:])
        assert "Failed to verify GPG signature" in log, log[-4000:]
        assert metrics["jetson_specdec_pull_last_repaired"] == "1", metrics
        assert metrics["jetson_specdec_pull_last_exit_code"] != "0", metrics
        # the refused checkout is sound git: the next run does not set it aside again, and still refuses
        rc, log, metrics, ran = board.fire()
        assert rc != 0 and ran is None and metrics["jetson_specdec_pull_last_repaired"] == "0", log[-4000:]
        assert board.head() == unsigned or "Failed to verify GPG signature" in log
    finally:
        board.set_head(board.signed)
        board.git("reset", "-q", "--hard", board.signed)
