# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""vllm_server input validation checked against real programs: /bin/sh, and vLLM's own argparse when the
real lane is installed (tests/unit/plugins/module_utils/test_launch_inputs.py has the pure cases)."""
import fcntl
import glob
import os
import re
import subprocess
import textwrap
import time

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import inputs
from ansible_collections.jetson.specdec.plugins.module_utils.launch.argv import CONTAINER_ENTRYPOINT


def _vllm_serve_options():
    """The real `vllm serve` option strings when the lane venv is installed (else None)."""
    # Where tests/vllm_lane/setup_venv.sh puts the lane venv (same variable, same default).
    for python in _lane_pythons():
        code = textwrap.dedent("""
            from vllm.utils.argparse_utils import FlexibleArgumentParser
            from vllm.entrypoints.launchers.cli_args import make_arg_parser
            p = make_arg_parser(FlexibleArgumentParser())
            print(" ".join(o for a in p._actions for o in a.option_strings))
        """)
        res = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300, check=False)
        if res.returncode == 0:
            return res.stdout.split()
    return None


def test_secret_alphabet_means_the_same_to_sh_and_env_files(tmp_path):
    """A value made of every accepted character reads back unchanged when sh sources the file."""
    value = "Az09._~+/=:,@%-hf_abc"
    assert inputs.check_secret("vllm_server_api_key", value) == []
    env = tmp_path / "vllm.env"
    env.write_text("# comment\nVLLM_API_KEY=%s\n" % value)
    out = subprocess.run(["/bin/sh", "-c", 'set -a; . "$1"; set +a; printf %s "$VLLM_API_KEY"', "sh", str(env)],
                         capture_output=True, text=True, check=True).stdout
    assert out == value


def test_owned_flags_are_real_vllm_flags_and_prefix_checks_match_argparse():
    options = _vllm_serve_options()
    if options is None:
        pytest.skip("no vLLM lane venv on this machine")
    long_names = {o[2:] for o in options if o.startswith("--")}
    for flag in inputs.OWNED_FLAGS:
        assert flag in long_names, flag
    for flag in ("api-key", "hf-token", "config", "middleware"):
        assert flag in long_names
    # An allowed name this vLLM does not have (older releases' flags) must not abbreviate a real flag.
    for allowed in inputs.ALLOWED_FLAGS - long_names:
        assert not [real for real in long_names if real.startswith(allowed)], allowed
    # Every real flag that reaches the owned memory/secret knobs through a prefix is caught.
    for real in long_names:
        if real in inputs.NEVER_ALLOWED:
            for cut in range(3, len(real)):
                assert inputs.check_extra_args(["--" + real[:cut] + "=1"]), real[:cut]


def test_the_container_entrypoint_runs_vllm_with_the_secrets_and_the_arguments(tmp_path):
    """Run the entrypoint with a fake `vllm` on PATH: the key is in the environment, argv passes unchanged."""
    secrets = tmp_path / "vllm.env"
    secrets.write_text("VLLM_API_KEY=k-1/2+3=\n")
    fake = tmp_path / "bin" / "vllm"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s|" "$VLLM_API_KEY" "$@"\n')
    fake.chmod(0o755)
    script = CONTAINER_ENTRYPOINT.replace("/run/secrets/vllm.env", str(secrets))
    out = subprocess.run(["/bin/sh", "-c", script, "vllm", "a/b", "--x", "with space", '{"k": 1}'],
                         capture_output=True, text=True, check=True,
                         env={"PATH": "%s:/usr/bin:/bin" % fake.parent}).stdout
    assert out == 'k-1/2+3=|serve|a/b|--x|with space|{"k": 1}|'


def _lane_pythons():
    """The Pythons of finished lane venvs, after any preparation under way has ended.

    `make test` builds the lane venv in the background while this tier runs: a venv without setup_venv.sh's
    marker is still being installed (CI once ran vLLM from one and failed), so wait for its lock, then take
    only venvs with the marker."""
    cache = os.environ.get("JETSON_SPECDEC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "jetson-specdec")
    lock = os.path.join(cache, ".vllm-lane-venv.lock")
    if os.path.exists(lock):
        with open(lock) as handle:
            deadline = time.monotonic() + 1800  # setup_venv.sh's own bound on waiting for another setup
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        pytest.fail("the lane venv's preparation held %s for 30 minutes" % lock)
                    time.sleep(5)
            fcntl.flock(handle, fcntl.LOCK_UN)
    return sorted(p for p in glob.glob(os.path.join(cache, "vllm-lane-*", "bin", "python"))
                  if os.path.exists(os.path.join(os.path.dirname(os.path.dirname(p)), ".jetson-specdec-lane-complete")))


def _lane_python():
    found = _lane_pythons()
    return found[0] if found else None


def test_the_shipped_option_table_is_the_lane_vllm_parser():
    """serve_options.SERVE_OPTIONS[<lane version>] is what tests/vllm_lane/dump_serve_options.py prints."""
    import json
    from ansible_collections.jetson.specdec.plugins.module_utils.launch import serve_options
    python = _lane_python()
    if python is None:
        pytest.skip("no vLLM lane venv on this machine")
    script = os.path.join(os.path.dirname(__file__), "..", "vllm_lane", "dump_serve_options.py")
    res = subprocess.run([python, script], capture_output=True, text=True, timeout=300, check=True)
    real = json.loads(res.stdout)
    key = ".".join(real["version"].split(".")[:2])
    assert key in serve_options.SERVE_OPTIONS, "add vLLM %s's table (dump_serve_options.py)" % real["version"]
    table = serve_options.SERVE_OPTIONS[key]
    assert real["allow_abbrev"] is True
    assert sorted(table["long"]) == real["long"]
    assert table["short"] == real["short"]


def test_what_the_real_vllm_parser_reads_hostile_spellings_as():
    """The real FlexibleArgumentParser reads the reviewers' spellings as the owned option the check names."""
    import json
    python = _lane_python()
    if python is None:
        pytest.skip("no vLLM lane venv on this machine")
    cases = {"--api-k=S": "api_key", "--gpu-memory-util=0.5": "gpu_memory_utilization", "--trust-remote": "trust_remote_code",
             "--por=9000": "port", "--spec-t=3": "spec_tokens", "--spec_method=ngram": "spec_method",
             "-sc.method=ngram": "speculative_config", "--speculative.method=ngram": "speculative_config"}
    code = textwrap.dedent("""
        import json, sys
        from vllm.entrypoints.cli.serve import ServeSubcommand
        from vllm.utils.argparse_utils import FlexibleArgumentParser
        top = FlexibleArgumentParser()
        ServeSubcommand().subparser_init(top.add_subparsers(dest="subparser"))
        base = vars(top.parse_args(["serve", "a/b"]))
        out = {}
        for arg in json.loads(sys.argv[1]):
            got = vars(top.parse_args(["serve", "a/b", arg]))
            out[arg] = sorted(k for k in got if got[k] != base.get(k))
        print(json.dumps(out))
    """)
    res = subprocess.run([python, "-c", code, json.dumps(sorted(cases))], capture_output=True, text=True,
                         timeout=300, check=True)
    real = json.loads(res.stdout.strip().splitlines()[-1])
    for arg, dest in cases.items():
        assert dest in real[arg], (arg, real[arg])
        entry = re.split(r"[=.]", arg.lstrip("-"), maxsplit=1)[0]
        assert inputs.check_extra_args([arg], [entry]), arg


def test_a_value_with_no_flag_before_it_is_refused_as_the_real_parser_refuses_it():
    """A stray value (the first item, or after --flag=value) is an unrecognized argument to the real parser: vLLM
    would not start, so the check refuses it before any host changes."""
    import json
    python = _lane_python()
    if python is None:
        pytest.skip("no vLLM lane venv on this machine")
    cases = [["--max-num-batched-tokens=4096", "other/model"], ["@args.txt"], ["4096"]]
    code = textwrap.dedent("""
        import json, sys
        from vllm.entrypoints.cli.serve import ServeSubcommand
        from vllm.utils.argparse_utils import FlexibleArgumentParser
        top = FlexibleArgumentParser()
        ServeSubcommand().subparser_init(top.add_subparsers(dest="subparser"))
        out = []
        for args in json.loads(sys.argv[1]):
            try:
                top.parse_args(["serve", "a/b"] + args)
                out.append(0)
            except SystemExit as exc:
                out.append(exc.code)
        print(json.dumps(out))
    """)
    res = subprocess.run([python, "-c", code, json.dumps(cases)], capture_output=True, text=True, timeout=300, check=True)
    assert json.loads(res.stdout.strip().splitlines()[-1]) == [2, 2, 2], res.stderr[-2000:]
    for args in cases:
        refusals = inputs.check_extra_args(args)
        assert [r for r in refusals if "is a value with no flag before it" in r] == refusals != [], (args, refusals)
    assert inputs.check_extra_args(["--max-num-batched-tokens", "4096"]) == []
    assert inputs.check_extra_args(["--max-num-batched-tokens=4096", "--seed", "7"]) == []
