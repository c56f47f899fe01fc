"""Fixtures of the rollout tests: small simulated fleets (see harness.py).

Each module brings up its own fleet under its own container prefix and removes
it afterwards. Needs dockerd and the test-bed board image (built on demand).
"""
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from harness import Fleet  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if shutil.which("docker") is None or subprocess.run(["docker", "info"], capture_output=True, check=False).returncode:
        skip = pytest.mark.skip(reason="needs a running dockerd (the test bed)")
        for item in items:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def make_fleet(tmp_path_factory):
    fleets = []

    def make(prefix, boards, hostvars=None):
        fleet = Fleet(prefix, boards, hostvars, workdir=str(tmp_path_factory.mktemp(prefix.strip("-"))))
        fleets.append(fleet)
        return fleet.up()

    yield make
    for fleet in fleets:
        if not os.environ.get("SPECDEC_KEEP_FLEET"):
            fleet.down()
