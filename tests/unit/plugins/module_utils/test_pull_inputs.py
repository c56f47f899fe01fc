# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""pull_mode's input rules (issue 34): extra arguments, environment, URL credentials, directories, unit names.

The extra-argument tests use ansible-pull's own parser (ansible.cli.pull.PullCLI of the installed ansible-core):
every spelling the allow-list accepts must change only harmless options as ansible-pull really reads it, and
every prefix and short-flag bundle of every option is tried.
"""
import contextlib
import io
import shlex

import pytest

from ansible.cli.pull import PullCLI

from ansible_collections.jetson.specdec.plugins.filter.pull_mode import argv_refusals, pull_mode_refusals
from ansible_collections.jetson.specdec.plugins.module_utils.pull import inputs

BASE = ["/usr/bin/ansible-pull", "--url", "https://git.example.invalid/fleet/specdec.git", "--checkout", "main",
        "--directory", "/var/lib/jetson-specdec/pull/ansible_collections/jetson/specdec",
        "--inventory", "/etc/jetson-specdec/pull-inventory", "--limit", "localhost", "--verify-commit"]
PLAYBOOK = "playbooks/pull.yml"


def _parser():
    cli = PullCLI(["ansible-pull"])
    cli.init_parser()
    return cli.parser


PARSER = _parser()


def parse(argv):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return vars(PARSER.parse_args(argv))
    except SystemExit:
        return None


def changed_dests(extra):
    """The dests ansible-pull's parser reads differently with ``extra`` than without (None: it refuses them)."""
    base = parse(BASE[1:] + [PLAYBOOK])
    full = parse(BASE[1:] + list(extra) + [PLAYBOOK])
    if full is None:
        return None
    return set(k for k in set(base) | set(full) if base.get(k) != full.get(k))


def refused(extra):
    found = inputs.extra_args_refusals(extra)
    return bool(found) and all(r.startswith("input.pull_extra_args:") for r in found)


ACCEPTED = [
    [], ["--clean"], ["--flush-cache"], ["--check"], ["-v"], ["-vvvv"], ["-vvvvvv"], ["--verbose"],
    ["--sleep", "30"], ["--sleep=30"], ["-s", "0"], ["-e", "rollout_force=true"], ["--extra-vars", "x=1"],
    ["--extra-vars=pull_mode_keep_reports=5"], ["-e", "pull_mode_report_dir=/var/lib/jetson-specdec/reports"],
    ["--clean", "-vv", "-e", "rollout_force=true", "-e", "a=", "--sleep", "5", "--check"],
]

# (extra arguments, why): every one must be refused.  Prefixes, bundles, attached values, quotes.
HOSTILE = [
    (["--force"], "force"), (["-f"], "short force"), (["--forc"], "prefix of --force"), (["--fo"], "prefix"),
    (["-vf"], "bundle -v -f"), (["-vvf"], "bundle"), (["-fv"], "bundle, force first"), (["-of"], "bundle -o -f"),
    (["--url=http://git.example.invalid/x.git"], "URL override"), (["-U", "http://h/x.git"], "short URL"),
    (["-Uhttp://h/x.git"], "attached URL"), (["--ur=http://h/x"], "URL prefix"), (["--u", "http://h/x"], "ambiguous u"),
    (['--checkout=main" -m ansible.builtin.command -a "touch /tmp/pwned'], "quote injection"),
    (["--checkout", "unsigned"], "checkout"), (["-C", "x"], "-C is checkout"), (["-Ccmain"], "attached checkout"),
    (["--che"], "ambiguous check/checkout"), (["--chec"], "ambiguous"), (["--checko=x"], "checkout prefix"),
    (["--directory=/tmp/evil"], "directory"), (["-d", "/tmp"], "short directory"), (["--dir=/tmp"], "prefix"),
    (["-m", "ansible.builtin.command"], "module"), (["-mshell"], "attached module"), (["--module-name=hg"], "module"),
    (["--module-n", "hg"], "module prefix"), (["-M", "/tmp/mods"], "module path"), (["--module-path=/tmp"], "path"),
    (["-i", "/tmp/inv"], "inventory"), (["--inv=/tmp/i"], "inventory prefix"), (["--inventory-file=x"], "alias"),
    (["--verify"], "verify prefix"), (["--verify-commit"], "verify"), (["--ver"], "ambiguous"),
    (["--track-subs"], "unsigned submodules"), (["--track"], "prefix"), (["--diff"], "secrets in logs"),
    (["--purge"], "purge"), (["-t", "x"], "tags"), (["--tags=x"], "tags"), (["--skip-tags=validate"], "skip"),
    (["--skip=validate"], "skip prefix"), (["-l", "all"], "limit"), (["--limit=all"], "limit"),
    (["--vault-id=x@/tmp/p"], "vault id"), (["--private-key=/tmp/k"], "key"), (["--key-file=/tmp/k"], "alias"),
    (["-c", "ssh"], "connection"), (["--conn=ssh"], "connection prefix"), (["-o"], "only-if-changed has a variable"),
    (["--full"], "has a variable"), (["--accept-host-key"], "has a variable"), (["-K"], "ask become pass"),
    (["-e", "@/tmp/vars.yml"], "vars file"), (["-e", '{"a": 1}'], "JSON"), (["-e", "a=b c=d"], "two pairs"),
    (["-e", "a='b'"], "quote"), (["-e", 'a="b'], "double quote"), (["-e", "a={{ lookup('pipe','id') }}"], "template"),
    (["-e", "ansible_python_interpreter=/tmp/x"], "interpreter"), (["-e", "ANSIBLE_CONNECTION=ssh"], "case"),
    (["-e", "hostvars=x"], "magic"), (["--extra-vars=ansible_connection=ssh"], "attached"),
    (["-eansible_x=1"], "attached short"), (["-e=a=b"], "short with ="), (["-e", "a=$(reboot)"], "shell"),
    (["-e", "a=`id`"], "backtick"), (["-e", "a=b;reboot"], "semicolon"), (["-e", "a=b\\"], "backslash"),
    (["-e"], "missing value"), (["-e", "--force"], "option as value"), (["--sleep=x"], "not a number"),
    (["--sleep", "5;reboot"], "shell in sleep"), (["-s", "-f"], "option as value"), (["-s5"], "attached sleep"),
    (["playbooks/evil.yml"], "second playbook"), (["--"], "end of options"), (["--", "x.yml"], "after --"),
    (["--clean", "evil.yml"], "positional after a flag"), (["--help"], "help"), (["--version"], "version"),
    (["--cle"], "prefix of an allowed flag"), (["-vx"], "unknown bundle"), (["--nonsense"], "unknown"),
    (["-e", "x=1\nreboot"], "newline"), (["--clean\n"], "newline in a flag"), ([" --clean"], "space"),
    ([1], "not a string"),
]


@pytest.mark.parametrize("extra", ACCEPTED, ids=lambda e: " ".join(e) or "none")
def test_accepted_arguments_change_only_harmless_options(extra):
    assert inputs.extra_args_refusals(extra) == []
    changed = changed_dests(extra)
    assert changed is not None, "ansible-pull refuses %s" % extra
    assert changed <= inputs.ALLOWED_DESTS, changed
    assert argv_refusals(BASE + [PLAYBOOK], BASE + extra + [PLAYBOOK]) == []


@pytest.mark.parametrize("extra,why", HOSTILE, ids=[why for dummy, why in HOSTILE])
def test_hostile_arguments_are_refused(extra, why):
    assert refused(extra), (extra, why)


def test_every_prefix_and_bundle_is_accepted_only_when_ansible_pull_reads_it_as_harmless():
    """Each prefix of each long option, each short option with and without -v bundled, alone and with a value."""
    tokens = set()
    for option in inputs.PULL_OPTIONS:
        for end in range(3, len(option) + 1):
            tokens.add(option[:end])
            tokens.add(option[:end] + "=1")
    for short in inputs.PULL_SHORT:
        tokens.update([short, short + "x", "-v" + short[1], short[1:] and short + "v"])
    tried = accepted = 0
    for token in sorted(tokens):
        for extra in ([token], [token, "1"], [token, "a=b"]):
            tried += 1
            if inputs.extra_args_refusals(extra):
                continue
            accepted += 1
            changed = changed_dests(extra)
            assert changed is not None and changed <= inputs.ALLOWED_DESTS, (extra, changed)
    assert tried > 500 and accepted >= 10, (tried, accepted)


def test_the_option_table_matches_ansible_pulls_parser():
    real = {}
    for action in PARSER._actions:
        for spelling in action.option_strings:
            real[spelling] = action.dest
    table = dict((k, v[0]) for k, v in inputs.PULL_OPTIONS.items())
    table.update((short, inputs.PULL_OPTIONS[long][0]) for short, long in inputs.PULL_SHORT.items())
    assert table == real


@pytest.mark.parametrize("extra,why", [(e, w) for e, w in HOSTILE if all(isinstance(x, str) for x in e) and changed_dests(e) and
                                       changed_dests(e) - inputs.ALLOWED_DESTS], ids=str)
def test_ansible_pulls_parser_catches_what_changes_the_checkout_on_its_own(extra, why):
    """Defense in depth: the filter's whole-command-line parse refuses these even without the allow-list."""
    found = argv_refusals(BASE + [PLAYBOOK], BASE + extra + [PLAYBOOK])
    assert found and found[0].startswith("input.pull_extra_args:"), (extra, why)


def test_accepted_values_survive_ansible_pulls_resplitting():
    """ansible-pull rebuilds its commands as strings and shlex-splits them: accepted values hold no character
    that would end a quoted string or start a new word."""
    for extra in ACCEPTED:
        for value in extra:
            assert not set(value) & set("\"'\\ $`;&|<>(){}*?!#~\t\n"), value
            assert shlex.split('-a "%s"' % value) == ["-a", value]


def test_refusal_says_what_ansible_pull_would_read_and_the_fix():
    message = inputs.extra_args_refusals(["--forc"])[0]
    assert "ansible-pull reads --force" in message and "signature" in message
    assert "pull_mode_branch" in inputs.extra_args_refusals(["-Ccmain"])[0]
    assert "pull_mode_repo_url" in inputs.extra_args_refusals(["--ur=http://x"])[0]
    assert "--force" in inputs.extra_args_refusals(["-vf"])[0]


@pytest.mark.parametrize("name", [
    "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_PARAMETERS", "GIT_CONFIG", "GIT_CONFIG_NOSYSTEM", "GIT_EXEC_PATH", "GIT_SSH", "GIT_ASKPASS",
    "GIT_PROXY_COMMAND", "GIT_DIR", "GIT_TEMPLATE_DIR", "GNUPGHOME", "ANSIBLE_CONFIG", "ANSIBLE_LIBRARY",
    "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_MODULE_UTILS", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP",
    "PYTHONUSERBASE", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PATH", "HOME", "BASH_ENV", "ENV",
    "SSH_ASKPASS", "XDG_CONFIG_HOME", "git_config_global", "A=B", "",
])
def test_environment_names_off_the_allow_list_are_refused(name):
    found = inputs.environment_refusals({name: "/tmp/x"})
    assert found and found[0].startswith("input.pull_environment:"), name


@pytest.mark.parametrize("env", [
    {"GIT_SSH_COMMAND": "ssh -o ProxyCommand=/tmp/x"}, {"GIT_SSH_COMMAND": "ssh -oLocalCommand=id"},
    {"GIT_SSH_COMMAND": "ssh -o PermitLocalCommand=yes"}, {"GIT_SSH_COMMAND": "ssh -o KnownHostsCommand=/x"},
    {"GIT_SSH_COMMAND": "sh -c id"}, {"GIT_SSH_COMMAND": "ssh; reboot"}, {"GIT_SSH_COMMAND": "ssh $(id)"},
    {"GIT_SSH_COMMAND": "/tmp/ssh-evil"}, {"https_proxy": "http://user:secret@proxy.invalid:3128"},
    {"HTTPS_PROXY": "http://a b"}, {"no_proxy": "x'y"}, {"https_proxy": "http://p\nExecStart=/x"},
])
def test_environment_values_that_run_or_leak_are_refused(env):
    found = inputs.environment_refusals(env)
    assert found and found[0].startswith("input.pull_environment:"), env


def test_environment_allow_list_accepts_proxies_ca_bundles_and_plain_ssh():
    assert inputs.environment_refusals({
        "https_proxy": "http://proxy.example.invalid:3128", "NO_PROXY": "localhost,.example.invalid,10.0.0.0/8",
        "GIT_SSH_COMMAND": "ssh -o StrictHostKeyChecking=yes -o UserKnownHostsFile=/etc/jetson-specdec/known_hosts",
        "GIT_SSL_CAINFO": "/usr/local/share/ca-certificates/fleet.crt", "TZ": "UTC"}) == []
    assert inputs.environment_refusals({}) == [] and inputs.environment_refusals(None) == []


@pytest.mark.parametrize("url", [
    "https://user:TOKEN@git.example.invalid/fleet/specdec.git", "https://TOKEN@git.example.invalid/x.git",
    "https://user:@git.example.invalid/x.git", "https://oauth2:glpat-x@git.example.invalid:8443/x.git",
    "ssh://git:pw@git.example.invalid/x.git", "ssh://git:@git.example.invalid/x.git",
])
def test_urls_with_credentials_are_refused(url):
    found = inputs.url_refusals(url)
    assert found and found[0].startswith("input.pull_url_credentials:") and "credential helper" in found[0]


@pytest.mark.parametrize("url", ["https://git.example.invalid/fleet/specdec.git", "ssh://git@git.example.invalid:2222/x.git",
                                 "file:///srv/git/specdec.git", ""])
def test_urls_without_credentials_pass(url):
    assert inputs.url_refusals(url) == []


@pytest.mark.parametrize("path", ["/var/log", "/tmp", "/etc", "/var/lib/dpkg/info", "/var/lib", "/usr", "/",
                                  "/var/spool/cron/crontabs", "/root", "/var/lib/docker", "/run"])
def test_system_directories_are_refused(path):
    for name in ("pull_mode_log_dir", "pull_mode_config_dir", "pull_mode_checkout_base", "pull_mode_gnupg_home"):
        found = inputs.dir_refusals({name: path})
        assert found and found[0].startswith("input.pull_dir:") and name in found[0], (name, path)


def test_own_directories_pass_and_the_checkout_holds_no_other():
    own = {"pull_mode_config_dir": "/etc/jetson-specdec", "pull_mode_log_dir": "/var/log/jetson-specdec",
           "pull_mode_checkout_base": "/var/lib/jetson-specdec/pull", "pull_mode_gnupg_home": "/etc/jetson-specdec/gnupg"}
    assert inputs.dir_refusals(own, own["pull_mode_checkout_base"]) == []
    inside = dict(own, pull_mode_log_dir="/var/lib/jetson-specdec/pull/log")
    found = inputs.dir_refusals(inside, inside["pull_mode_checkout_base"])
    assert found and "pull_mode_log_dir" in found[0] and "removes" in found[0]


def test_paths_through_a_link_are_refused():
    paths = {"pull_mode_log_dir": "/var/log/jetson-specdec", "pull_mode_script_path": "/usr/local/sbin/x"}
    assert inputs.link_refusals(paths, {"pull_mode_log_dir": "/var/log/jetson-specdec",
                                        "pull_mode_script_path": "/usr/local/sbin/x"}) == []
    found = inputs.link_refusals(paths, {"pull_mode_log_dir": "/var/log", "pull_mode_script_path": "/usr/local/sbin/x"})
    assert found and found[0].startswith("input.pull_dir:") and "/var/log" in found[0]


@pytest.mark.parametrize("name", ["ssh", "sshd", "getty@tty1", "systemd-journald", "systemd-networkd", "dbus", "docker",
                                  "containerd", "vllm", "cron", "nvargus-daemon", "NetworkManager", "multi-user"])
def test_reserved_unit_names_are_refused(name):
    found = inputs.unit_name_refusals(name)
    assert found and found[0].startswith("input.pull_unit_name:"), name


def test_unit_names_of_the_collection_pass_and_extra_reserved_names_are_refused():
    assert inputs.unit_name_refusals("jetson-specdec-pull") == []
    assert inputs.unit_name_refusals("fleet-pull") == []
    assert inputs.unit_name_refusals("llm", reserved=["llm"])


def test_the_filter_gathers_every_rule():
    found = pull_mode_refusals({"extra_args": ["--forc"], "environment": {"PYTHONPATH": "/tmp"},
                                "repo_url": "https://u:t@h.invalid/x.git", "dirs": {"pull_mode_log_dir": "/var/log"},
                                "unit_name": "ssh", "argv": BASE + ["--forc", PLAYBOOK], "base_argv": BASE + [PLAYBOOK]})
    rules = sorted(r.split(":", 1)[0] for r in found)
    assert rules == ["input.pull_dir", "input.pull_environment", "input.pull_extra_args", "input.pull_unit_name",
                     "input.pull_url_credentials"], found


def test_boards_sharing_a_machine_id_are_found():
    from ansible_collections.jetson.specdec.plugins.filter.pull_mode import pull_machine_id_duplicates
    same = "0123456789abcdef0123456789abcdef"
    found = pull_machine_id_duplicates({"nx-02": same + "\n", "nx-01": same, "nx-03": "f" * 32, "nx-04": "",
                                        "nx-05": "uninitialized\n", "nx-06": "uninitialized"})
    assert [entry["hosts"] for entry in found] == [["nx-01", "nx-02"]]
    assert same not in str(found) and len(found[0]["id"]) == 12
    assert pull_machine_id_duplicates({"a": "1" * 32, "b": "2" * 32}) == []
