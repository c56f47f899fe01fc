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
