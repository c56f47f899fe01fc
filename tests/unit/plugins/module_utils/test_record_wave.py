"""Staged rollout by waves (record/wave.py) and the held hosts it makes (record.from_stored)."""
import hashlib

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.filter.record import FilterModule
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.detect import _machine_id
from ansible_collections.jetson.specdec.plugins.module_utils.record import record as rec
from ansible_collections.jetson.specdec.plugins.module_utils.record.wave import WaveError, wave, wave_bucket

KEYS = ["board-%04d" % i for i in range(2000)]


def needs(reason="config changed"):
    return {"needs_rollout": True, "needs_rollout_reason": reason, "rollout_state": {}}


def test_the_bucket_is_the_sha256_of_the_key_modulo_100_and_stable():
    expected = int.from_bytes(hashlib.sha256(b"agx-07").digest()[:4], "big") % 100
    assert wave_bucket("agx-07") == expected == wave_bucket(" agx-07 ")
    assert all(0 <= wave_bucket(k) < 100 for k in KEYS)


def test_raising_the_percentage_only_adds_hosts():
    small = set(k for k in KEYS if wave(k, 10)["in_wave"])
    large = set(k for k in KEYS if wave(k, 50)["in_wave"])
    assert small < large
    assert not any(wave(k, 0)["in_wave"] for k in KEYS) and all(wave(k, 100)["in_wave"] for k in KEYS)


@pytest.mark.parametrize("percent", [10, 25, 50, 90])
def test_a_wave_holds_about_its_share_of_a_fleet(percent):
    share = sum(1 for k in KEYS if wave(k, percent)["in_wave"]) / float(len(KEYS))
    assert abs(share - percent / 100.0) < 0.04, share


@pytest.mark.parametrize("bad", [101, -1, "ten", True, 12.5, None])
def test_an_impossible_percentage_names_the_rule_and_the_fix(bad):
    with pytest.raises(WaveError, match=r"input\.wave_percent: rollout_wave_percent must be an integer from 0 to 100"):
        wave("h", bad)


def test_a_templated_percentage_string_is_read_as_a_number():
    assert wave("h", "100")["in_wave"] and wave("h", "100")["percent"] == 100


@pytest.mark.parametrize("bad", ["", "   ", None, 7])
def test_a_missing_key_is_refused(bad):
    with pytest.raises(WaveError, match="rollout_wave_key"):
        wave_bucket(bad)


def _outside(percent=10):
    return next(k for k in KEYS if wave_bucket(k) >= percent)


def _inside(percent=10):
    return next(k for k in KEYS if wave_bucket(k) < percent)


def test_a_host_outside_the_wave_is_held_and_says_how_to_include_it():
    key = _outside()
    out = rec.from_stored(rec.new_record("h", "run", {"family": "thor"}), needs(), wave_key=key, wave_percent=10)
    assert out["status"] == "held"
    assert out["wave"] == {"in_wave": False, "bucket": wave_bucket(key), "percent": 10, "reason": out["wave"]["reason"]}
    assert "outside the 10 % wave" in out["reasons"][0] and "config changed" in out["reasons"][0]
    assert "above %d includes it" % wave_bucket(key) in out["reasons"][0]


def test_a_host_inside_the_wave_is_queued_and_a_converged_host_stays_unchanged():
    inside = rec.from_stored({}, needs(), wave_key=_inside(), wave_percent=10)
    assert inside["status"] == "queued" and inside["wave"]["in_wave"]
    converged = rec.from_stored({}, {"needs_rollout": False, "needs_rollout_reason": "converged", "rollout_state": {}},
                                wave_key=_outside(), wave_percent=10)
    assert converged["status"] == "unchanged"


def test_check_mode_holds_a_host_outside_the_wave_instead_of_planning_it():
    out = rec.from_stored({}, needs(), True, "", wave_key=_outside(), wave_percent=10)
    assert out["status"] == "held" and "plan" not in out


def test_the_filter_turns_a_bad_percentage_into_a_filter_error():
    record_filter = FilterModule().filters()["rollout_record"]
    with pytest.raises(AnsibleFilterError, match="input.wave_percent"):
        record_filter({}, "stored", needs(), wave_key="h", wave_percent=150)


@pytest.mark.parametrize("text,expected", [
    ("5f3c9e0a8b7d4c21a0e9f6b3d2c1a7e4\n", "5f3c9e0a8b7d4c21a0e9f6b3d2c1a7e4"),
    ("5F3C9E0A8B7D4C21A0E9F6B3D2C1A7E4", "5f3c9e0a8b7d4c21a0e9f6b3d2c1a7e4"),
    ("uninitialized\n", None), ("", None), (None, None), ("xyz", None)])
def test_the_machine_id_fact_is_32_hex_digits_or_null(text, expected):
    assert _machine_id(text) == expected


# Cloned boards share /etc/machine-id (issue 34): keyed on it they all fall into one wave.
CLONE = "0123456789abcdef0123456789abcdef"
FLEET = {"nx-01": CLONE, "nx-02": CLONE + "\n", "nx-03": "fedcba9876543210fedcba9876543210", "nx-04": "uninitialized",
         "nx-05": "uninitialized"}


def test_boards_that_share_a_machine_id_are_keyed_on_their_inventory_name_and_named():
    from ansible_collections.jetson.specdec.plugins.module_utils.record import wave as w
    first = w.wave_key_for("nx-01", CLONE, FLEET)
    second = w.wave_key_for("nx-02", CLONE.upper(), FLEET)
    assert (first["key"], first["shared_with"]) == ("nx-01", ["nx-02"])
    assert (second["key"], second["shared_with"]) == ("nx-02", ["nx-01"])
    assert "nx-01 shares its machine id" in first["warning"] and "nx-02" in first["warning"]
    assert "rm /etc/machine-id" in first["warning"] and "systemd-machine-id-setup" in first["warning"]
    assert CLONE not in first["warning"]  # the id itself stays private: a short sha256 names it
    # the wave is staged again: the clones' buckets are their names', no longer one bucket for both
    assert [w.wave_bucket(first["key"]), w.wave_bucket(second["key"])] == [w.wave_bucket("nx-01"), w.wave_bucket("nx-02")]


@pytest.mark.parametrize("host,key", [
    ("nx-03", "fedcba9876543210fedcba9876543210"),  # a machine id of its own
    ("nx-01", "nx-01"),  # keyed on the inventory name already (push mode's default)
    ("nx-01", "rack-7"),  # an operator's own key, even on a clone
    ("nx-04", "uninitialized"),  # not a machine id: not judged as one
    ("nx-09", CLONE),  # a host whose facts say nothing
])
def test_any_other_key_is_kept(host, key):
    from ansible_collections.jetson.specdec.plugins.module_utils.record import wave as w
    assert w.wave_key_for(host, key, FLEET) == {"key": key, "shared_with": [], "warning": None}


def test_the_filter_reads_the_machine_ids_of_the_plays_hosts_only():
    from ansible_collections.jetson.specdec.plugins.filter.record import rollout_wave_key
    hostvars = {h: {"ansible_facts": {"jetson": {"machine_id": m}}} for h, m in FLEET.items()}
    hostvars["nx-06"] = {"ansible_facts": {}}
    found = rollout_wave_key(CLONE, "nx-01", ["nx-01", "nx-02", "nx-06"], hostvars)
    assert found["key"] == "nx-01" and found["shared_with"] == ["nx-02"]
    # nx-02 not in this play (a --limit): nx-01's id is its own here, the key stays
    assert rollout_wave_key(CLONE, "nx-01", ["nx-01", "nx-03"], hostvars)["key"] == CLONE


def test_pull_modes_duplicate_report_is_the_same_logic():
    from ansible_collections.jetson.specdec.plugins.filter.pull_mode import pull_machine_id_duplicates
    from ansible_collections.jetson.specdec.plugins.module_utils.record import wave as w
    assert pull_machine_id_duplicates(FLEET) == w.machine_id_duplicates(FLEET)
    assert [g["hosts"] for g in w.machine_id_duplicates(FLEET)] == [["nx-01", "nx-02"]]


def test_a_key_that_is_not_the_machine_id_reads_no_other_hosts_facts():
    """The default key (the inventory name) needs no scan: per host over thousands of hosts it would be quadratic."""
    from ansible_collections.jetson.specdec.plugins.filter.record import rollout_wave_key

    class Counting(dict):
        reads = []

        def __getitem__(self, name):
            self.reads.append(name)
            return dict.__getitem__(self, name)

    hostvars = Counting((h, {"ansible_facts": {"jetson": {"machine_id": m}}}) for h, m in FLEET.items())
    assert rollout_wave_key("nx-01", "nx-01", list(FLEET), hostvars) == {"key": "nx-01", "shared_with": [],
                                                                         "warning": None}
    assert hostvars.reads == ["nx-01"]
