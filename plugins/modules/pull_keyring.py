#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: pull_keyring
short_description: Make the pull-mode keyring hold exactly the configured public keys
version_added: 0.1.0
description:
  - The keyring C(git verify-commit) checks pull-mode commits against (C(GNUPGHOME) of the pull service) must hold
    the keys of O(keys) and nothing else. C(gpg --import) only adds keys, so after the signers change from key A to
    key B a commit signed by A would still verify.
  - When the keys in O(path) are not exactly those of O(keys) (a key was removed or replaced, a key was added by
    hand, the configured text changed with the same fingerprints (a revocation, a new expiry), a legacy
    C(pubring.gpg) or a keyboxd database is there), the module imports O(keys) into a new folder
    inside O(path), checks that it holds exactly their fingerprints, and swaps the keybox C(pubring.kbx) in with one
    rename; a C(git verify-commit) running at that moment sees the old or the new keys, never none.
  - O(path) must be a directory (not a symbolic link) owned by root with no access for others.
  - Each configured key's expiry is reported (RV(keys)); a key that expires within O(expiry_warn_days) days
    gives a warning, and an already expired key is refused (rule C(input.pull_key_expired)) with the keyring left
    as it was, since a board whose only key has expired verifies no commit. Signing subkeys count the same way -
    a key whose signing subkeys expire before the key itself is warned about by that date, and a key none of
    whose signing components is still valid is refused. A revoked key is installed with its
    revocation (so commits it signed are refused) and a warning.
  - M(jetson.specdec.pull_mode) runs it after writing C(signers.asc).
author: jetson.specdec contributors (@jetson-specdec)
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: Says whether it would rebuild the keyring (changed) and changes nothing.
options:
  path:
    description: The GnuPG home of the pull service (C(pull_mode_gnupg_home)).
    type: path
    required: true
  keys:
    description: The ASCII-armored public keys that may sign commits (C(pull_mode_gpg_public_keys)).
    type: str
    required: true
  gpg_bin:
    description: The gpg program.
    type: str
    default: gpg
  expiry_warn_days:
    description: Warn when a configured key expires within this many days (C(pull_mode_gpg_key_warn_days)).
    type: int
    default: 30
"""

EXAMPLES = r"""
- name: Make the pinned keyring exactly the release signers' keys
  jetson.specdec.pull_keyring:
    path: /etc/jetson-specdec/gnupg
    keys: "{{ pull_mode_gpg_public_keys }}"
  register: pull_keyring

- name: Say which keys were dropped
  ansible.builtin.debug:
    msg: "removed from the keyring: {{ pull_keyring.removed }}"
  when: pull_keyring.removed | length > 0
"""

RETURN = r"""
fingerprints:
  description: The fingerprints (primary keys and subkeys) the keyring holds now (in check mode - would hold).
  returned: success
  type: list
  elements: str
  sample: [3AA5C34371567BD2F1A2B3C4D5E6F708192A3B4C]
removed:
  description: Fingerprints that were in the keyring and are not configured (dropped by the rebuild).
  returned: success
  type: list
  elements: str
  sample: []
added:
  description: Configured fingerprints that were not in the keyring.
  returned: success
  type: list
  elements: str
  sample: [3AA5C34371567BD2F1A2B3C4D5E6F708192A3B4C]
keys:
  description:
    - Each configured primary key with its expiry (C(expires) UTC ISO 8601, null when it never expires).
    - C(signing_subkeys) lists its subkeys that may sign; C(signing_expires) and C(signing_days_left) say when the
      last component that may sign (the key itself or a subkey) expires, which may be before the key itself.
  returned: success
  type: list
  elements: dict
  sample: [{fingerprint: 3AA5C34371567BD2F1A2B3C4D5E6F708192A3B4C, user_id: "release <release@example.org>",
            expires: "2027-06-01T00:00:00Z", days_left: 177, revoked: false, signing_subkeys: [],
            signing_expires: "2027-06-01T00:00:00Z", signing_days_left: 177}]
stray_files:
  description: Other key files that were in the keyring folder (removed by the rebuild).
  returned: success
  type: list
  elements: str
  sample: []
"""

import datetime
import hashlib
import os
import shutil
import stat
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.pull.keyring import (
    COMMON_CONF, KEYBOX, STRAY_KEY_FILES, fingerprints,
)


def _gpg(module, home, *args, **kwargs):
    argv = [module.params["gpg_bin"], "--batch", "--quiet", "--no-autostart", "--no-permission-warning",
            "--homedir", home] + list(args)
    return module.run_command(argv, **kwargs)


def _listed(module, home):
    rc, out, err = _gpg(module, home, "--with-colons", "--fixed-list-mode", "--list-keys")
    if rc != 0 and os.path.exists(os.path.join(home, KEYBOX)):
        module.fail_json(msg="gpg could not list the keys of %s (rc %d): %s" % (home, rc, err.strip()))
    return fingerprints(out) if rc == 0 else []


# sha256 of the configured key text the keyring was last built from.
CONFIGURED_DIGEST = "signers.sha256"


def _iso(stamp):
    return None if stamp is None else \
        datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _days_left(stamp, now):
    return None if stamp is None else int((stamp - now) // 86400)


def _component(fields, now):
    """A primary key or subkey line of gpg --with-colons: its expiry, revocation and whether it may sign."""
    expires = int(fields[6]) if len(fields) > 6 and fields[6].isdigit() else None
    # Field 12: the component's own capabilities in lower case (a primary key lists the whole key's in upper case).
    return {"fingerprint": None, "revoked": fields[1] == "r", "expires": _iso(expires),
            "days_left": _days_left(expires, now), "_expires": expires,
            "_signs": len(fields) > 11 and "s" in fields[11]}


def _signing_until(key):
    """The newest expiry among the key's components that may sign and are not revoked (None: one never
    expires; 0: nothing may sign). A commit signed after that verifies with no component of this key."""
    stamps = [c["_expires"] for c in [key] + key["_subkeys"] if c["_signs"] and not c["revoked"]]
    if not stamps:
        return 0
    return None if None in stamps else max(stamps)


def key_expiry(colons, now):
    """[{fingerprint, user_id, expires, days_left, revoked, signing_subkeys, signing_expires, signing_days_left}]
    of the primary keys in gpg --with-colons output.

    A signing subkey may expire before its primary key (a common rotation habit: a long-lived certification key,
    yearly signing subkeys); what a board can verify ends with the last signing component, so that is what is
    reported, warned about and refused."""
    keys = []
    current = None
    for line in colons.splitlines():
        fields = line.split(":")
        if fields[0] == "pub":
            current = dict(_component(fields, now), user_id=None, _subkeys=[])
            keys.append(current)
        elif fields[0] == "sub" and keys:
            current = _component(fields, now)
            keys[-1]["_subkeys"].append(current)
        elif current is not None and fields[0] == "fpr" and current["fingerprint"] is None and len(fields) > 9:
            current["fingerprint"] = fields[9].upper()
        elif keys and fields[0] == "uid" and keys[-1]["user_id"] is None and len(fields) > 9:
            keys[-1]["user_id"] = fields[9]
    for key in keys:
        until = _signing_until(key)
        key["_signing"] = until
        key["signing_expires"] = _iso(until) if until else None
        key["signing_days_left"] = _days_left(until, now) if until else (None if until is None else 0)
        key["signing_subkeys"] = [{n: sub[n] for n in ("fingerprint", "expires", "days_left", "revoked")}
                                  for sub in key["_subkeys"] if sub["_signs"]]
    return keys


def public_view(key):
    """A key entry as the module returns it (no private working fields)."""
    return {n: v for n, v in key.items() if not n.startswith("_")}


def _expired_text(key, now):
    """Why a configured key signs nothing a board verifies, or None."""
    if key["revoked"]:
        return None  # installed with its revocation and warned about
    if key["_expires"] is not None and key["_expires"] <= now:
        return "the key %s (%s) expired on %s" % (key["fingerprint"], key["user_id"], key["expires"])
    if key["_signing"] == 0:
        return "the key %s (%s) has no signing subkey that is not revoked" % (key["fingerprint"], key["user_id"])
    if key["_signing"] is not None and key["_signing"] <= now:
        subs = [s for s in key["_subkeys"] if s["_signs"] and not s["revoked"]]
        return "the signing subkey%s %s of the key %s (%s) expired on %s" % (
            "" if len(subs) == 1 else "s", ", ".join(s["fingerprint"] for s in subs), key["fingerprint"],
            key["user_id"], ", ".join(s["expires"] for s in subs))
    return None


def _expiry_warning(key, warn_days):
    """The warning for a key (or its signing subkeys) that stops verifying within ``warn_days``, or None."""
    if key["revoked"]:
        return ("the key %s (%s) in pull_mode_gpg_public_keys is revoked: commits it signed are refused; "
                "remove it from pull_mode_gpg_public_keys" % (key["fingerprint"], key["user_id"]))
    if key["days_left"] is not None and key["days_left"] < warn_days:
        return ("the key %s (%s) in pull_mode_gpg_public_keys expires on %s (in %d days): after that no commit it "
                "signed verifies; extend its expiry (gpg --quick-set-expire) or rotate it"
                % (key["fingerprint"], key["user_id"], key["expires"], key["days_left"]))
    if key["signing_days_left"] is not None and key["signing_days_left"] < warn_days:
        subs = [s for s in key["signing_subkeys"] if not s["revoked"]]
        newest = max(subs, key=lambda s: s["expires"])
        return ("the signing subkey %s of the key %s (%s) in pull_mode_gpg_public_keys expires on %s (in %d days), "
                "before the key itself (%s): after that no commit signed with it verifies; extend it where the "
                "secret key is (gpg --quick-set-expire %s 1y %s) or add a new signing subkey (gpg --quick-add-key "
                "%s ed25519 sign 1y), and configure the exported public key again"
                % (newest["fingerprint"], key["fingerprint"], key["user_id"], newest["expires"],
                   key["signing_days_left"], key["expires"] or "never expires", key["fingerprint"],
                   newest["fingerprint"], key["fingerprint"]))
    return None


def _write(path, text, mode=0o600):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            keys=dict(type="str", required=True, no_log=False),
            gpg_bin=dict(type="str", default="gpg"),
            expiry_warn_days=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    home = module.params["path"]
    try:
        info = os.lstat(home)
    except OSError as exc:
        module.fail_json(msg="the keyring folder %s is not there: %s" % (home, exc))
    if not stat.S_ISDIR(info.st_mode):
        module.fail_json(msg="the keyring folder %s is not a directory (a symbolic link or a file); refusing to "
                             "build the keyring through it" % home)
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        module.fail_json(msg="the keyring folder %s must be owned by the user running the role with mode 0700 "
                             "(owner %d, mode %04o)" % (home, info.st_uid, stat.S_IMODE(info.st_mode)))

    build = tempfile.mkdtemp(prefix=".rebuild-", dir=home)
    try:
        _write(os.path.join(build, "common.conf"), COMMON_CONF)
        _write(os.path.join(build, "signers.asc"), module.params["keys"])
        rc, out, err = _gpg(module, build, "--with-colons", "--import-options", "show-only", "--import",
                            os.path.join(build, "signers.asc"))
        wanted = fingerprints(out)
        if rc != 0 or not wanted:
            module.fail_json(msg="pull_mode_gpg_public_keys holds no public key gpg can read (rc %d): %s"
                                 % (rc, err.strip()))
        now = time.time()
        keys = key_expiry(out, now)
        expired = [text for text in (_expired_text(k, now) for k in keys) if text]
        if expired:
            first = next(k for k in keys if _expired_text(k, now))
            module.fail_json(
                msg="input.pull_key_expired: %s; a board verifies no commit signed with it. Extend its expiry where "
                    "the secret key is (gpg --quick-set-expire %s 1y, with the subkey's fingerprint after 1y for a "
                    "subkey) or add a new signing subkey (gpg --quick-add-key %s ed25519 sign 1y), and configure the "
                    "exported public key again, or sign with a new key and configure that one; the keyring was left "
                    "as it was." % ("; ".join(expired), first["fingerprint"], first["fingerprint"]),
                rule="input.pull_key_expired", keys=[public_view(k) for k in keys])
        for k in keys:
            warning = _expiry_warning(k, module.params["expiry_warn_days"])
            if warning:
                module.warn(warning)
        keys = [public_view(k) for k in keys]
        present = _listed(module, home)
        stray = sorted(name for name in STRAY_KEY_FILES if os.path.lexists(os.path.join(home, name)))
        conf = os.path.join(home, "common.conf")
        conf_ok = False
        if os.path.isfile(conf) and not os.path.islink(conf):
            with open(conf) as handle:
                conf_ok = handle.read() == COMMON_CONF
        result = dict(changed=False, fingerprints=wanted, removed=sorted(set(present) - set(wanted)),
                      added=sorted(set(wanted) - set(present)), stray_files=stray, keys=keys)
        # Same fingerprints is not the same keys: a revocation or a new expiry changes the key material only.
        digest = hashlib.sha256(module.params["keys"].encode("utf-8")).hexdigest() + "\n"
        marker = os.path.join(home, CONFIGURED_DIGEST)
        digest_ok = False
        if os.path.isfile(marker) and not os.path.islink(marker):
            with open(marker) as handle:
                digest_ok = handle.read() == digest
        if present == wanted and not stray and conf_ok and digest_ok:
            module.exit_json(**result)
        result["changed"] = True
        if module.check_mode:
            module.exit_json(**result)
        rc, out, err = _gpg(module, build, "--import", os.path.join(build, "signers.asc"))
        if rc != 0:
            module.fail_json(msg="gpg could not import pull_mode_gpg_public_keys (rc %d): %s" % (rc, err.strip()))
        built = _listed(module, build)
        if built != wanted:
            module.fail_json(msg="the rebuilt keyring holds %s, not the configured %s" % (built, wanted))
        with open(os.path.join(build, KEYBOX), "rb") as handle:
            os.fsync(handle.fileno())
        # One rename: a verify-commit running now reads the old or the new keybox, never a half-written one.
        os.replace(os.path.join(build, KEYBOX), os.path.join(home, KEYBOX))
        os.replace(os.path.join(build, "common.conf"), conf)
        _write(os.path.join(build, CONFIGURED_DIGEST), digest)
        os.replace(os.path.join(build, CONFIGURED_DIGEST), marker)
        for name in stray:
            target = os.path.join(home, name)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            else:
                os.unlink(target)
        dir_fd = os.open(home, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        module.exit_json(**result)
    finally:
        shutil.rmtree(build, ignore_errors=True)


if __name__ == "__main__":
    main()
