# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Validate the vllm_server inputs that reach unit lines, files and argv (pure, stdlib only).

Preflight runs these before anything changes on the host.  Each refusal names its
rule (``input.<rule>``), the variable and the fix.  The rules are written for what
the values become:

* unit lines (systemd specifiers ``%``, newlines ending a directive),
* the secrets EnvironmentFile, read by systemd (``EnvironmentFile=``), by
  ``docker --env-file`` and, in the container, by ``sh`` (``set -a; . FILE``):
  only characters that mean the same to all three are accepted,
* paths the role chowns or bind-mounts (``/`` or ``/etc`` would be chowned; a ``:``
  would add volume options),
* ``vllm serve`` flags: vLLM's parser (argparse, ``allow_abbrev``, vLLM's
  FlexibleArgumentParser) accepts ``--a_b`` for ``--a-b``, ``--x.key`` for a
  JSON flag, ``--config FILE`` and any unambiguous prefix, so extra arguments are
  normalised and checked against an allow-list.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ipaddress
import re
import socket

from ansible_collections.jetson.specdec.plugins.module_utils.common.booleans import strict_bool
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import SpecConfigError, validate_model_ref
from ansible_collections.jetson.specdec.plugins.module_utils.launch.serve_options import (
    AMBIGUOUS,
    EXACT,
    LEGACY_SHORT,
    PREFIX,
    normalise_long,
    resolve_long,
    resolve_short,
)

SERVICE_NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
# useradd's portable name rule (NAME_REGEX of adduser.conf, without '$').
ACCOUNT_RE = re.compile(r"\A[a-z_][a-z0-9_-]{0,31}\Z")
ENV_NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
# Characters that mean the same in a systemd EnvironmentFile, a docker --env-file and
# a file sourced by sh: no quotes, backslash, '$', backtick, whitespace, ';&|<>()'.
SECRET_VALUE_RE = re.compile(r"\A[A-Za-z0-9._~+/=:,@%-]{1,4096}\Z")
SAFE_PATH_RE = re.compile(r"\A(/[A-Za-z0-9_.@+-]+)+\Z")
HOST_RE = re.compile(r"\A[0-9A-Za-z.:-]{1,253}\Z")
NUMERIC_ID_RE = re.compile(r"\A[0-9]{1,10}:[0-9]{1,10}\Z")
SHM_SIZE_RE = re.compile(r"\A[1-9][0-9]{0,5}[kmg]\Z")

# Directories whose ownership or mode the role must never change (hf_home and the
# state directory are chowned to the service user), and trees that are not data.
SYSTEM_DIRS = frozenset((
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
    "/opt", "/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/tmp", "/usr", "/var", "/data",
    "/var/lib", "/var/cache", "/var/log", "/var/tmp", "/var/spool", "/var/run", "/var/lock", "/var/mail",
    "/usr/local", "/usr/lib", "/usr/share", "/opt/nvidia",
))
SYSTEM_TREES = ("/bin/", "/boot/", "/dev/", "/etc/", "/lib/", "/lib32/", "/lib64/", "/proc/", "/run/", "/sbin/",
                "/sys/", "/usr/", "/tmp/", "/var/tmp/", "/var/run/", "/var/lock/")
# ProtectHome=yes makes these invisible to the service.
HOME_TREES = ("/home/", "/root/", "/run/user/")
# Where a directory the role creates and gives to the service account may be: a tree of its own
# (the state directory, /var/cache/vllm) or a data tree (/srv, /data, /ssd, /mnt: Jetson boards
# keep models on an NVMe disk mounted there), never a system tree, so that a subdirectory of one
# (/var/lib/dpkg/info, /var/lib/sudo/ts, /var/lib/docker, /var/spool/cron/crontabs) is not chowned.
# On the host, jetson.specdec.safe_dir also refuses an existing directory the collection did not
# create (and a link the account planted): this list is the first of two walls.
DATA_ROOTS = ("/var/lib/vllm/", "/var/cache/vllm/", "/opt/vllm/", "/srv/", "/data/", "/ssd/", "/mnt/")

# Groups that grant root or read every secret: kmem reads /dev/mem, staff writes /usr/local (first on root's
# PATH on Debian), tty/crontab/sys and the container groups reach root by other doors.
ADMIN_GROUPS = frozenset((
    "root", "sudo", "adm", "wheel", "docker", "disk", "shadow", "lxd", "systemd-journal", "kmem", "staff", "sys",
    "tty", "crontab", "libvirt", "incus-admin", "incus", "podman", "admin", "operator", "src",
))

# Environment names that would change what the server runs or where its secrets go.
ENV_NAMES_REFUSED = frozenset((
    "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH_RPATH", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONHOME",
    "BASH_ENV", "ENV", "VLLM_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HOME", "HOME",
    # Python imports from these (PYTHONWARNINGS can name a module; PYTHONBREAKPOINT a callable).
    "PYTHONPATH", "PYTHONUSERBASE", "PYTHONWARNINGS", "PYTHONBREAKPOINT", "PYTHONEXECUTABLE", "PYTHONPLATLIBDIR",
    # The Hub client reads the token from another file, or keeps the models outside vllm_server_hf_home.
    "HF_TOKEN_PATH", "HUGGINGFACE_HUB_CACHE", "HF_HUB_CACHE",
))
# The Hub client sends HF_TOKEN to this host: a mirror (documented) only without vllm_server_hf_token.
ENV_NAMES_NOT_WITH_TOKEN = frozenset(("HF_ENDPOINT", "HF_HUB_ENDPOINT"))

# Names every board resolves to loopback (a bind on them is not open); other names count as open, see bind_scope.
LOOPBACK_NAMES = frozenset(("localhost", "localhost.localdomain", "localhost6", "localhost6.localdomain6",
                            "ip6-localhost", "ip6-loopback"))
# Units of the system a service name must not take (the role writes /etc/systemd/system/<name>.service,
# which replaces or overrides the distribution's unit of that name). Exact names, then name prefixes
# for families of units. The host check (launch/host_checks.py: host.unit_not_ours) also refuses any
# unit of that name that exists on the board and was not written by the collection.
RESERVED_UNITS = frozenset((
    "ssh", "sshd", "docker", "containerd", "getty", "dbus", "dbus-broker", "cron", "crond", "anacron", "atd",
    "rsyslog", "syslog", "udev", "polkit", "polkitd", "sudo", "login", "user", "init", "emergency", "rescue",
    "reboot", "poweroff", "halt", "kexec", "shutdown", "default", "basic", "sysinit", "multi-user", "graphical",
    "local-fs", "remote-fs", "network", "networking", "networkd-dispatcher", "networkmanager", "modemmanager",
    "wpa_supplicant", "avahi-daemon", "bluetooth", "chrony", "chronyd", "ntp", "ntpd", "ntpsec", "ufw", "nftables",
    "iptables", "firewalld", "apparmor", "auditd", "snapd", "unattended-upgrades", "plymouth", "rc-local",
    "ifupdown", "ifup", "kmod", "tmp", "swap", "console-setup", "keyboard-setup", "accounts-daemon", "gdm", "gdm3",
    "lightdm", "display-manager", "upower", "udisks2", "packagekit", "whoopsie", "apport", "irqbalance",
    "thermald", "power-profiles-daemon", "kubelet", "k3s", "podman", "nvpmodel", "nvfancontrol", "nvphs",
    "nvargus-daemon", "nvzramconfig", "nvmemwarning", "nvstartup", "nvweston", "nvsm", "node_exporter",
    "prometheus-node-exporter", "tailscaled", "zerotier-one", "jtop",
))
RESERVED_UNIT_PREFIXES = ("systemd-", "dbus-", "getty", "serial-getty", "container-getty", "console-", "network",
                          "ssh", "docker", "containerd", "snap.", "snap-", "apt-", "dpkg", "user@", "user-runtime",
                          "nvidia", "nv-", "nv_", "l4t", "jetson-specdec", "jetson_clocks", "initrd", "dev-", "sys-",
                          "proc-", "run-", "boot-", "efi-")

# --- vllm serve flags -----------------------------------------------------------------------
# Flags the role sets from its own variables (long names, vLLM's spelling).
OWNED_FLAGS = {
    "model": "vllm_server_model",
    "served-model-name": "vllm_server_served_model_name",
    "host": "vllm_server_host",
    "port": "vllm_server_port",
    "uds": "vllm_server_host and vllm_server_port",
    "gpu-memory-utilization": "vllm_server_gpu_memory_utilization (checked against the board's memory)",
    "device-memory-utilization": "vllm_server_gpu_memory_utilization (checked against the board's memory)",
    "kv-cache-memory-bytes": "vllm_server_gpu_memory_utilization (checked against the board's memory)",
    "num-gpu-blocks-override": "vllm_server_gpu_memory_utilization (checked against the board's memory)",
    "max-model-len": "vllm_server_max_model_len",
    "max-num-seqs": "vllm_server_max_num_seqs",
    "dtype": "vllm_server_dtype",
    "enforce-eager": "vllm_server_enforce_eager",
    "trust-remote-code": "vllm_server_trust_remote_code",
    "speculative-config": "vllm_server_speculation and vllm_server_speculative_*",
    # vLLM 0.32's shorthands for parts of --speculative-config.
    "spec-method": "vllm_server_speculation and vllm_server_speculative_method",
    "spec-model": "vllm_server_speculation and vllm_server_speculative_model",
    "spec-tokens": "vllm_server_num_speculative_tokens",
    "download-dir": "vllm_server_hf_home",
}
# Flags that carry secrets or load a file of further flags (which would bypass every check).
SECRET_FLAGS = {
    "api-key": "vllm_server_api_key (it goes to the 0600 EnvironmentFile, never on argv)",
    "hf-token": "vllm_server_hf_token (it goes to the 0600 EnvironmentFile, never on argv)",
    "config": "the role's variables (a --config file would set flags no check sees)",
    "ssl-keyfile": "a reverse proxy in front of vLLM (a key path on argv is out of the role's control)",
    "middleware": "nothing: it imports arbitrary Python into the server",
    "allowed-local-media-path": "nothing: it lets API clients read local files",
}
# Short flags: launch/serve_options.py (vLLM's table per version, argparse's prefix rule).
SHORT_FLAGS = LEGACY_SHORT
# Tuning flags of `vllm serve` an operator may add (long names, no leading dashes).
# Boolean flags also accept vLLM's --no-<flag> form.
ALLOWED_FLAGS = frozenset((
    "seed", "quantization", "tensor-parallel-size", "pipeline-parallel-size", "kv-cache-dtype", "block-size",
    "enable-prefix-caching", "enable-chunked-prefill", "max-num-batched-tokens", "max-seq-len-to-capture",
    "cuda-graph-sizes", "swap-space", "cpu-offload-gb", "load-format", "tokenizer-mode", "revision",
    "tokenizer-revision", "code-revision", "chat-template", "chat-template-content-format", "response-role",
    "tool-call-parser", "enable-auto-tool-choice", "reasoning-parser", "generation-config", "max-logprobs",
    "disable-log-stats", "disable-log-requests", "enable-log-requests", "max-log-len", "uvicorn-log-level",
    "disable-uvicorn-access-log", "disable-sliding-window", "disable-cascade-attn", "attention-backend",
    "scheduling-policy", "async-scheduling", "limit-mm-per-prompt", "disable-fastapi-docs",
    "enable-prompt-tokens-details", "enable-server-load-tracking", "return-tokens-as-token-ids",
    "max-parallel-loading-workers", "disable-custom-all-reduce", "preemption-mode", "num-scheduler-steps",
    "long-prefill-token-threshold", "max-num-partial-prefills", "compilation-config",
    "enable-sleep-mode", "skip-tokenizer-init", "override-generation-config", "sse-keep-alive-interval",
    "optimization-level",
))
NEVER_ALLOWED = frozenset(OWNED_FLAGS) | frozenset(SECRET_FLAGS) | frozenset(("help",))

# vLLM's option names are lower case (argparse compares them as written).
_ALLOW_ENTRY_RE = re.compile(r"\A(--)?[a-z0-9][a-z0-9_-]{0,127}\Z")
_EXTRA_ARG_RE = re.compile(r"\A[A-Za-z0-9_@+=:,./-]{1,256}\Z")
_NUMBER_RE = re.compile(r"\A-[0-9.]+\Z")


def _control_chars(value):
    return [ch for ch in value if ord(ch) < 0x20 or ord(ch) == 0x7F or 0x80 <= ord(ch) <= 0x9F]


def _refusal(rule, message):
    return "input.%s: %s" % (rule, message)


def reserved_unit_name(name):
    """The system service ``name``(.service) would replace or shadow, or None (compared without case)."""
    lower = name.lower()
    base = lower.split(".", 1)[0]
    if lower in RESERVED_UNITS or base in RESERVED_UNITS:
        return lower if lower in RESERVED_UNITS else base
    return next((prefix for prefix in RESERVED_UNIT_PREFIXES if lower.startswith(prefix)), None)


def check_service_name(name, var="vllm_server_service_name"):
    """Unit, env file and container name: one plain word (no '/', '..' or newline), not a system service's."""
    if not isinstance(name, str) or not SERVICE_NAME_RE.match(name) or ".." in name or name.endswith(".service"):
        return [_refusal("service_name", "%s %r is not a plain unit name. Fix: 1-64 letters, "
                         "digits and _ . - starting with a letter or digit, without '..' or '.service' (the role "
                         "adds the suffix)." % (var, name))]
    reserved = reserved_unit_name(name)
    if reserved:
        return [_refusal("service_name_reserved", "%s %r is the name of a system service (%s): the role would write "
                         "/etc/systemd/system/%s.service over it (ssh, docker, getty, systemd-*, ... would stop "
                         "doing their job). Fix: keep the default vllm or another name of its own, such as "
                         "vllm-qwen." % (var, name, reserved + ("*" if reserved in RESERVED_UNIT_PREFIXES else ""),
                                         name))]
    return []


def check_account(user, group, supplementary_groups):
    """Service user and groups: portable account names, never root."""
    out = []
    for var, name in (("vllm_server_user", user), ("vllm_server_group", group)):
        if not isinstance(name, str) or not ACCOUNT_RE.match(name):
            out.append(_refusal("account_name", "%s %r is not an account name. Fix: lower-case letters, digits, "
                                "_ and -, starting with a letter or _ (at most 32)." % (var, name)))
        elif name == "root":
            out.append(_refusal("account_root", "%s is root: the server would run with every privilege of the "
                                "board. Fix: keep the default vllm (the role creates it)." % var))
    if not isinstance(supplementary_groups, (list, tuple)):
        out.append(_refusal("supplementary_groups", "vllm_server_supplementary_groups must be a list of group "
                            "names, got %s. Fix: for example [video]." % type(supplementary_groups).__name__))
        return out
    for name in supplementary_groups:
        if not isinstance(name, str) or not ACCOUNT_RE.match(name):
            out.append(_refusal("supplementary_groups", "vllm_server_supplementary_groups item %r is not a group "
                                "name. Fix: lower-case letters, digits, _ and - (for example video)." % (name,)))
        elif name in ADMIN_GROUPS:
            out.append(_refusal("supplementary_groups", "vllm_server_supplementary_groups item %r grants "
                                "administrator-level access. Fix: only device groups such as video, render."
                                % (name,)))
    return out


def check_data_path(var, path):
    """A directory the role creates and chowns: absolute, normalised, not a system directory."""
    if not isinstance(path, str) or _control_chars(path):
        return [_refusal("path", "%s %r contains control characters. Fix: a plain absolute path." % (var, path))]
    if path in SYSTEM_DIRS:
        return [_refusal("path_system", "%s %r is a system directory: the role would chown it to the service "
                         "user. Fix: a directory of its own such as /var/lib/vllm/huggingface." % (var, path))]
    if not SAFE_PATH_RE.match(path) or "/./" in path + "/" or "/../" in path + "/":
        return [_refusal("path", "%s %r is not a plain absolute path. Fix: '/' followed by letters, digits and "
                         "_ . @ + - only (no ':', ',', spaces, '..', '//' or trailing '/'); for example "
                         "/var/lib/vllm/huggingface." % (var, path))]
    if (path + "/").startswith(SYSTEM_TREES):
        return [_refusal("path_system", "%s %r is a system directory: the role would chown it to the service "
                         "user. Fix: a directory of its own such as /var/lib/vllm/huggingface." % (var, path))]
    if (path + "/").startswith(HOME_TREES):
        return [_refusal("path_home", "%s %r is under a home directory, which the unit hides (ProtectHome=yes). "
                         "Fix: a directory such as /var/lib/vllm/huggingface." % (var, path))]
    if not path.startswith(DATA_ROOTS):
        return [_refusal("path_root", "%s %r is not inside a directory tree the collection may give to the service "
                         "account (the role chowns it; a subdirectory of a system directory such as /var/lib/docker "
                         "or /var/spool/cron would be handed over). Fix: a directory below %s (for example "
                         "/var/lib/vllm/huggingface or /data/huggingface); for another disk, mount it there or let "
                         "root link it there (a root-made link is followed)." % (var, path, ", ".join(DATA_ROOTS)))]
    return []


def check_executable(var, path):
    """A program path on a unit line: absolute and plain."""
    if not isinstance(path, str) or not SAFE_PATH_RE.match(path) or "/../" in path + "/" or "/./" in path + "/":
        return [_refusal("executable", "%s %r is not a plain absolute program path. Fix: for example "
                         "/usr/bin/docker (letters, digits and _ . @ + - only)." % (var, path))]
    return []


def check_secret(var, value):
    """API key and HF token: same meaning in EnvironmentFile, docker --env-file and sh."""
    if value in (None, ""):
        return []
    if isinstance(value, str) and SECRET_VALUE_RE.match(value) and (value.startswith("~") or ":~" in value):
        # sh (the container sources the file) expands a tilde at the start of an assignment's value and after
        # each ':' (~ becomes $HOME, ~user that user's home); systemd reads it literally. Never echo the value.
        return [_refusal("secret_value", "%s has a '~' at its start or after a ':', which the container's sh "
                         "replaces with a home directory when it reads the secrets file (systemd keeps it). Fix: a "
                         "value without '~' there (a '~' elsewhere is fine)." % var)]
    if not isinstance(value, str) or not SECRET_VALUE_RE.match(value):
        # Never echo the value: it is a secret.
        return [_refusal("secret_value", "%s contains a character that systemd's EnvironmentFile, docker "
                         "--env-file and sh read differently (whitespace, quotes, backslash, $, `, ;, &, |, <, >, "
                         "parentheses, a control character or non-ASCII), or is longer than 4096. Fix: letters, "
                         "digits and . _ ~ + / = : , @ %% - only." % var)]
    return []


def check_environment(environment, hf_token=None):
    """vllm_server_environment: plain names; values on one line (quoted on the unit line)."""
    if not isinstance(environment, dict):
        return [_refusal("environment", "vllm_server_environment must be a mapping of NAME: value, got %s."
                         % type(environment).__name__)]
    out = []
    for name, value in sorted(environment.items(), key=lambda kv: str(kv[0])):
        if not isinstance(name, str) or not ENV_NAME_RE.match(name):
            out.append(_refusal("environment", "vllm_server_environment name %r is not a variable name. Fix: "
                                "letters, digits and _, not starting with a digit." % (name,)))
        elif name.upper() in ENV_NAMES_REFUSED:
            out.append(_refusal("environment", "vllm_server_environment must not set %s: it changes what runs or "
                                "bypasses a variable the role manages (secrets: vllm_server_api_key / "
                                "vllm_server_hf_token; cache: vllm_server_hf_home)." % name))
        elif name.upper() in ENV_NAMES_NOT_WITH_TOKEN and hf_token:
            out.append(_refusal("environment", "vllm_server_environment %s with vllm_server_hf_token set: the Hub "
                                "client would send the token to that host. Fix: a mirror that serves without the "
                                "token (leave vllm_server_hf_token empty), or drop %s." % (name, name)))
        elif isinstance(value, (dict, list)) or value is None:
            out.append(_refusal("environment", "vllm_server_environment %s must be a string or number." % name))
        elif _control_chars(str(value)):
            out.append(_refusal("environment", "vllm_server_environment %s contains a control character (a newline "
                                "would start a new unit line). Fix: one line of printable text." % name))
    return out


def check_booleans(booleans):
    """Every boolean input (variable name -> value) is a boolean word: "maybe" is refused, never read as on."""
    out = []
    for var, value in sorted((booleans or {}).items()):
        try:
            strict_bool(var, value)
        except ValueError as exc:
            out.append(_refusal("boolean", str(exc)))
    return out


def bind_scope(host):
    """What ``vllm serve --host HOST`` listens on: 'all' (every interface), 'loopback', 'one' (one address) or
    'name' (a host name the board resolves when vLLM starts).

    Compared as addresses, not spellings: vLLM binds an IPv6 literal as IPv6 and anything else through
    getaddrinfo for IPv4, which reads inet_aton's forms (``0``, ``00``, ``0x0``, ``0.0``, ``000.000.000.000``
    are 0.0.0.0); ``0::``, ``::0.0.0.0``, ``0:0:0:0:0:0:0:0`` are ``::``; ``::ffff:0.0.0.0`` is IPv4's any.
    """
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None:
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except (OSError, ValueError, TypeError):
            name = host.lower().rstrip(".")
            return "loopback" if name in LOOPBACK_NAMES else "name"
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified:
        return "all"
    return "loopback" if address.is_loopback else "one"


def check_host(host, api_key, allow_open_bind=False):
    """Listen address: a plain address, not an option, and never open without an API key."""
    if not isinstance(host, str) or not HOST_RE.match(host) or host.startswith(("-", ".", ":-")):
        return [_refusal("host", "vllm_server_host %r is not an IP address or host name (a leading '-' would be "
                         "read as a vLLM option). Fix: 127.0.0.1, ::1 or the board's address." % (host,))]
    scope = bind_scope(host)
    if scope in ("all", "name") and not api_key and not allow_open_bind:
        what = ("listens on every interface" if scope == "all" else
                "is a host name that the board resolves when vLLM starts (an /etc/hosts entry can make it every "
                "interface, and this check cannot see it)")
        return [_refusal("open_bind", "vllm_server_host %s %s and vllm_server_api_key is empty: anyone on the "
                         "network could use the server. Fix: set vllm_server_api_key (from a vault), bind 127.0.0.1 "
                         "or the board's IP address, or set vllm_server_allow_open_bind: true when a firewall or "
                         "an authenticating proxy guards the port." % (host, what))]
    return []


def _flag_name(arg):
    """Normalise a flag as vLLM's parser reads it: '--a_b.c=1' -> 'a-b'; '-tp' stays short."""
    if arg.startswith("--"):
        return normalise_long(arg)
    return None


def _never_reason(name):
    """Why the long option ``name`` (or its --no- form) may never be set by an extra argument, or None."""
    base = name[3:] if name.startswith("no-") else name
    for forbidden in (name, base):
        if forbidden in OWNED_FLAGS:
            return "--%s, which the role manages. Fix: use %s." % (forbidden, OWNED_FLAGS[forbidden])
        if forbidden in SECRET_FLAGS:
            return "--%s. Fix: use %s." % (forbidden, SECRET_FLAGS[forbidden])
    return None


def _abbreviates_never(name):
    """Owned or secret flags (and their --no- forms) that ``name`` is a proper prefix of, in any vLLM release."""
    return sorted(flag for never in NEVER_ALLOWED for flag in (never, "no-" + never)
                  if flag != name and flag.startswith(name))


def _refused_flag(name, allowed, status=None, resolved=None):
    """Why an extra argument whose normalised long name is ``name`` is refused, or None.

    ``status``/``resolved`` are what vLLM's parser reads it as (serve_options.resolve_long): the spelling is
    compared as that option, so an abbreviation of an owned flag is refused whatever the allow-list says.
    """
    if status is None:
        status, resolved = resolve_long(name)
    why = _never_reason(name)
    if why:
        return "sets " + why
    for option in resolved or ():
        why = _never_reason(option)
        if why:
            return "is read by vLLM's parser as " + why
    prefix_of = _abbreviates_never(name)
    if prefix_of or status in (PREFIX, AMBIGUOUS):
        return ("is an abbreviation of --%s; vLLM would expand it%s. Fix: write a full flag name from the allow-list "
                "(docs/security.md)." % (", --".join(prefix_of or resolved),
                                         " or refuse it as ambiguous" if status == AMBIGUOUS else ""))
    base = name[3:] if name.startswith("no-") else name
    if name in allowed or base in allowed:
        return None
    return ("is not in the allow-list of vllm serve tuning flags. Fix: use a listed flag, or add it to "
            "vllm_server_extra_flags_allowed after checking what it does (docs/security.md).")


def _refused_allow_entry(flag):
    """Why a vllm_server_extra_flags_allowed entry is refused (it must name one full, harmless option), or None."""
    if not isinstance(flag, str) or not _ALLOW_ENTRY_RE.match(flag):
        return ("entry %r is not a flag name. Fix: a long vllm serve option such as lora-modules (lower-case "
                "letters, digits, - and _; no value, no '.')." % (flag,))
    name = normalise_long(flag if flag.startswith("--") else "--" + flag)
    why = _never_reason(name)
    if why:
        return "must not allow %s" % why.split(". Fix:")[0] + ": the role manages it or it carries a secret."
    status, resolved = resolve_long(name)
    for option in resolved:
        why = _never_reason(option)
        if why:
            return ("must not allow --%s: vLLM's parser reads it as %s"
                    % (name, why.split(". Fix:")[0]) + ", which the role manages or which carries a secret.")
    prefix_of = _abbreviates_never(name)
    if prefix_of:
        return ("must not allow --%s: it is an abbreviation of --%s in some vLLM release. Fix: allow the full "
                "name of the option you need." % (name, ", --".join(prefix_of)))
    if status in (PREFIX, AMBIGUOUS):
        return ("must not allow --%s: it is not a vllm serve option but an abbreviation of --%s. Fix: allow the "
                "full name." % (name, ", --".join(resolved)))
    return None


def check_extra_args(extra_args, extra_flags_allowed=()):
    """Refusals for vllm_server_extra_args (one token per item, allow-listed flags, no owned or secret flag).

    Every spelling is resolved to the option vLLM's parser would pick (launch/serve_options.py) before it is
    compared, and only full option names pass: an abbreviation may expand differently in another release.
    """
    if extra_args is None:
        return []
    if not isinstance(extra_args, (list, tuple)):
        return [_refusal("extra_args", "vllm_server_extra_args must be a list of single arguments, not %s."
                         % type(extra_args).__name__)]
    out = []
    allowed = set(ALLOWED_FLAGS)
    if extra_flags_allowed is not None and not isinstance(extra_flags_allowed, (list, tuple)):
        out.append(_refusal("extra_flags_allowed", "vllm_server_extra_flags_allowed must be a list of flag names, "
                            "not %s." % type(extra_flags_allowed).__name__))
        extra_flags_allowed = ()
    for flag in extra_flags_allowed or ():
        why = _refused_allow_entry(flag)
        if why:
            out.append(_refusal("extra_flags_allowed", "vllm_server_extra_flags_allowed " + why))
        else:
            allowed.add(normalise_long(flag if flag.startswith("--") else "--" + flag))
    previous = None
    for arg in extra_args:
        before, previous = previous, arg
        if not isinstance(arg, str) or not _EXTRA_ARG_RE.match(arg):
            out.append(_refusal("extra_args", "vllm_server_extra_args item %r is refused: one argument per item, "
                                "letters, digits and _@+=:,./- only (no spaces, quotes, $ or ;)." % (arg,)))
            continue
        if not arg.startswith("-") or _NUMBER_RE.match(arg):
            # a value of the flag before it; with no flag before it (the first item, or after --flag=value) vLLM's
            # parser refuses it ("unrecognized arguments") and vLLM does not start
            if before is None or (isinstance(before, str) and before.startswith("-") and "=" in before
                                  and not _NUMBER_RE.match(before)):
                out.append(_refusal("extra_args", "vllm_server_extra_args item %r is a value with no flag before it: "
                                    "vLLM's parser refuses it (unrecognized arguments) and vLLM would not start. Fix: "
                                    "put it right after its --flag, or write --flag=value in one item." % (arg,)))
            continue
        if arg == "--" or arg.startswith("--=") or arg.startswith("---"):
            why = "ends vLLM's options or is no option name. Fix: one --flag per item, then its value."
        elif arg.startswith("--"):
            why = _refused_flag(_flag_name(arg), allowed)
        else:
            status, resolved = resolve_short(arg)
            why = None
            for long_name in resolved:
                why = why or _refused_flag(long_name, allowed, EXACT, [long_name])
            if not resolved:
                why = "is not a known short flag. Fix: use the long flag name."
            elif not why and status != EXACT:
                why = ("is an abbreviation of the short flag of --%s; argparse would expand it. Fix: use the long "
                       "flag name." % ", --".join(resolved))
        if why:
            out.append(_refusal("extra_args", "vllm_server_extra_args item %r %s" % (arg, why)))
    return out


def check_container(image, pull, user, shm_size):
    """Container runtime: a pinned image, an explicit pull policy, a numeric user."""
    out = []
    if not image:
        out.append(_refusal("container_image", "vllm_server_container_image is empty. Fix: set the image with a "
                            "pinned tag or digest, for example vllm/vllm-openai:v0.20.1."))
    elif isinstance(image, str):
        reference = image.split("@", 1)[0]
        tail = reference.rsplit("/", 1)[-1]
        tag = tail.split(":", 1)[1] if ":" in tail else None
        # A moving tag is only a problem when docker may pull it: with pull 'never' the image on the
        # host is the one preflight read the vLLM version from (the skill recommends
        # vllm/vllm-openai:latest on Thor), so it is what runs.
        if "@sha256:" not in image and tag in (None, "latest") and pull != "never":
            out.append(_refusal("container_image_moving_tag", "vllm_server_container_image %s %s the moving "
                                ":latest tag with vllm_server_container_pull %r: every pull may run a different vLLM "
                                "than the one tested. Fix: pin a version tag (vllm/vllm-openai:v0.20.1) or a digest "
                                "(@sha256:...), or pull the image yourself and set vllm_server_container_pull: never "
                                "(preflight then reads the vLLM version of the image on the host)."
                                % (image, "uses" if tag else "implies", pull)))
    if pull not in ("missing", "never", "always"):
        out.append(_refusal("container_pull", "vllm_server_container_pull %r is not a docker pull policy. Fix: "
                            "missing, never or always." % (pull,)))
    if user not in (None, "") and not (isinstance(user, str) and NUMERIC_ID_RE.match(user)):
        out.append(_refusal("container_user", "vllm_server_container_user %r must be UID:GID in numbers (a name "
                            "would have to exist inside the image). Fix: for example 1000:1000, or empty for "
                            "the image's user." % (user,)))
    if not isinstance(shm_size, str) or not SHM_SIZE_RE.match(shm_size):
        out.append(_refusal("container_shm_size", "vllm_server_container_shm_size %r is not a size. Fix: for "
                            "example 2g." % (shm_size,)))
    return out


def check_model_set(opts):
    """vllm_server_model has no default: without it nothing can be planned (one clear message, not a
    templating error in every task that names it). Checked only when the caller passes ``model``."""
    if "model" not in opts:
        return []
    model = opts.get("model")
    if isinstance(model, str) and model.strip():
        return []
    return ["input.model_missing: vllm_server_model is %s; set it (the model vLLM serves: a Hugging Face id such "
            "as meta-llama/Llama-3.1-8B-Instruct, or a local directory) in the inventory, for example "
            "group_vars/jetsons.yml." % ("not set" if model in (None, "") else "not a model name (%r)" % (model,))]


def check_model_refs(opts):
    """The model and the draft become argv and unit lines: a Hugging Face id or a plain absolute path
    (``launch/spec_config.py`` MODEL_REF_RULE), refused here with a rule id before the plan reads them.
    An unset or non-string model is input.model_missing's; a draft that is no string is the argument spec's."""
    out = []
    for key, var in (("model", "vllm_server_model"), ("speculative_model", "vllm_server_speculative_model")):
        ref = opts.get(key)
        if not isinstance(ref, str) or not ref.strip():
            continue
        try:
            validate_model_ref(ref, var)
        except SpecConfigError as exc:
            out.append(_refusal("model_ref", "%s. Fix: give %s as owner/name of the Hub or an absolute path "
                                "of letters, digits and . _ / -." % (exc, var)))
    return out


def input_refusals(opts):
    """Every refusal for the role's inputs: the model first, then the service name (it names the unit and env file)."""
    runtime = opts.get("runtime")
    out = check_model_set(opts)
    out += check_model_refs(opts)
    out += check_service_name(opts.get("service_name"))
    out += check_account(opts.get("user"), opts.get("group"), opts.get("supplementary_groups", []))
    out += check_data_path("vllm_server_hf_home", opts.get("hf_home"))
    out += check_secret("vllm_server_api_key", opts.get("api_key"))
    out += check_secret("vllm_server_hf_token", opts.get("hf_token"))
    out += check_environment(opts.get("environment", {}), opts.get("hf_token"))
    out += check_booleans(dict(opts.get("booleans") or {}, vllm_server_allow_open_bind=opts.get("allow_open_bind")))
    try:
        allow_open_bind = strict_bool("vllm_server_allow_open_bind", opts.get("allow_open_bind"))
    except ValueError:
        allow_open_bind = False  # refused above as input.boolean
    out += check_host(opts.get("host"), opts.get("api_key"), allow_open_bind)
    out += check_extra_args(opts.get("extra_args"), opts.get("extra_flags_allowed"))
    if runtime == "container":
        out += check_executable("vllm_server_docker_bin", opts.get("docker_bin"))
        out += check_container(opts.get("image"), opts.get("pull"), opts.get("container_user"),
                               opts.get("shm_size"))
    else:
        out += check_executable("vllm_server_native_bin", opts.get("native_bin"))
    return out
