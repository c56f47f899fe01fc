# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""systemd quoting, checked against a parser written from systemd's documentation."""
import json
import random

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import render_spec_config_json
from ansible_collections.jetson.specdec.plugins.module_utils.launch.systemd import (
    SystemdQuoteError, systemd_command_line, systemd_quote,
)

EAGLE = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 5}


# --- a systemd-compatible parser, written from the documentation (not from our quoting) ---------
# systemd.syntax(7) "Quoting": words are split on whitespace; a word may be wrapped in single or
# double quotes (opening quote only at the start of a word, closing quote followed by whitespace
# or end of line); C-style escapes \a \b \f \n \r \t \v \\ \" \' \s \xXX \nnn \uXXXX \UXXXXXXXX
# are decoded; unknown escapes are an error here (systemd warns).  systemd.service(5) "Command
# lines": a lone ';' separates commands (a failure for us).  systemd.unit(5) "Specifiers": '%%' is
# a literal '%', any other '%X' would be expanded (a failure for us).  Environment: '$$' is a
# literal '$'; '$NAME' and '${NAME}' would be expanded (a failure for us).
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                   "\\": "\\", '"': '"', "'": "'", "s": " "}
_WS = " \t"


def _unescape(line, i):
    """Decode the escape starting after the backslash at line[i]; return (text, next index)."""
    if i >= len(line):
        raise ValueError("trailing backslash (line continuation)")
    ch = line[i]
    if ch in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[ch], i + 1
    for prefix, width, base in (("x", 2, 16), ("u", 4, 16), ("U", 8, 16)):
        if ch == prefix:
            return chr(int(line[i + 1:i + 1 + width], base)), i + 1 + width
    if ch in "01234567":
        return chr(int(line[i:i + 3], 8)), i + 3
    raise ValueError("unknown escape \\%s" % ch)


def systemd_split(line):
    words = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _WS:
            i += 1
        if i >= n:
            return words
        if line[i] == ";" and (i + 1 == n or line[i + 1] in _WS):
            raise ValueError("lone ';' would separate commands")
        quote = None
        if line[i] in "\"'":
            quote = line[i]
            i += 1
        word = []
        while True:
            if i >= n:
                if quote:
                    raise ValueError("unterminated quote")
                break
            ch = line[i]
            if quote and ch == quote:
                i += 1
                if i < n and line[i] not in _WS:
                    raise ValueError("closing quote must be followed by whitespace")
                break
            if not quote and ch in _WS:
                break
            if not quote and ch in "\"'":
                raise ValueError("quote in the middle of an unquoted word")
            if ch == "\\":
                text, i = _unescape(line, i + 1)
                word.append(text)
                continue
            word.append(ch)
            i += 1
        words.append("".join(word))


def _resolve(word):
    out, i = [], 0
    while i < len(word):
        ch = word[i]
        if ch in "%$":
            if word[i + 1:i + 2] != ch:
                raise ValueError("%r would be expanded by systemd" % word[i:i + 2])
            out.append(ch)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def systemd_argv(line):
    """What systemd passes to execve() for this ExecStart= value."""
    return [_resolve(w) for w in systemd_split(line)]


# --- the parser itself behaves like the documentation says ------------------------------------
def test_reference_parser_follows_documented_rules():
    assert systemd_argv('/bin/echo "a b" c\\sd \'e"f\'') == ["/bin/echo", "a b", "c d", 'e"f']
    assert systemd_argv('/bin/x "100%%" "$$HOME"') == ["/bin/x", "100%", "$HOME"]
    for bad in ('/bin/x %h', '/bin/x $HOME', '/bin/x ;', '/bin/x "a"b', '/bin/x "open'):
        with pytest.raises(ValueError):
            systemd_argv(bad)


# --- systemd_quote ------------------------------------------------------------------------------
@pytest.mark.parametrize("arg, expected", [
    ("serve", "serve"),
    ("--gpu-memory-utilization=0.75", "--gpu-memory-utilization=0.75"),
    ("a b", '"a b"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("C:\\path", '"C:\\\\path"'),
    ("100%", "100%%"),
    ("%h", "%%h"),
    ("$HOME", '"$$HOME"'),
    ("", '""'),
    (";", '";"'),
    ("it's", '"it\'s"'),
])
def test_systemd_quote_exact(arg, expected):
    assert systemd_quote(arg) == expected


@pytest.mark.parametrize("arg", [
    "plain", "two words", 'q"uote', "back\\slash", "trailing\\", "50%", "%i%n%%", "$x", "${FOO}", "$$",
    "tab-free but 'single'", "ünïcødé ✓ 模型", ";", "a;b", "#not-a-comment", "", " lead", "trail ",
    '{"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B","num_speculative_tokens":5}',
])
def test_systemd_quote_round_trips(arg):
    line = "/usr/bin/prog " + systemd_quote(arg)
    assert systemd_argv(line) == ["/usr/bin/prog", arg]


def test_systemd_quote_round_trips_random_strings():
    rng = random.Random(20260601)
    alphabet = "aZ09 _-./:=,@+%$\\\"';#{}[]()*?!&|<>~`é模✓"
    for dummy in range(500):
        arg = "".join(rng.choice(alphabet) for dummy in range(rng.randint(0, 24)))
        assert systemd_argv("/x " + systemd_quote(arg)) == ["/x", arg], arg


@pytest.mark.parametrize("arg", ["line\nbreak", "tab\there", "cr\rx", "nul\x00", "del\x7f", "c1\x85", "\ud800"])
def test_systemd_quote_refuses_control_characters(arg):
    with pytest.raises(SystemdQuoteError, match="control character|surrogate"):
        systemd_quote(arg)


@pytest.mark.parametrize("assignment", ["HF_HOME=/data/hf cache", "A=$HOME", "P=50%", 'Q=say "x"', "B=back\\slash"])
def test_systemd_quote_environment_keeps_dollar(assignment):
    quoted = systemd_quote(assignment, environment=True)
    # Environment= unquotes like ExecStart= but expands only specifiers, not variables.
    words = systemd_split(quoted)
    assert len(words) == 1 and words[0].replace("%%", "%") == assignment
    assert "$$" not in quoted


def test_systemd_quote_accepts_int_rejects_other_types():
    assert systemd_quote(8000) == "8000"
    for bad in (True, 1.5, None, ["a"]):
        with pytest.raises(SystemdQuoteError):
            systemd_quote(bad)


def test_systemd_command_line_round_trip_with_spec_json():
    spec = render_spec_config_json(EAGLE)
    argv = ["/usr/bin/docker", "run", "--rm", "--name", "vllm server", "vllm/vllm-openai:latest",
            "vllm", "serve", "nvidia/Llama-3.1-8B-Instruct-FP4", "--speculative-config", spec]
    line = systemd_command_line(argv)
    assert systemd_argv(line) == argv
    assert json.loads(systemd_argv(line)[-1]) == json.loads(spec)


@pytest.mark.parametrize("argv", [[], "/bin/sh -c x", ["relative/prog"], [None]])
def test_systemd_command_line_refuses_bad_argv(argv):
    with pytest.raises(SystemdQuoteError):
        systemd_command_line(argv)
