# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Quote arguments for a systemd unit's ExecStart= and Environment= lines (pure, stdlib only).

systemd.syntax(7) "Quoting" and systemd.service(5) "Command lines": words split on
whitespace; a word may be wrapped in double quotes; inside, C-style escapes are decoded
(so '\\' and '"' need a backslash); '%' starts a specifier in every word (write '%%');
'$' starts an environment variable (write '$$').  A word that is exactly ';' separates
commands, so it is quoted too.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re


class SystemdQuoteError(ValueError):
    """An argument cannot be written safely on a systemd unit line."""


# Words made only of these characters need no quotes.
_SYSTEMD_SAFE_RE = re.compile(r"\A[A-Za-z0-9_@%+=:,./-]+\Z")


def _refuse_unprintable(arg):
    for char in arg:
        code = ord(char)
        # C0 controls (incl. newline/tab), DEL and C1 controls: a newline would end the
        # directive and let the rest of the value become a new unit-file line.
        if code < 0x20 or code == 0x7F or 0x80 <= code <= 0x9F:
            raise SystemdQuoteError(
                "systemd argument %r contains the control character U+%04X; systemd arguments must be "
                "printable text on one line" % (arg, code))
        if 0xD800 <= code <= 0xDFFF:
            raise SystemdQuoteError("systemd argument %r is not valid Unicode (lone surrogate U+%04X)"
                                    % (arg, code))


def systemd_quote(arg, environment=False):
    """Quote one argument so systemd's ExecStart= passes exactly ``arg`` to the program.

    ``environment=True`` quotes an ``Environment=`` assignment instead: systemd.exec(5)
    does not expand ``$`` there, so it must not be doubled (``%`` still is).
    """
    if isinstance(arg, int) and not isinstance(arg, bool):
        arg = str(arg)
    if not isinstance(arg, str):
        raise SystemdQuoteError("systemd_quote takes a string (or integer), got %s" % type(arg).__name__)
    _refuse_unprintable(arg)
    escaped = arg.replace("%", "%%")
    if not environment:
        escaped = escaped.replace("$", "$$")
    if _SYSTEMD_SAFE_RE.match(arg):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_command_line(argv):
    """Quote a whole argv (list of strings) for ExecStart=; argv[0] must be an absolute path."""
    if isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple)):
        raise SystemdQuoteError("systemd_command_line takes a list of arguments, not %s" % type(argv).__name__)
    if not argv:
        raise SystemdQuoteError("systemd_command_line needs at least the program path")
    if not isinstance(argv[0], str) or not argv[0].startswith("/"):
        raise SystemdQuoteError("the first ExecStart argument must be an absolute program path, got %r"
                                % (argv[0],))
    return " ".join(systemd_quote(arg) for arg in argv)
