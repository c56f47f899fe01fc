"""Issue 34 low: every secret the check accepts reads back unchanged when sh and bash source the file
(the container does `set -a; . FILE`), and every '~' it refuses is one sh would have changed."""
import random
import re
import shutil
import subprocess

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import inputs

ALPHABET = "Az09._~+/=:,@%-"
SHELLS = [sh for sh in ("/bin/sh", "/bin/bash", "/bin/dash") if shutil.which(sh)]


def _values():
    rng = random.Random(34)
    values = ["~", "~root", "a:~", "a:~root", "a~b", "ab~", "k=~", "~/x", "x:~/y", "a~:b", "%~", "::~"]
    for dummy in range(300):
        values.append("".join(rng.choice(ALPHABET) for dummy in range(rng.randint(1, 8))))
    return values


@pytest.mark.parametrize("shell", SHELLS)
def test_accepted_secrets_are_read_back_unchanged_and_refused_tildes_are_not(tmp_path, shell):
    values = _values()
    env = tmp_path / "vllm.env"
    env.write_text("".join("V%d=%s\n" % (i, v) for i, v in enumerate(values)))
    script = 'set -a; . "$1"; set +a; i=0; while [ $i -lt %d ]; do eval "printf \'%%s\\n\' \\"\\$V$i\\""; i=$((i+1)); done' % len(values)
    out = subprocess.run([shell, "-c", script, "sh", str(env)], capture_output=True, text=True, check=True,
                         env={"HOME": "/nonexistent-home", "PATH": "/usr/bin:/bin"}).stdout.split("\n")[:len(values)]
    tilde_refusals = 0
    for value, read in zip(values, out):
        refused = inputs.check_secret("vllm_server_api_key", value)
        if not refused:
            assert read == value, (shell, value, read)
        elif "'~'" in refused[0] and _expands_for_sure(value):
            tilde_refusals += 1
            assert read != value, (shell, value, read)
    assert tilde_refusals >= 8


def _expands_for_sure(value):
    """A tilde-prefix sh replaces whatever the container's accounts: ~ ($HOME) or ~root (~other: if it exists)."""
    return any(re.match(r"(root)?(/|:|$)", part) for part in re.split(r"(?:^|:)~", value)[1:])
