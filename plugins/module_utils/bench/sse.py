# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Incremental Server-Sent Events parser (standard library only).

Fed with raw socket blocks of any size, it returns the ``data`` payloads of
every event completed by that block.  It works on bytes and only decodes a
payload once, so per-chunk cost stays small at dozens of concurrent streams.
Follows the WHATWG framing: lines end in LF, CRLF or CR; a blank line ends an
event; lines starting with ``:`` are comments (keep-alives); ``data:`` lines
of one event are joined with LF; other fields (event, id, retry) are ignored.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class SSEParser(object):
    """Accumulate bytes; ``feed`` returns the list of completed data payloads."""

    __slots__ = ("_buf", "_data", "_pending_cr")

    def __init__(self):
        self._buf = b""
        self._data = None  # list of data lines of the event being built
        self._pending_cr = False

    def feed(self, block):
        if not block:
            return []
        if self._pending_cr and block[:1] == b"\n":
            # The CR of a CRLF ended the previous block: drop the LF half.
            block = block[1:]
        self._pending_cr = block[-1:] == b"\r"
        buf = self._buf + block
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._buf = lines.pop()  # the unterminated tail (b"" if none)
        events = []
        for line in lines:
            if not line:
                if self._data is not None:
                    events.append(b"\n".join(self._data).decode("utf-8", "replace"))
                    self._data = None
                continue
            if line[:1] == b":":
                continue  # comment / keep-alive ping
            if line[:5] == b"data:":
                value = line[5:]
                if value[:1] == b" ":
                    value = value[1:]
                if self._data is None:
                    self._data = [value]
                else:
                    self._data.append(value)
            # Any other field name (event, id, retry, garbage) carries no data.
        return events

    def close(self):
        """End of stream: flush an event whose final blank line never came.

        vLLM's reference client does the same for a trailing ``data:`` line,
        so a server that omits the last blank line is not penalised.
        """
        events = []
        tail, self._buf = self._buf, b""
        if tail and tail[:5] == b"data:":
            value = tail[5:]
            if value[:1] == b" ":
                value = value[1:]
            if self._data is None:
                self._data = []
            self._data.append(value)
        if self._data is not None:
            events.append(b"\n".join(self._data).decode("utf-8", "replace"))
            self._data = None
        return events
