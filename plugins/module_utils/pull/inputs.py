# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Validate the pull_mode inputs that reach ansible-pull's command line, the unit and the disk (pure, stdlib only).

The pull_mode role checks these before it writes anything (roles/pull_mode/tasks/validate.yml through the
``jetson.specdec.pull_mode_refusals`` filter).  Each refusal names its rule (``input.<rule>``) and the fix.

Why an allow-list for ``pull_mode_extra_args``: ansible-pull reads its arguments with argparse
(``allow_abbrev``: ``--forc`` is ``--force``, ``--verify`` is ``--verify-commit``, ``-vf`` is ``-v -f``,
``-Ccmain`` is ``--checkout cmain``), and then REBUILDS two command strings from what it parsed
(``'%s/ansible ... -m %s -a "%s" ...'`` and ``'%s/ansible-playbook ...'``) that ``run_cmd`` splits again with
``shlex``: a value holding a quote ends the ``-a "..."`` string and adds arguments of its own
(``--checkout=main" -m ansible.builtin.command -a "touch /x``).  Only extra-vars are ``shlex.quote``d.  So
only a few harmless options are accepted, each in one exact spelling, with values from a charset without
quotes, spaces or shell characters; everything that decides what runs (URL, checkout, directory,
inventory, module, verification, ``--force``, module path, tags, limit, the playbook) is the role's own.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import posixpath
import re

RULE_ARGS = "input.pull_extra_args"
RULE_ENV = "input.pull_environment"
RULE_CREDENTIALS = "input.pull_url_credentials"
RULE_DIR = "input.pull_dir"
RULE_UNIT = "input.pull_unit_name"

# ansible-pull's options (ansible-core 2.17 .. 2.19, PullCLI.init_parser): long spelling -> (dest, takes a value).
# Used to say what a refused spelling would have meant (argparse prefix matching); the allow-list below is
# what decides, and the filter plugin checks the whole command line with ansible-pull's own parser too.
PULL_OPTIONS = {
    "--help": ("help", False), "--version": ("version", False), "--verbose": ("verbosity", False),
    "--private-key": ("private_key_file", True), "--key-file": ("private_key_file", True),
    "--user": ("remote_user", True), "--connection": ("connection", True), "--timeout": ("timeout", True),
    "--ssh-common-args": ("ssh_common_args", True), "--sftp-extra-args": ("sftp_extra_args", True),
    "--scp-extra-args": ("scp_extra_args", True), "--ssh-extra-args": ("ssh_extra_args", True),
    "--ask-pass": ("ask_pass", False), "--connection-password-file": ("connection_password_file", True),
    "--conn-pass-file": ("connection_password_file", True), "--vault-id": ("vault_ids", True),
    "--ask-vault-password": ("ask_vault_pass", False), "--ask-vault-pass": ("ask_vault_pass", False),
    "--vault-password-file": ("vault_password_files", True), "--vault-pass-file": ("vault_password_files", True),
    "--extra-vars": ("extra_vars", True), "--tags": ("tags", True), "--skip-tags": ("skip_tags", True),
    "--inventory": ("inventory", True), "--inventory-file": ("inventory", True), "--list-hosts": ("listhosts", False),
    "--limit": ("subset", True), "--flush-cache": ("flush_cache", False), "--module-path": ("module_path", True),
    "--ask-become-pass": ("become_ask_pass", False), "--become-password-file": ("become_password_file", True),
    "--become-pass-file": ("become_password_file", True), "--purge": ("purge", False),
    "--only-if-changed": ("ifchanged", False), "--sleep": ("sleep", True), "--force": ("force", False),
    "--directory": ("dest", True), "--url": ("url", True), "--full": ("fullclone", False),
    "--checkout": ("checkout", True), "--accept-host-key": ("accept_host_key", False),
    "--module-name": ("module_name", True), "--verify-commit": ("verify", False), "--clean": ("clean", False),
    "--track-subs": ("tracksubs", False), "--check": ("check", False), "--diff": ("diff", False),
}
PULL_SHORT = {
    "-h": "--help", "-v": "--verbose", "-u": "--user", "-c": "--connection", "-T": "--timeout", "-k": "--ask-pass",
    "-J": "--ask-vault-password", "-e": "--extra-vars", "-t": "--tags", "-i": "--inventory", "-l": "--limit",
    "-M": "--module-path", "-K": "--ask-become-pass", "-o": "--only-if-changed", "-s": "--sleep", "-f": "--force",
    "-d": "--directory", "-U": "--url", "-C": "--checkout", "-m": "--module-name",
}
# What to set instead when an extra argument duplicates a setting of the role.
ROLE_SETTINGS = {
    "url": "pull_mode_repo_url", "checkout": "pull_mode_branch", "dest": "pull_mode_checkout_base",
    "inventory": "pull_mode_config_dir and pull_mode_vars", "subset": "nothing (the role limits to localhost)",
    "verify": "pull_mode_verify_commit", "ifchanged": "pull_mode_only_if_changed", "fullclone": "pull_mode_full_clone",
    "accept_host_key": "pull_mode_accept_host_key", "private_key_file": "pull_mode_private_key_file",
    "vault_password_files": "pull_mode_vault_password_file", "args": "pull_mode_playbook",
}
# Why the others are refused (dest -> reason).
WHY = {
    "force": "runs the playbook when the checkout or its signature check failed (an unsigned commit would run)",
    "module_name": "replaces the git checkout (and its --verify-commit) with another module",
    "module_path": "loads the checkout module from another directory",
    "tracksubs": "moves submodules to commits nobody signed",
    "tags": "skips or selects tasks of the rollout (its checks included)",
    "skip_tags": "skips tasks of the rollout (its checks included)",
    "diff": "writes the differences of templated files (the secrets file included) to pull.log and the journal",
    "purge": "deletes the checkout the pull inventory's group_vars link points into",
    "connection": "changes how the playbook reaches the board",
}
# The exact spellings accepted: flag -> dest of an option without a value.
ALLOWED_FLAGS = {"--clean": "clean", "--flush-cache": "flush_cache", "--check": "check", "--verbose": "verbosity"}
ALLOWED_VERBOSE = re.compile(r"\A-v{1,6}\Z")
# Options with a value: spelling -> dest; the value is the next item, or after "=" for the long spellings.
ALLOWED_VALUED = {"-e": "extra_vars", "--extra-vars": "extra_vars", "-s": "sleep", "--sleep": "sleep"}
# The dests pull_mode_extra_args may change (the filter compares ansible-pull's parse of the whole command line).
ALLOWED_DESTS = frozenset(["clean", "flush_cache", "check", "verbosity", "extra_vars", "sleep"])

SLEEP_RE = re.compile(r"\A[0-9]{1,5}\Z")
# key=value only (no @file, JSON or YAML); the key is a plain variable name, the value has no quote, space,
# brace (templating), $, backslash, ; or other shell character.
EXTRA_VAR_RE = re.compile(r"\A([A-Za-z][A-Za-z0-9_]{0,63})=([A-Za-z0-9_.,:/@+-]{0,200})\Z")
# Variables an extra var must not set: connection and interpreter variables (ansible_*) apply to the checkout
# step too, before the signature check; the others are Ansible's magic variables.
RESERVED_VARS = frozenset([
    "hostvars", "groups", "group_names", "inventory_hostname", "inventory_hostname_short", "inventory_dir",
    "inventory_file", "omit", "playbook_dir", "play_hosts", "role_name", "role_path", "environment",
])


def resolve(token):
    """What ansible-pull's argparse reads ``token`` as: ``(long option, dest)``, ``(None, reason)``."""
    if token == "--":
        return None, "ends the options (everything after it is a playbook)"
    if token.startswith("--"):
        name = token.split("=", 1)[0]
        if name in PULL_OPTIONS:
            return name, PULL_OPTIONS[name][0]
        matches = sorted(set(o for o in PULL_OPTIONS if o.startswith(name)))
        dests = sorted(set(PULL_OPTIONS[o][0] for o in matches))
        if len(dests) == 1:
            return matches[0], dests[0]
        if matches:
            return None, "ambiguous (%s)" % ", ".join(matches)
        return None, "not an ansible-pull option"
    if token.startswith("-") and len(token) > 1:
        short = token[:2]
        if short not in PULL_SHORT:
            return None, "not an ansible-pull option"
        option = PULL_SHORT[short]
        if len(token) > 2 and not PULL_OPTIONS[option][1]:
            # argparse reads -vf as -v -f: the first flag that is not -v decides.
            for char in token[2:]:
                if "-" + char != "-v":
                    return resolve("-" + char)
        return option, PULL_OPTIONS[option][0]
    return None, "a playbook (positional argument)"


def _explain(token):
    option, dest = resolve(token)
    if option is None:
        return "%s: %s" % (token, dest)
    read = "ansible-pull reads %s" % option if option != token.split("=", 1)[0] else option
    if dest in ROLE_SETTINGS:
        return "%s (%s) is set by the role: use %s" % (token, read, ROLE_SETTINGS[dest])
    if dest in WHY:
        return "%s (%s) %s" % (token, read, WHY[dest])
    return "%s (%s) is not on the allow-list" % (token, read)


def _extra_var_problem(value):
    match = EXTRA_VAR_RE.match(value)
    if not match:
        return ("%r is not key=value with a plain name and a value of letters, digits and _ . , : / @ + - "
                "(no quotes, spaces, braces, @file or JSON)" % value)
    key = match.group(1)
    if key.lower().startswith("ansible_") or key in RESERVED_VARS:
        return "%r sets %s, a connection, interpreter or magic variable" % (value, key)
    return None


def extra_args_refusals(args):
    """Refusals (strings naming input.pull_extra_args) of a pull_mode_extra_args list; [] when it is accepted."""
    if args is None:
        return []
    if not isinstance(args, (list, tuple)):
        return ["%s: pull_mode_extra_args must be a list of arguments, one item each. Fix: for example [--clean, -e, "
                "rollout_force=true]." % RULE_ARGS]
    problems = []
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if not isinstance(token, str):
            problems.append("%r is not a string" % (token,))
            continue
        if token in ALLOWED_FLAGS or ALLOWED_VERBOSE.match(token):
            continue
        name, sep, inline = token.partition("=")
        if name in ALLOWED_VALUED and (not sep or name.startswith("--")):
            if sep:
                value = inline
            elif index < len(args) and isinstance(args[index], str):
                value = args[index]
                index += 1
            else:
                problems.append("%s needs a value in the next item" % token)
                continue
            if ALLOWED_VALUED[name] == "sleep":
                if not SLEEP_RE.match(value):
                    problems.append("%s %r is not a number of seconds (0-99999)" % (name, value))
            else:
                problem = _extra_var_problem(value)
                if problem:
                    problems.append("%s %s" % (name, problem))
            continue
        problems.append(_explain(token))
    if not problems:
        return []
    return ["%s: pull_mode_extra_args refused: %s. Accepted, each as its own item and spelled exactly so: --clean, "
            "--flush-cache, --check, -v .. -vvvvvv, --verbose, --sleep N (or -s N, --sleep=N), -e key=value (or "
            "--extra-vars key=value, --extra-vars=key=value; not ansible_* or magic variables). Fix: set the URL, "
            "branch, verification, clone and key options with their pull_mode_* variables, board-local variables "
            "with pull_mode_vars." % (RULE_ARGS, "; ".join(problems))]


# Environment of the service: names that change how git, gpg, ssh, Python or Ansible find their programs,
# configuration or code (GIT_CONFIG_*, GIT_EXEC_PATH, GNUPGHOME, ANSIBLE_CONFIG, PYTHONPATH, LD_PRELOAD, ...)
# could run something the signature check never saw, so only these are accepted.
ENV_ALLOWED = frozenset([
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "GIT_SSH_COMMAND", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "GIT_HTTP_LOW_SPEED_LIMIT", "GIT_HTTP_LOW_SPEED_TIME", "GIT_TERMINAL_PROMPT", "TZ", "LANG", "LC_ALL",
])
ENV_VALUE_RE = re.compile(r"\A[A-Za-z0-9_.,:/@+=*-]{0,1000}\Z")
# git runs GIT_SSH_COMMAND with sh -c: ssh (or a path ending in /ssh) and plain options only.
SSH_COMMAND_RE = re.compile(r"\A(ssh|(/[A-Za-z0-9_.+-]+)*/ssh)( [A-Za-z0-9_.,:/@+=-]+)*\Z")
SSH_RUNS_COMMAND_RE = re.compile(r"(?i)command|\Amatch")
URL_USERINFO_RE = re.compile(r"\A[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)@")


def url_has_credentials(url, allow_user=False):
    """True when ``url`` carries a password (``user:pw@``), or any user part unless ``allow_user``."""
    match = URL_USERINFO_RE.match(url or "")
    if not match:
        return False
    return ":" in match.group(1) or not allow_user


def environment_refusals(environment):
    """Refusals (input.pull_environment) of pull_mode_environment (a dict)."""
    if not environment:
        return []
    if not isinstance(environment, dict):
        return ["%s: pull_mode_environment must be a dict of NAME: value." % RULE_ENV]
    problems = []
    for name in sorted(environment, key=str):
        value = environment[name]
        value = "" if value is None else str(value) if isinstance(value, (int, float)) else value
        if name not in ENV_ALLOWED:
            problems.append("%s is not on the allow-list" % name)
        elif name != "GIT_SSH_COMMAND" and (not isinstance(value, str) or not ENV_VALUE_RE.match(value)):
            problems.append("%s: the value must be letters, digits and _ . , : / @ + = * - (no spaces or quotes)" % name)
        elif name.lower().endswith("_proxy") and url_has_credentials(value):
            problems.append("%s holds credentials (user:password@); the unit file is world-readable" % name)
    if "GIT_SSH_COMMAND" in environment and "GIT_SSH_COMMAND" in ENV_ALLOWED:
        value = environment["GIT_SSH_COMMAND"]
        if not isinstance(value, str) or not SSH_COMMAND_RE.match(value):
            problems.append("GIT_SSH_COMMAND must be ssh with plain options (git runs it with sh -c)")
        elif any(SSH_RUNS_COMMAND_RE.search(word.split("=", 1)[0]) for word in value.split()[1:]):
            problems.append("GIT_SSH_COMMAND must not run commands (ProxyCommand, LocalCommand, KnownHostsCommand, "
                            "Match exec)")
    if not problems:
        return []
    return ["%s: pull_mode_environment refused: %s. Accepted names: %s. Fix: proxies and CA bundles only; put "
            "Ansible settings in the repository's ansible.cfg, the deploy key in pull_mode_private_key_file."
            % (RULE_ENV, "; ".join(problems), ", ".join(sorted(ENV_ALLOWED)))]


def url_refusals(url):
    """Refusals (input.pull_url_credentials) of a repository URL that carries credentials."""
    if not isinstance(url, str) or not url:
        return []
    ssh = url.startswith("ssh://")
    if not url_has_credentials(url, allow_user=ssh):
        return []
    return ["%s: pull_mode_repo_url carries credentials (%s): they would be in the pull script, on ansible-pull's "
            "command line (ps, the journal) and in the checkout's .git/config. Fix: an https URL without them and a git "
            "credential helper for root on the board (git config --system credential.helper store, a 0600 "
            "/root/.git-credentials), or an ssh:// URL with a deploy key (pull_mode_private_key_file)."
            % (RULE_CREDENTIALS, "user:password@" if ssh else "user@ or user:token@")]


def dir_refusals(dirs, checkout_base=None):
    """Refusals (input.pull_dir) of the directories the role creates, chmods or removes.

    ``dirs`` maps a variable name to its path.  Each must lie in a folder of its own: some component of the path
    names the collection (contains ``specdec``), so /var/log, /tmp, /etc, /var/lib/dpkg are never chmodded, and
    ``pull_mode_checkout_base`` (removed with ``pull_mode_state: absent``) holds none of the others.
    Symbolic links on the board are checked by the role (realpath) since this is pure.
    """
    problems = []
    for name in sorted(dirs):
        path = dirs[name]
        if not isinstance(path, str) or not path.startswith("/"):
            continue  # input.pull_path says it
        parts = [p for p in path.split("/") if p]
        if not any("specdec" in part for part in parts):
            problems.append("%s %s is not a folder of its own (no component names specdec)" % (name, path))
    if checkout_base:
        base = posixpath.normpath(checkout_base)
        for name in sorted(dirs):
            path = dirs[name]
            if name == "pull_mode_checkout_base" or not isinstance(path, str):
                continue
            if posixpath.normpath(path) == base or posixpath.normpath(path).startswith(base.rstrip("/") + "/"):
                problems.append("%s %s is inside pull_mode_checkout_base, which pull_mode_state=absent removes"
                                % (name, path))
    if not problems:
        return []
    return ["%s: %s. Fix: a directory of the collection's own, for example /etc/jetson-specdec, "
            "/var/log/jetson-specdec, /var/lib/jetson-specdec/pull (the role sets owner and mode on it and removes "
            "the checkout; a system directory such as /var/log or /tmp would lose its mode or sticky bit)."
            % (RULE_DIR, "; ".join(problems))]


def link_refusals(paths, resolved):
    """Refusals (input.pull_dir) of paths whose resolved form (``realpath -m`` on the board) differs: a component
    is a symbolic link, so owner, mode or removal would land on its target."""
    problems = []
    for name in sorted(resolved or {}):
        path, real = (paths or {}).get(name), resolved[name]
        if isinstance(path, str) and isinstance(real, str) and real and posixpath.normpath(path) != real:
            problems.append("%s %s resolves to %s" % (name, path, real))
    if not problems:
        return []
    return ["%s: %s: the path passes through a symbolic link, so the role would set owner and mode on (or remove) "
            "its target. Fix: the real path of a directory of the collection's own, with no link on the way."
            % (RULE_DIR, "; ".join(problems))]


# Units a pull-mode unit must never replace (a file in /etc/systemd/system overrides the packaged unit).
RESERVED_UNITS = frozenset([
    "ssh", "sshd", "dbus", "cron", "crond", "docker", "containerd", "networking", "NetworkManager", "rsyslog",
    "polkit", "snapd", "getty", "serial-getty", "udev", "nvargus-daemon", "nvpmodel", "nvfancontrol", "nvphs",
    "jetson_clocks", "chrony", "chronyd", "ntp", "unattended-upgrades", "apt-daily", "apt-daily-upgrade", "vllm",
    "node_exporter", "prometheus-node-exporter", "user", "emergency", "rescue", "reboot", "poweroff", "halt",
    "default", "multi-user", "graphical", "sysinit", "basic", "shutdown", "timers", "sockets",
])
RESERVED_UNIT_PREFIXES = ("systemd-", "dbus-", "getty", "ssh", "docker", "containerd", "nv", "user-", "sys-")


def unit_name_refusals(name, reserved=()):
    """Refusals (input.pull_unit_name) of a unit name on the reserved list (the board's existing units are
    checked by the role: a unit of that name not written by this collection is refused too)."""
    if not isinstance(name, str):
        return []
    taken = set(RESERVED_UNITS) | set(r for r in reserved if isinstance(r, str) and r)
    if "@" in name:
        why = "is a template instance (@)"
    elif name in taken or name.lower() in taken:
        why = "is reserved (a system or collection unit)"
    elif name.startswith(RESERVED_UNIT_PREFIXES):
        why = "starts like a system unit (%s)" % ", ".join(RESERVED_UNIT_PREFIXES)
    else:
        return []
    return ["%s: pull_mode_unit_name %s %s: /etc/systemd/system/%s.service would replace it. Fix: the default "
            "jetson-specdec-pull or another name of your own." % (RULE_UNIT, name, why, name)]
