"""jetson_facts on each simulated board reads its own sysroot and gets the board right."""
import json
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def _expected(host):
    name = host.backend.get_hostname()
    with open(os.path.join(os.path.dirname(__file__), "..", "host_vars", name + ".yml")) as handle:
        fixture = [line.split(": ", 1)[1].strip() for line in handle if line.startswith("jetson_sim_fixture:")][0]
    with open(os.path.join(REPO, "tests", "fixtures", "boards", fixture, "expected.json")) as handle:
        return json.load(handle)["expect"]


def _facts(host):
    result = host.ansible("jetson.specdec.jetson_facts", "root=/opt/jetson-sim/root", check=False)
    return result["ansible_facts"]["jetson"]


def test_board_identity(host):
    facts, expect = _facts(host), _expected(host)
    for key in ("family", "variant", "module_part", "jetpack", "memory_total_bytes"):
        if key in expect:
            assert facts[key] == expect[key], key
    if "l4t.release" in expect:
        assert facts["l4t"]["release"] == expect["l4t.release"]


def test_nothing_changed_on_the_board(host):
    # A facts module changes nothing: the sysroot is still exactly the fixture.
    assert host.run("find /opt/jetson-sim/root -newer /etc/jetson-sim/profile.json -type f").stdout.strip() == ""
