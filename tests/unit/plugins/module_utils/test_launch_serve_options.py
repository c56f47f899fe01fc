"""Issue 34 item 3: extra vllm serve arguments are compared as the option vLLM's parser reads them."""
import argparse

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import inputs, serve_options
from ansible_collections.jetson.specdec.plugins.module_utils.launch.argv import native_argv
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import SpecConfigError

TABLE = serve_options.SERVE_OPTIONS["0.32"]


def _parser():
    """A plain argparse parser with the 0.32 table (allow_abbrev, as vLLM's)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=True)
    for name in sorted(TABLE["long"]):
        parser.add_argument("--" + name, dest=name.replace("-", "_"), action="store_const", const=True)
    return parser


def _argparse_reading(parser, spelling):
    """What ``parser`` reads ``--spelling`` as."""
    try:
        namespace, rest = parser.parse_known_args(["--" + spelling])
    except SystemExit:
        return serve_options.AMBIGUOUS, None
    chosen = [k for k, v in vars(namespace).items() if v]
    if rest:
        return serve_options.UNKNOWN, None
    return (serve_options.EXACT if spelling in TABLE["long"] else serve_options.PREFIX), chosen[0].replace("_", "-")


def _spellings():
    names = sorted(inputs.NEVER_ALLOWED) + ["enable-prefix-caching", "seed", "tensor-parallel-size", "no-enforce-eager",
                                            "spec-method", "spec-model", "spec-tokens", "max-num-batched-tokens"]
    for name in names:
        for cut in range(1, len(name) + 1):
            yield name[:cut]
    yield from ("zzz", "lora-modules", "num-scheduler-steps", "sp", "spec", "spec-m", "no-t")


def test_resolve_long_is_argparse_prefix_rule(monkeypatch):
    monkeypatch.setattr("sys.stderr", open("/dev/null", "w"))  # argparse prints its ambiguity error
    seen = 0
    parser = _parser()
    for spelling in set(_spellings()):
        status, resolved = serve_options.resolve_long(spelling, "0.32.0")
        real_status, real = _argparse_reading(parser, spelling)
        assert status == real_status, (spelling, status, resolved, real_status)
        if real is not None:
            assert resolved == [real], spelling
        seen += 1
    assert seen > 300


@pytest.mark.parametrize("spelling, expected", [
    ("api-k", "api-key"), ("gpu-memory-util", "gpu-memory-utilization"), ("trust-remote", "trust-remote-code"),
    ("speculative", "speculative-config"), ("por", "port"), ("spec-t", "spec-tokens"), ("hf-tok", "hf-token"),
])
def test_the_reviewers_prefixes_expand_to_owned_flags(spelling, expected):
    assert serve_options.resolve_long(spelling) == (serve_options.PREFIX, [expected])


# Allow-list entries the review used, and more of the class: prefixes of owned/secret flags in every
# spelling (dashes, underscores, leading --, --no- forms) and vLLM 0.32's --spec-* shorthands.
REFUSED_ALLOW_ENTRIES = [
    "api-k", "--api-k", "api_k", "API-K", "gpu-memory-util", "gpu_memory_util", "--gpu-mem", "trust-remote", "trust",
    "speculative", "speculative_conf", "por", "--po", "spec-method", "spec_model", "--spec-tokens", "spec-m", "spec",
    "hf-tok", "conf", "mod", "served", "max-model", "max-num-s", "no-trust", "no-trust-remote", "down", "midd",
    "allowed-local", "ssl-key", "kv-cache-memory", "device-mem", "num-gpu", "enforce", "no-enforce-eager", "dty", "ho",
    "enable-prefix", "max-num-batch", "a", "lora-modules=x", "spec.method", "--", "", "a b", 7, None,
]


@pytest.mark.parametrize("entry", REFUSED_ALLOW_ENTRIES)
def test_allow_list_entries_that_reach_an_owned_flag_or_abbreviate_are_refused(entry):
    out = inputs.check_extra_args([], [entry])
    assert len(out) == 1 and out[0].startswith("input.extra_flags_allowed: "), (entry, out)


@pytest.mark.parametrize("entry, arg", [
    ("api-k", "--api-k=SECRET"), ("gpu-memory-util", "--gpu-memory-util=0.99"), ("trust-remote", "--trust-remote"),
    ("speculative", "--speculative={}"), ("por", "--por=1"), ("spec-method", "--spec-method=ngram"),
    ("spec-model", "--spec_model=/x"), ("spec-tokens", "--spec-tokens=9"), ("hf-tok", "--hf_tok=hf_x"),
])
def test_an_allow_listed_abbreviation_never_reaches_argv(entry, arg):
    out = inputs.check_extra_args([arg], [entry])
    assert any(r.startswith("input.extra_flags_allowed:") for r in out), out
    assert any(r.startswith("input.extra_args:") for r in out), out
    with pytest.raises(SpecConfigError):
        native_argv(dict(model="a/b", vllm_bin="/opt/vllm/bin/vllm", extra_args=[arg], extra_flags_allowed=[entry]))


@pytest.mark.parametrize("arg", [
    "--spec-method=ngram", "--spec_method", "--spec-model=/m", "--spec-tokens=9", "--spec-t=9", "--spec-mo=x",
    "--spec-m", "--spec", "--sp", "--spec-method.x=1", "--SPEC_TOKENS=1", "--no-spec-method",
    "-sc.method=ngram", "-sc={}", "-s", "-hq", "-h=1", "-t", "-tp4", "-d", "-dp", "-asc=2", "-zz", "---api-key",
    "--=x", "--enable-prefix", "--max-num-batch=1", "--tens=1", "--no-enable-prefix",
])
def test_spellings_vllm_reads_as_owned_or_abbreviated_are_refused(arg):
    out = inputs.check_extra_args([arg])
    assert len(out) == 1 and out[0].startswith("input.extra_args:"), (arg, out)


@pytest.mark.parametrize("args, allowed", [
    (["--lora-modules=a=b"], ["lora-modules"]), (["--lora_modules", "a=b"], ["--lora_modules"]),
    (["--num-scheduler-steps=8"], []), (["-q8"], []), (["-qawq"], []), (["-tp=1"], []), (["-tp", "1"], []),
    (["-O3"], []), (["-O=3"], []), (["--optimization-level=2"], []), (["--no-enable-prefix-caching"], []),
    (["-pp=1"], []), (["--num-scheduler-steps=8"], ["num-scheduler-steps"]),
])
def test_full_names_and_short_options_pass(args, allowed):
    assert inputs.check_extra_args(args, allowed) == []


def test_every_allowed_name_is_a_full_option_or_unknown_to_the_table():
    """An allowed name must not be an abbreviation in any shipped table (argparse would expand it)."""
    for name in inputs.ALLOWED_FLAGS:
        status, resolved = serve_options.resolve_long(name)
        assert status in (serve_options.EXACT, serve_options.UNKNOWN), (name, status, resolved)
        assert not inputs._abbreviates_never(name), name  # pylint: disable=protected-access


def test_every_owned_and_secret_flag_is_in_the_0_32_table():
    for name in inputs.NEVER_ALLOWED:
        assert name in TABLE["long"], name
    for option, long_name in TABLE["short"].items():
        assert long_name in TABLE["long"], option


@pytest.mark.parametrize("version, count", [("0.32.0", 1), ("0.32", 1), ("0.20.1", 1), (None, 1), ("x", 1)])
def test_tables_fall_back_to_every_table(version, count):
    assert len(serve_options.tables(version)) == count


@pytest.mark.parametrize("args", [
    ["other/model"], ["@args.txt"], ["8"], ["--max-num-batched-tokens=4096", "other/model"],
    ["--seed=7", "7"], ["-tp=1", "2"],
])
def test_a_value_with_no_flag_before_it_is_refused(args):
    """vLLM's parser refuses a stray value (unrecognized arguments: tests/integration_py/test_launch_inputs_programs.py)."""
    refusals = inputs.check_extra_args(args)
    assert len(refusals) == 1 and refusals[0].startswith("input.extra_args:"), refusals
    assert "is a value with no flag before it" in refusals[0] and "--flag=value in one item" in refusals[0]


@pytest.mark.parametrize("args", [["--max-num-batched-tokens", "4096"], ["--seed", "7", "--block-size", "16"],
                                  ["-tp", "1"], ["--cuda-graph-sizes", "1", "2", "4"]])
def test_a_value_right_after_its_flag_passes(args):
    assert inputs.check_extra_args(args) == []
