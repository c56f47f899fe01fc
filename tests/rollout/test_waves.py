"""Fleets beyond one controller: staged waves, and one report from pull-mode boards.

Waves - rollout_wave_percent rolls out a stable share of the fleet.

Two Orin NX boards with no vLLM unit (a rollout there is quick: speculation is off by
the shipped group_vars policy and the baseline is installed). Their buckets (sha256 of the inventory name,
modulo 100) are wv-1 -> 4 and wv-4 -> 82, so a 50 % wave takes wv-1 and holds wv-4 back,
untouched; raising the wave to 100 rolls out wv-4 and leaves the converged wv-1 alone. An
impossible percentage is refused before any host changes.

The pull-mode report (playbooks/pull_report.yml) reuses these boards: wv-4 gets the record of
its last run in the place and shape a pull-mode run leaves it (under the reports folder of the
board, as "localhost"); wv-1 has none. The gathered report names wv-4 by its inventory name and
lists wv-1 as without a record.
"""
import json
import os
import subprocess

import pytest

from harness import assert_serving, assert_state, board, recap

# In CI (make test) again since each arm switch is one task (about 2 min here). Which hosts a wave takes is
# unit-tested (tests/unit/plugins/module_utils/test_record_wave.py); this is its run on a simulated fleet.

PREFIX = "specdec-wv-"
CLONED_ID = "0123456789abcdef0123456789abcdef"
SYSROOT = "/opt/jetson-sim/root"  # the board's root as the collection reads it (tests/testbed/fleet.py)
BOARDS = [board("wv-1", "nx-01"), board("wv-4", "nx-01")]


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    fleet.half = fleet.run("playbooks/rollout.yml", rollout_run_id="wave50", rollout_wave_percent=50)
    fleet.after_half = dict((h, fleet.state(h)) for h in fleet.hosts)
    fleet.unit_after_half = dict((h, fleet.unit(h)) for h in fleet.hosts)
    fleet.bad = fleet.run("playbooks/rollout.yml", rollout_run_id="wave-bad", rollout_wave_percent=150)
    fleet.after_bad = dict((h, fleet.state(h)) for h in fleet.hosts)
    fleet.full = fleet.run("playbooks/rollout.yml", rollout_run_id="wave100", rollout_wave_percent=100)
    plant_pull_record(fleet, "wv-4", "wave100", "20261201T020000-pull")
    fleet.gathered = fleet.run("playbooks/pull_report.yml", pull_report_run_id="gathered")
    # Both boards cloned from one image: one machine id (in the board's sysroot, where jetson_facts and the pull
    # report read /etc/machine-id). Keyed on it, a wave would take both or hold both.
    for host in fleet.hosts:
        fleet.sh(host, "printf '%s\\n' " + CLONED_ID + " > " + SYSROOT + "/etc/machine-id", check=True)
    # forced, so that both need a rollout and the wave decides which one runs
    fleet.cloned = fleet.run("playbooks/rollout.yml", rollout_run_id="cloned", rollout_wave_percent=50, rollout_force=True,
                             rollout_wave_key="{{ ansible_facts.jetson.machine_id }}")
    fleet.cloned_pull = fleet.run("playbooks/pull_report.yml", pull_report_run_id="cloned-pull")
    return fleet


def plant_pull_record(fleet, host, push_run, pull_run):
    """The host's record of a run, where and as a pull-mode run on the board writes it."""
    with open(os.path.join(fleet.reports, push_run, "hosts", host + ".json")) as handle:
        record = json.load(handle)
    record.update(host="localhost", run_id=pull_run)
    folder = "/var/lib/jetson-specdec/reports/%s/hosts" % pull_run
    subprocess.run(["docker", "exec", "-i", fleet.container(host), "sh", "-c",
                    "mkdir -p %s && cat > %s/localhost.json" % (folder, folder)],
                   input=json.dumps(record), text=True, check=True, capture_output=True, timeout=60)


def test_a_half_wave_rolls_out_the_host_inside_it_and_holds_the_other(fleet):
    rc, out, dummy = fleet.half
    assert rc == 0, out[-3000:]
    assert_state(fleet, "wv-1", "off")
    assert_serving(fleet, "wv-1", speculative=False)
    # wv-4 is held: nothing was written or started on it
    assert fleet.after_half["wv-4"] is None and fleet.unit_after_half["wv-4"] == ""
    assert recap(out)["wv-4"]["changed"] == 0, out[-3000:]
    rows = fleet.report_rows("wave50")
    assert rows["wv-4"]["status"] == "held" and rows["wv-4"]["decision"] == "held", rows["wv-4"]
    assert rows["wv-1"]["status"] == "off"
    # the held host's reason is in the report (the console prints its Summary only)
    with open(os.path.join(fleet.reports, "wave50", "report.md")) as handle:
        markdown = handle.read()
    assert "outside the 50 % wave" in markdown and "above 82 includes it" in markdown, markdown[-3000:]


def test_an_impossible_percentage_is_refused_before_any_host_changes(fleet):
    rc, out, dummy = fleet.bad
    assert rc != 0
    assert "input.wave_percent: rollout_wave_percent must be an integer from 0 to 100" in out, out[-3000:]
    assert fleet.after_bad == fleet.after_half


def test_the_full_wave_adds_the_held_host_and_leaves_the_converged_one(fleet):
    rc, out, dummy = fleet.full
    assert rc == 0, out[-3000:]
    rows = fleet.report_rows("wave100")
    assert rows["wv-1"]["status"] == "unchanged", rows["wv-1"]
    assert rows["wv-4"]["status"] == "off", rows["wv-4"]
    assert_state(fleet, "wv-4", "off")
    assert_serving(fleet, "wv-4", speculative=False)


def test_the_pull_mode_report_names_each_board_and_lists_the_one_without_a_record(fleet):
    rc, out, dummy = fleet.gathered
    assert rc == 0, out[-3000:]
    report = fleet.report("gathered")
    rows = fleet.report_rows("gathered")
    assert set(rows) == {"wv-4"}, rows
    assert rows["wv-4"]["status"] == "off" and rows["wv-4"]["family"] == "orin_nx", rows["wv-4"]
    assert report["missing_hosts"] == ["wv-1"], report["missing_hosts"]
    assert "Report: " in out


def test_boards_sharing_a_machine_id_are_keyed_on_their_inventory_names_and_named_with_the_fix(fleet):
    """Keyed on the shared machine id both boards would fall into one bucket; each is keyed on its inventory
    name instead (wv-1 -> 4 inside the 50 % wave, wv-4 -> 82 held), and the run says so with the fix."""
    rc, out, dummy = fleet.cloned
    assert rc == 0, out[-3000:]
    for host, other in (("wv-1", "wv-4"), ("wv-4", "wv-1")):
        assert "%s shares its machine id" % host in out and "with %s (boards cloned from one image)" % other in out, out[-3000:]
    assert "systemd-machine-id-setup" in out
    assert CLONED_ID not in out  # named by a short hash, never the id itself
    rows = fleet.report_rows("cloned")
    assert rows["wv-4"]["status"] == "held", rows["wv-4"]
    assert rows["wv-1"]["status"] == "off", rows["wv-1"]
    assert_serving(fleet, "wv-1", speculative=False)
    assert_serving(fleet, "wv-4", speculative=False)


def test_the_pull_mode_report_names_the_boards_that_share_a_machine_id(fleet):
    rc, out, dummy = fleet.cloned_pull
    assert rc == 0, out[-3000:]
    assert "WARNING: wv-1 + wv-4 share a machine id" in out, out[-3000:]
    assert "systemd-machine-id-setup" in out
    # the earlier pull report, with their own ids, said nothing of the kind
    assert "WARNING: wv-1 + wv-4 share" not in fleet.gathered[1]
