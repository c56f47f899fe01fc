# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The pinned pull-mode keyring: exactly the configured keys (pure helpers, stdlib only).

``gpg --import`` only ever adds keys, so a keyring built by importing would keep a key after it was removed
from ``pull_mode_gpg_public_keys``, and a commit signed by it would still verify.  The module
``jetson.specdec.pull_keyring`` rebuilds the keyring in a fresh folder and swaps the keybox in with one
rename whenever its keys are not exactly the configured ones.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

# Files of a GnuPG home that can hold public keys besides pubring.kbx (a legacy keyring, a keyboxd
# database, a backup): any of them would let gpg find a key that is not configured.
STRAY_KEY_FILES = ("pubring.gpg", "pubring.gpg~", "pubring.kbx~", "public-keys.d", "trustedkeys.gpg",
                   "trustedkeys.kbx")
KEYBOX = "pubring.kbx"
# gpg 2.4 may turn on keyboxd in a new home; this file keeps the keys in pubring.kbx, which the swap replaces.
COMMON_CONF = "# jetson.specdec pull_mode: keys in pubring.kbx (no keyboxd), rebuilt by jetson.specdec.pull_keyring\n"


def fingerprints(colons):
    """The fingerprints (primary keys and subkeys) in ``gpg --with-colons`` output, as a sorted list."""
    found = set()
    for line in (colons or "").splitlines():
        fields = line.split(":")
        if fields[0] == "fpr" and len(fields) > 9 and fields[9]:
            found.add(fields[9].upper())
    return sorted(found)
