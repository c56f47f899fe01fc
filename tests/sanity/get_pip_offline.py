"""Stand-in for the get-pip bootstrap script that ansible-test downloads.

ansible-test fetches get-pip.py from a host this machine cannot reach, and runs
pip with a scrubbed environment (only HOME and PATH survive), so the machine's
PIP_* settings (certificate bundle, local wheel folders) are lost.  The job of
get-pip.py is only "put pip into an empty virtual environment, then pip install
the given packages".  This file does the same with the standard library's
ensurepip, and writes the PIP_* settings that `make sanity` captured next to it
into the new venv's own pip.conf, so every later pip call in that venv sees them.
"""
import ensurepip
import json
import os
import subprocess
import sys

# get-pip.py options that `pip install` does not know.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}
SETTINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "specdec-pip-env.json")


def carry_pip_settings():
    try:
        with open(SETTINGS) as handle:
            settings = json.load(handle)
    except (OSError, ValueError):
        return
    lines = ["[global]"]
    for name, value in sorted(settings.items()):
        os.environ[name] = value
        lines.append("%s = %s" % (name[len("PIP_"):].lower().replace("_", "-"), value))
    with open(os.path.join(sys.prefix, "pip.conf"), "w") as handle:
        handle.write("\n".join(lines) + "\n")


carry_pip_settings()
# ensurepip scrubs PIP_* from os.environ and points PIP_CONFIG_FILE at /dev/null,
# so keep the environment from before it for the real install.
environment = dict(os.environ)
ensurepip.bootstrap(upgrade=True)
args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args, env=environment))
