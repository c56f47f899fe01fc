"""Pull mode refuses bad settings before it writes anything (issue 18, items 2 and 5).

One ansible-playbook run on localhost (local connection, no Docker): each bad setting goes
through the role, must fail in its first task with the rule in the message, and the folder
every pull-mode path points into must stay empty.
"""
import json
import os
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NL = "\n"
BAD_INPUTS = [
    ("http URL", {"pull_mode_repo_url": "http://git.example.invalid/specdec.git"}, "input.pull_url"),
    ("git:// URL", {"pull_mode_repo_url": "git://git.example.invalid/specdec.git"}, "input.pull_url"),
    ("scp-style URL", {"pull_mode_repo_url": "git@git.example.invalid:fleet/specdec.git"}, "input.pull_url"),
    ("file URL without opt-in", {"pull_mode_repo_url": "file:///srv/git/specdec.git"}, "input.pull_url"),
    ("ext:: transport", {"pull_mode_repo_url": "ext::sh -c touch% /tmp/pwned"}, "input.pull_url"),
    ("URL with a space", {"pull_mode_repo_url": "https://h/x.git --upload-pack=/bin/sh"}, "input.pull_url"),
    ("URL with a newline", {"pull_mode_repo_url": "https://h/x.git" + NL + "touch /tmp/pwned"}, "input.pull_control_chars"),
    ("URL with a CR", {"pull_mode_repo_url": "https://h/x.git\rExecStartPre=/bin/sh"}, "input.pull_control_chars"),
    ("empty URL", {"pull_mode_repo_url": ""}, "input.pull_url"),
    ("branch that is an option", {"pull_mode_branch": "--upload-pack=/bin/sh"}, "input.pull_ref"),
    ("branch with ..", {"pull_mode_branch": "main..evil"}, "input.pull_ref"),
    ("branch with a newline", {"pull_mode_branch": "main" + NL + "reboot"}, "input.pull_control_chars"),
    ("branch with a space", {"pull_mode_branch": "main; reboot"}, "input.pull_ref"),
    ("verification without keys", {"pull_mode_gpg_public_keys": ""}, "input.pull_verify"),
    ("keys that are not a key block", {"pull_mode_gpg_public_keys": "ssh-ed25519 AAAA"}, "input.pull_verify"),
    ("playbook with a newline", {"pull_mode_playbook": "playbooks/pull.yml" + NL + "ExecStartPre=/bin/sh"}, "input.pull_control_chars"),
    ("absolute playbook", {"pull_mode_playbook": "/tmp/evil.yml"}, "input.pull_relative"),
    ("playbook outside the checkout", {"pull_mode_playbook": "../../tmp/evil.yml"}, "input.pull_relative"),
    ("group_vars outside the checkout", {"pull_mode_group_vars_dir": "inventories/../../../etc"}, "input.pull_relative"),
    ("config dir with a newline", {"pull_mode_config_dir": "/etc/x" + NL + "ExecStartPre=/bin/sh"}, "input.pull_control_chars"),
    ("config dir with %", {"pull_mode_config_dir": "/etc/%n"}, "input.pull_path"),
    ("config dir with ..", {"pull_mode_config_dir": "/etc/jetson/../../root"}, "input.pull_path"),
    ("relative checkout base", {"pull_mode_checkout_base": "var/lib/pull"}, "input.pull_path"),
    ("script path with a space", {"pull_mode_script_path": "/usr/local/sbin/pull now"}, "input.pull_path"),
    ("git binary with ;", {"pull_mode_git_bin": "/usr/bin/git;reboot"}, "input.pull_path"),
    ("private key with a quote", {"pull_mode_private_key_file": "/root/.ssh/id'x"}, "input.pull_path"),
    ("unit name with a slash", {"pull_mode_unit_name": "../../tmp/x"}, "input.pull_unit_name"),
    ("unit name with a suffix", {"pull_mode_unit_name": "pull.service"}, "input.pull_unit_name"),
    ("calendar with a newline", {"pull_mode_on_calendar": "daily" + NL + "ExecStart=/bin/sh"}, "input.pull_control_chars"),
    ("calendar with %", {"pull_mode_on_calendar": "%H"}, "input.pull_schedule"),
    ("extra arg with a newline", {"pull_mode_extra_args": ["-e", "x=1" + NL + "reboot"]}, "input.pull_extra_args"),
    ("environment PATH", {"pull_mode_environment": {"PATH": "/tmp"}}, "input.pull_environment"),
    ("environment GNUPGHOME", {"pull_mode_environment": {"GNUPGHOME": "/tmp/gpg"}}, "input.pull_environment"),
    ("environment value with a newline", {"pull_mode_environment": {"https_proxy": "http://p" + NL + "ExecStart=/x"}},
     "input.pull_environment"),
    ("environment name with =", {"pull_mode_environment": {"A=B": "x"}}, "input.pull_environment"),
    # issue 34: extra arguments that bypass the signature check, the URL rule or the checkout (argparse
    # prefixes and bundles, ansible-pull's re-split command string), each spelling its own case.
    ("--force runs an unsigned commit", {"pull_mode_extra_args": ["--force"]}, "input.pull_extra_args"),
    ("-f", {"pull_mode_extra_args": ["-f"]}, "input.pull_extra_args"),
    ("--forc prefix", {"pull_mode_extra_args": ["--forc"]}, "input.pull_extra_args"),
    ("-vf bundle", {"pull_mode_extra_args": ["-vf"]}, "input.pull_extra_args"),
    ("quote injection into the checkout command",
     {"pull_mode_extra_args": ['--checkout=main" -m ansible.builtin.command -a "touch /tmp/pwned']}, "input.pull_extra_args"),
    ("--url override", {"pull_mode_extra_args": ["--url=http://git.example.invalid/x.git"]}, "input.pull_extra_args"),
    ("-U override", {"pull_mode_extra_args": ["-U", "http://git.example.invalid/x.git"]}, "input.pull_extra_args"),
    ("-Ccmain", {"pull_mode_extra_args": ["-Ccmain"]}, "input.pull_extra_args"),
    ("--verify prefix", {"pull_mode_extra_args": ["--verify"]}, "input.pull_extra_args"),
    ("-m module", {"pull_mode_extra_args": ["-m", "ansible.builtin.command"]}, "input.pull_extra_args"),
    ("-M module path", {"pull_mode_extra_args": ["-M", "/tmp/mods"]}, "input.pull_extra_args"),
    ("-d directory", {"pull_mode_extra_args": ["-d", "/tmp/evil"]}, "input.pull_extra_args"),
    ("-i inventory", {"pull_mode_extra_args": ["--inv=/tmp/inv"]}, "input.pull_extra_args"),
    ("--track-subs", {"pull_mode_extra_args": ["--track-subs"]}, "input.pull_extra_args"),
    ("extra var of the interpreter", {"pull_mode_extra_args": ["-e", "ansible_python_interpreter=/tmp/x"]},
     "input.pull_extra_args"),
    ("extra vars file", {"pull_mode_extra_args": ["-e", "@/tmp/vars.yml"]}, "input.pull_extra_args"),
    ("extra var with a template", {"pull_mode_extra_args": ["-e", "a={{ lookup('pipe', 'id') }}"]}, "input.pull_extra_args"),
    ("second playbook", {"pull_mode_extra_args": ["playbooks/evil.yml"]}, "input.pull_extra_args"),
    # issue 34: environment that points git, Ansible or Python elsewhere
    ("GIT_CONFIG_COUNT", {"pull_mode_environment": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gpg.program",
                                                    "GIT_CONFIG_VALUE_0": "/bin/true"}}, "input.pull_environment"),
    ("GIT_CONFIG_GLOBAL", {"pull_mode_environment": {"GIT_CONFIG_GLOBAL": "/tmp/gitconfig"}}, "input.pull_environment"),
    ("GIT_CONFIG_PARAMETERS", {"pull_mode_environment": {"GIT_CONFIG_PARAMETERS": "gpg.program=/bin/true"}},
     "input.pull_environment"),
    ("ANSIBLE_CONFIG", {"pull_mode_environment": {"ANSIBLE_CONFIG": "/tmp/ansible.cfg"}}, "input.pull_environment"),
    ("PYTHONPATH", {"pull_mode_environment": {"PYTHONPATH": "/tmp/py"}}, "input.pull_environment"),
    ("GIT_SSH_COMMAND with ProxyCommand", {"pull_mode_environment": {"GIT_SSH_COMMAND": "ssh -o ProxyCommand=/tmp/x"}},
     "input.pull_environment"),
    # issue 34: credentials in the URL
    ("https user:token", {"pull_mode_repo_url": "https://user:TOKEN@git.example.invalid/fleet/specdec.git"},
     "input.pull_url_credentials"),
    ("https token as user", {"pull_mode_repo_url": "https://TOKEN@git.example.invalid/fleet/specdec.git"},
     "input.pull_url_credentials"),
    ("ssh user:password", {"pull_mode_repo_url": "ssh://git:pw@git.example.invalid/fleet/specdec.git"},
     "input.pull_url_credentials"),
    # issue 34: system directories the role would chmod (or remove)
    ("log dir /var/log", {"pull_mode_log_dir": "/var/log"}, "input.pull_dir"),
    ("config dir /tmp", {"pull_mode_config_dir": "/tmp"}, "input.pull_dir"),
    ("checkout base /var/lib", {"pull_mode_checkout_base": "/var/lib"}, "input.pull_dir"),
    ("keyring in /root", {"pull_mode_gnupg_home": "/root"}, "input.pull_dir"),
    ("log dir through a link", {"pull_mode_log_dir": "@LINK@"}, "input.pull_dir"),
    # issue 34: unit names of the system
    ("unit name ssh", {"pull_mode_unit_name": "ssh"}, "input.pull_unit_name"),
    ("unit name getty@tty1", {"pull_mode_unit_name": "getty@tty1"}, "input.pull_unit_name"),
    ("unit name systemd-journald", {"pull_mode_unit_name": "systemd-journald"}, "input.pull_unit_name"),
    ("unit name vllm", {"pull_mode_unit_name": "vllm"}, "input.pull_unit_name"),
    ("script path over a system program", {"pull_mode_script_path": "/usr/bin/env"}, "input.pull_path"),
]


def test_bad_pull_mode_settings_are_refused_before_anything_is_written(tmp_path):
    tmp_path = tmp_path.resolve()  # realpath: the role refuses paths through a link
    root = tmp_path / "board"
    root.mkdir()
    # A folder named like the collection's own that is a link to a system directory.
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "jetson-specdec").symlink_to("/var/log")
    link = str(tmp_path / "links" / "jetson-specdec")
    var_log_mode = os.stat("/var/log").st_mode
    bad = [{"why": why, "vars": {k: (link if v == "@LINK@" else v) for k, v in bad_vars.items()}, "expect": expect}
           for why, bad_vars, expect in BAD_INPUTS]
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps({"pull_mode_bad_inputs": bad, "pull_mode_test_root": str(root)}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"),
               ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", "-c", "local",
                             "-e", "ansible_python_interpreter=" + os.path.join(REPO, ".venv", "bin", "python"),
                             "-e", "@%s" % extra, os.path.join(REPO, "tests", "pull_mode", "bad_inputs.yml")],
                            capture_output=True, text=True, env=env, cwd=REPO, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-3000:]
    refused = result.stdout.count("TASK [The refusal names the rule")
    assert refused == len(BAD_INPUTS), result.stdout[-6000:]
    assert "TASK [Good settings pass the same check" in result.stdout
    assert list(root.iterdir()) == [], "pull mode wrote files: %s" % list(root.iterdir())
    assert os.stat("/var/log").st_mode == var_log_mode
