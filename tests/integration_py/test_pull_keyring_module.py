# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""jetson.specdec.pull_keyring with the real gpg: the keyring holds exactly the configured keys (issue 34).

After the signers change from key A to key B, a commit signed by A must no longer verify: gpg --import only
adds, so the module rebuilds the keyring and swaps it in.
"""
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from unittest import mock

import pytest

from ansible_collections.jetson.specdec.plugins.modules import pull_keyring
from ansible_collections.jetson.specdec.plugins.module_utils.pull.keyring import fingerprints

from ansible_collections.jetson.specdec.tests.unit.plugins.modules.utils import run_module

pytestmark = pytest.mark.skipif(shutil.which("gpg") is None, reason="needs gpg")


def _short_dir(prefix):
    """gpg-agent's socket lives in the GnuPG home, and a Unix socket's path holds at most 107 bytes: under
    pytest-xdist a test's tmp_path (/tmp/pytest-of-root/pytest-N/popen-gw1/<test name>0/gnupg) is longer."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def _kill_agents_and_remove(path):
    for home in [path] + [p for p in path.rglob("*") if p.is_dir()]:
        if (home / "pubring.kbx").exists():
            subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True, check=False)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def tmp_path():
    """A short tmp_path for this module's GnuPG homes (see _short_dir)."""
    path = _short_dir("kr-")
    yield path
    _kill_agents_and_remove(path)


def _key(tmp_path, name):
    home = tmp_path / ("signer-" + name)
    home.mkdir(mode=0o700)
    env = dict(os.environ, GNUPGHOME=str(home))
    subprocess.run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key", "%s <%s@localhost>" % (name, name),
                    "ed25519", "sign", "1d"], env=env, check=True, capture_output=True)
    public = subprocess.run(["gpg", "--batch", "--armor", "--export"], env=env, check=True, capture_output=True,
                            text=True).stdout
    return home, public


def _sign_and_verify(signer_home, keyring, tmp_path):
    """True when a detached signature by ``signer_home`` verifies against ``keyring`` (what git verify-commit does)."""
    data = tmp_path / "data.txt"
    data.write_text("commit\n")
    sig = tmp_path / "data.sig"
    if sig.exists():
        sig.unlink()
    subprocess.run(["gpg", "--batch", "--detach-sign", "-o", str(sig), str(data)],
                   env=dict(os.environ, GNUPGHOME=str(signer_home)), check=True, capture_output=True)
    return subprocess.run(["gpg", "--batch", "--no-autostart", "--homedir", str(keyring), "--verify", str(sig), str(data)],
                          capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="module")
def keys():
    tmp = _short_dir("keys-")
    made = {"A": _key(tmp, "a"), "B": _key(tmp, "b")}
    yield made
    _kill_agents_and_remove(tmp)  # signing started a gpg-agent per signer home


def _keyring(tmp_path):
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    return home


def test_switching_from_key_a_to_key_b_drops_a(keys, tmp_path):
    home = _keyring(tmp_path)
    failed, result = run_module(pull_keyring.main, {"path": str(home), "keys": keys["A"][1]})
    assert not failed and result["changed"], result
    assert _sign_and_verify(keys["A"][0], home, tmp_path)
    failed, result = run_module(pull_keyring.main, {"path": str(home), "keys": keys["B"][1]})
    assert not failed and result["changed"] and result["removed"], result
    assert not _sign_and_verify(keys["A"][0], home, tmp_path), "a commit signed by the dropped key A still verifies"
    assert _sign_and_verify(keys["B"][0], home, tmp_path)
    failed, again = run_module(pull_keyring.main, {"path": str(home), "keys": keys["B"][1]})
    assert not failed and not again["changed"], again
    assert [p for p in os.listdir(home) if p.startswith(".rebuild-")] == []


def test_a_key_added_by_hand_or_a_legacy_keyring_is_removed(keys, tmp_path):
    home = _keyring(tmp_path)
    run_module(pull_keyring.main, {"path": str(home), "keys": keys["B"][1]})
    subprocess.run(["gpg", "--batch", "--no-autostart", "--homedir", str(home), "--import"], input=keys["A"][1],
                   text=True, check=True, capture_output=True)
    assert _sign_and_verify(keys["A"][0], home, tmp_path)
    (home / "pubring.gpg").write_bytes(b"legacy")
    failed, result = run_module(pull_keyring.main, {"path": str(home), "keys": keys["B"][1]})
    assert not failed and result["changed"] and "pubring.gpg" in result["stray_files"], result
    assert not (home / "pubring.gpg").exists()
    assert not _sign_and_verify(keys["A"][0], home, tmp_path)


def test_both_keys_when_both_are_configured_and_check_mode_changes_nothing(keys, tmp_path):
    home = _keyring(tmp_path)
    run_module(pull_keyring.main, {"path": str(home), "keys": keys["A"][1]})
    before = (home / "pubring.kbx").read_bytes()
    failed, result = run_module(pull_keyring.main, {"path": str(home), "keys": keys["A"][1] + keys["B"][1],
                                                    "_ansible_check_mode": True})
    assert not failed and result["changed"] and result["added"], result
    assert (home / "pubring.kbx").read_bytes() == before
    run_module(pull_keyring.main, {"path": str(home), "keys": keys["A"][1] + keys["B"][1]})
    assert _sign_and_verify(keys["A"][0], home, tmp_path) and _sign_and_verify(keys["B"][0], home, tmp_path)


@pytest.mark.parametrize("bad", ["", "not a key", "-----BEGIN PGP PUBLIC KEY BLOCK-----\nx\n-----END PGP PUBLIC KEY BLOCK-----\n"])
def test_text_without_a_key_fails_and_keeps_the_keyring(keys, tmp_path, bad):
    home = _keyring(tmp_path)
    run_module(pull_keyring.main, {"path": str(home), "keys": keys["A"][1]})
    before = (home / "pubring.kbx").read_bytes()
    failed, result = run_module(pull_keyring.main, {"path": str(home), "keys": bad})
    assert failed and "no public key" in result["msg"], result
    assert (home / "pubring.kbx").read_bytes() == before


def test_a_link_or_an_open_folder_is_refused(keys, tmp_path):
    target = _keyring(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(target)
    failed, result = run_module(pull_keyring.main, {"path": str(link), "keys": keys["A"][1]})
    assert failed and "symbolic link" in result["msg"]
    target.chmod(0o755)
    failed, result = run_module(pull_keyring.main, {"path": str(target), "keys": keys["A"][1]})
    assert failed and "0700" in result["msg"]


def test_fingerprints_reads_colon_output():
    out = "pub:u:255:22:AAAA:1:::u:::scESC:\nfpr:::::::::ABCDEF:\nsub:u:255:18:BBBB:1::::::e:\nfpr:::::::::abc123:\n"
    assert fingerprints(out) == ["ABC123", "ABCDEF"]


# A signing key that expires or is revoked (issue 34, faults not injected yet): gpg --verify still exits 0 on a
# signature by an expired key ("Good signature ... This key has expired"); git verify-commit, which ansible-pull
# runs, reads gpg's status (EXPKEYSIG, REVKEYSIG) and refuses. Time is moved with gpg's --faked-system-time.
def _faked_gpg(tmp_path, when):
    wrapper = tmp_path / ("gpg-at-" + when.replace("!", ""))
    wrapper.write_text("#!/bin/sh\nexec gpg --faked-system-time %s \"$@\"\n" % when)
    wrapper.chmod(0o755)
    return str(wrapper)


def _signed_commit(tmp_path, signer_home, name):
    repo = tmp_path / "repo"
    if not repo.exists():
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = dict(os.environ, GNUPGHOME=str(signer_home))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=%s@localhost" % name, "-c", "user.signingkey=%s@localhost" % name,
           "-c", "gpg.program=gpg"]
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-S", "-m", "signed"], env=env, check=True, capture_output=True)
    return repo


def _verify_commit(repo, keyring, gpg_program="gpg"):
    """git verify-commit HEAD against ``keyring`` (what ansible-pull --verify-commit runs): (ok, gpg's words)."""
    result = subprocess.run(["git", "-C", str(repo), "-c", "gpg.program=" + gpg_program, "verify-commit", "HEAD"],
                            env=dict(os.environ, GNUPGHOME=str(keyring)), capture_output=True, text=True, check=False)
    return result.returncode == 0, result.stderr


def _warnings(args):
    seen = []
    with mock.patch.object(pull_keyring.AnsibleModule, "warn", lambda self, text: seen.append(text)):
        failed, result = run_module(pull_keyring.main, args)
    return failed, result, seen


def _verified_now_refused_two_days_later(tmp_path, signer, home, name):
    """A commit signed now verifies against the keyring; on the board's clock two days later (the key or its
    signing subkey expired after one), the same commit and keyring are refused."""
    repo = _signed_commit(tmp_path, signer, name)
    ok, words = _verify_commit(repo, home)
    assert ok, words
    later = time.strftime("%Y%m%dT%H%M%S!", time.gmtime(time.time() + 2 * 86400))
    ok, words = _verify_commit(repo, home, _faked_gpg(tmp_path, later))
    assert not ok and "expired" in words, words
    subprocess.run(["gpgconf", "--homedir", str(signer), "--kill", "gpg-agent"], capture_output=True, check=False)


def test_a_key_that_expires_soon_is_reported_and_its_commits_are_refused_once_it_expired(tmp_path):
    signer, public = _key(tmp_path, "soon")  # expires in one day
    home = _keyring(tmp_path)
    failed, result, warned = _warnings({"path": str(home), "keys": public})
    assert not failed and result["changed"], result
    [entry] = result["keys"]
    assert entry["days_left"] == 0 and entry["expires"].endswith("Z") and not entry["revoked"], entry
    assert any("expires on %s" % entry["expires"] in w and entry["fingerprint"] in w for w in warned), warned
    failed, result, warned = _warnings({"path": str(home), "keys": public, "expiry_warn_days": 0})
    assert not failed and warned == [], warned
    _verified_now_refused_two_days_later(tmp_path, signer, home, "soon")


def _refused_beside_a_good_key_and_the_keyring_stays(keys, tmp_path, bad):
    """Configure ``bad`` alone and next to key A on a keyring that holds A: each is refused with
    input.pull_key_expired, the keyring stays byte for byte, A still verifies. Returns the two messages."""
    home = _keyring(tmp_path)
    run_module(pull_keyring.main, {"path": str(home), "keys": keys["A"][1]})
    before = (home / "pubring.kbx").read_bytes()
    messages = []
    for configured in (bad, keys["A"][1] + bad):
        failed, result = run_module(pull_keyring.main, {"path": str(home), "keys": configured})
        assert failed and result["rule"] == "input.pull_key_expired", result
        assert (home / "pubring.kbx").read_bytes() == before
        messages.append(result["msg"])
    assert _sign_and_verify(keys["A"][0], home, tmp_path)
    return messages


def test_an_expired_key_is_refused_naming_the_rule_and_the_fix_and_the_keyring_stays(keys, tmp_path):
    old = tmp_path / "old"
    old.mkdir(mode=0o700)
    env = dict(os.environ, GNUPGHOME=str(old))
    subprocess.run(["gpg", "--batch", "--faked-system-time", "20200101T000000!", "--passphrase", "",
                    "--quick-gen-key", "old <old@localhost>", "ed25519", "sign", "10d"], env=env, check=True, capture_output=True)
    expired = subprocess.run(["gpg", "--batch", "--armor", "--export"], env=env, check=True, capture_output=True,
                             text=True).stdout
    for msg in _refused_beside_a_good_key_and_the_keyring_stays(keys, tmp_path, expired):
        assert "expired on 2020-01-11" in msg and "gpg --quick-set-expire" in msg, msg


def test_a_revoked_key_is_installed_with_its_revocation_and_its_commits_are_refused(tmp_path):
    signer, public = _key(tmp_path, "revoked")
    home = _keyring(tmp_path)
    run_module(pull_keyring.main, {"path": str(home), "keys": public})
    repo = _signed_commit(tmp_path, signer, "revoked")
    assert _verify_commit(repo, home)[0]
    env = dict(os.environ, GNUPGHOME=str(signer))
    [cert] = list((signer / "openpgp-revocs.d").iterdir())
    text = cert.read_text().replace(":-----BEGIN", "-----BEGIN")  # gpg guards the stored certificate with a colon
    subprocess.run(["gpg", "--batch", "--import"], input=text, text=True, env=env, check=True, capture_output=True)
    revoked = subprocess.run(["gpg", "--batch", "--armor", "--export"], env=env, check=True, capture_output=True,
                             text=True).stdout
    failed, result, warned = _warnings({"path": str(home), "keys": revoked})
    assert not failed and result["changed"] and result["keys"][0]["revoked"], result
    assert any("revoked" in w for w in warned), warned
    ok, words = _verify_commit(repo, home)
    assert not ok and "revoked" in words.lower(), words


# A long-lived certification key with a short-lived signing subkey (issue 34, left from the first round): the
# primary key's own expiry says nothing about when signed commits stop verifying.
def _cert_key_with_signing_subkey(tmp_path, name, sub_expiry, when=None):
    home = tmp_path / ("signer-" + name)
    home.mkdir(mode=0o700)
    env = dict(os.environ, GNUPGHOME=str(home))
    faked = ["--faked-system-time", when] if when else []
    generate = ["--passphrase", "", "--quick-gen-key", "%s <%s@localhost>" % (name, name), "ed25519", "cert", "10y"]
    subprocess.run(["gpg", "--batch"] + faked + generate, env=env, check=True, capture_output=True)
    listed = subprocess.run(["gpg", "--batch", "--with-colons", "--list-keys"], env=env, check=True, capture_output=True,
                            text=True).stdout
    primary = fingerprints(listed)[0]
    add = ["--passphrase", "", "--quick-add-key", primary, "ed25519", "sign", sub_expiry]
    subprocess.run(["gpg", "--batch"] + faked + add, env=env, check=True, capture_output=True)
    public = subprocess.run(["gpg", "--batch", "--armor", "--export"], env=env, check=True, capture_output=True,
                            text=True).stdout
    return home, public, primary


def test_a_signing_subkey_that_expires_before_its_key_is_warned_about_and_its_commits_refused_after(tmp_path):
    signer, public, primary = _cert_key_with_signing_subkey(tmp_path, "subsoon", "1d")
    home = _keyring(tmp_path)
    failed, result, warned = _warnings({"path": str(home), "keys": public})
    assert not failed and result["changed"], result
    [entry] = result["keys"]
    [sub] = entry["signing_subkeys"]
    # the key itself has ten years; what verifies ends with the subkey tomorrow
    assert entry["days_left"] > 3000 and entry["signing_days_left"] == 0, entry
    assert entry["signing_expires"] == sub["expires"] and sub["fingerprint"] != primary, entry
    [warning] = warned
    assert "signing subkey %s of the key %s" % (sub["fingerprint"], primary) in warning, warning
    assert "gpg --quick-set-expire %s 1y %s" % (primary, sub["fingerprint"]) in warning, warning
    assert "gpg --quick-add-key %s ed25519 sign 1y" % primary in warning, warning
    _verified_now_refused_two_days_later(tmp_path, signer, home, "subsoon")


def test_a_key_whose_only_signing_subkey_expired_is_refused_and_the_keyring_stays(keys, tmp_path):
    signer, public, primary = _cert_key_with_signing_subkey(tmp_path, "subold", "10d", when="20200101T000000!")
    for msg in _refused_beside_a_good_key_and_the_keyring_stays(keys, tmp_path, public):
        assert "signing subkey" in msg and "of the key %s" % primary in msg, msg
        assert "expired on 2020-01-11" in msg and "gpg --quick-add-key %s" % primary in msg, msg
    subprocess.run(["gpgconf", "--homedir", str(signer), "--kill", "gpg-agent"], capture_output=True, check=False)


def test_a_renewed_signing_subkey_counts_not_the_expired_one_beside_it(tmp_path):
    signer, public, primary = _cert_key_with_signing_subkey(tmp_path, "rotated", "1d")
    env = dict(os.environ, GNUPGHOME=str(signer))
    subprocess.run(["gpg", "--batch", "--passphrase", "", "--quick-add-key", primary, "ed25519", "sign", "2y"],
                   env=env, check=True, capture_output=True)
    public = subprocess.run(["gpg", "--batch", "--armor", "--export"], env=env, check=True, capture_output=True,
                            text=True).stdout
    failed, result, warned = _warnings({"path": str(_keyring(tmp_path)), "keys": public})
    assert not failed and warned == [], (result, warned)
    [entry] = result["keys"]
    assert len(entry["signing_subkeys"]) == 2 and entry["signing_days_left"] >= 700, entry
    subprocess.run(["gpgconf", "--homedir", str(signer), "--kill", "gpg-agent"], capture_output=True, check=False)
