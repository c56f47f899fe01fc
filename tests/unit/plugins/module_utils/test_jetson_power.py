"""jetson/power.py: rails found by driver name and label in real sysfs layouts, the board's total, energy."""
import os
import shutil

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.jetson import power
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.detect import gather
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.files import RootReader

BOARDS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "boards")


def _root(name):
    return os.path.join(BOARDS, name, "root")


def _put(root, rel, text):
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("%s\n" % text)


@pytest.mark.parametrize("board, total, mw", [
    # Thor: the carrier's INA238 is the total input; power1_input is in microwatts.
    ("thor-t5000-devkit-r39.2", ["VIN"], 42159.6),
    # AGX Orin: no total rail; the module total is three rails (VDDQ_VDD2_1V8AO is fed by VIN_SYS_5V0).
    ("agx-orin-64gb-devkit-r39.2", ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"],
     19160 * 1720 / 1000.0 + 19160 * 540 / 1000.0 + 5000 * 1130 / 1000.0),
    ("agx-orin-32gb-r39.2.1", ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"],
     19160 * 1720 / 1000.0 + 19160 * 540 / 1000.0 + 5000 * 1130 / 1000.0),
    # Orin NX and Nano (p3767): VDD_IN is the module input; INA3221 has no power file, mV x mA.
    ("orin-nx-16gb-r36.4.3", ["VDD_IN"], 5016 * 2870 / 1000.0),
    ("orin-nano-super-r36.4.3", ["VDD_IN"], 5016 * 1930 / 1000.0),
])
def test_fixture_boards_give_their_total(board, total, mw):
    reader = RootReader(_root(board))
    rails = power.find_rails(reader)
    names, how = power.total_rails(rails)
    assert names == total
    assert power.read_total_mw(reader, rails, names) == pytest.approx(mw)
    assert gather(_root(board))["power"]["total_rails"] == total


def test_unconnected_channels_and_other_hwmon_devices_are_not_rails():
    rails = power.find_rails(RootReader(_root("agx-orin-64gb-devkit-r39.2")))
    names = [r["name"] for r in rails]
    assert "NC" not in names
    assert names.count("VDDQ_VDD2_1V8AO") == 1
    assert all(r["sensor"] == "ina3221" for r in rails)  # tegra_pwm_fan is not a monitor
    thor = [r["name"] for r in power.find_rails(RootReader(_root("thor-t5000-devkit-r39.2")))]
    assert thor == ["VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0", "VIN"]


def test_a_board_without_rails_has_none_and_no_meter():
    reader = RootReader(_root("thor-t5000-devkit-r38.2"))
    assert power.find_rails(reader) == []
    assert power.total_rails([]) == ([], "no power rails")
    assert power.meter_for(reader) is None
    assert gather(_root("thor-t5000-devkit-r38.2"))["power"]["rails"] == []
    assert gather(_root("x86-host"))["power"] is None


def test_jetpack4_iio_layout_and_the_sum_fallback(tmp_path):
    base = "sys/bus/i2c/drivers/ina3221x/1-0040/iio:device0"
    for ch, (label, mw) in enumerate([("VDD_SYS_GPU", 1200), ("VDD_SYS_SOC", 800), ("NC", 5)]):
        _put(tmp_path, "%s/rail_name_%d" % (base, ch), label)
        _put(tmp_path, "%s/in_power%d_input" % (base, ch), mw)
    reader = RootReader(str(tmp_path))
    rails = power.find_rails(reader)
    names, how = power.total_rails(rails)
    assert names == ["VDD_SYS_GPU", "VDD_SYS_SOC"] and how.startswith("sum of all rails")
    assert power.read_total_mw(reader, rails, names) == 2000.0


def test_a_total_rail_wins_over_the_sum_and_a_fed_rail_is_not_counted_twice():
    rails = [{"name": n} for n in ("VDD_CPU", "POM_5V_IN", "VDD_GPU")]
    assert power.total_rails(rails)[0] == ["POM_5V_IN"]
    rails = [{"name": n} for n in ("VIN_SYS_5V0", "VDDQ_VDD2_1V8AO", "VDD_X")]
    assert power.total_rails(rails)[0] == ["VIN_SYS_5V0", "VDD_X"]


@pytest.mark.parametrize("volt, curr", [("", "100"), ("garbage", "100"), ("5000", "-3"), (None, "100")])
def test_an_unreadable_rail_reads_none_not_a_number(tmp_path, volt, curr):
    base = "sys/class/hwmon/hwmon3"
    _put(tmp_path, base + "/name", "ina3221")
    _put(tmp_path, base + "/in1_label", "VDD_IN")
    if volt is not None:
        _put(tmp_path, base + "/in1_input", volt)
    _put(tmp_path, base + "/curr1_input", curr)
    reader = RootReader(str(tmp_path))
    rails = power.find_rails(reader)
    assert power.read_total_mw(reader, rails, ["VDD_IN"]) is None
    assert power.meter_for(reader) is None


def test_integrate_is_the_trapezoid_and_needs_two_samples():
    assert power.integrate([]) is None
    assert power.integrate([(0.0, 1000.0)]) is None
    assert power.integrate([(0.0, 1000.0), (0.0, 2000.0)]) is None  # no time passed
    got = power.integrate([(0.0, 1000.0), (1.0, 3000.0), (2.0, 3000.0), (3.0, None)])
    assert got == {"energy_j": 5.0, "power_w_avg": 2.5, "seconds": 2.0, "samples": 3}
    assert power.integrate([(0.0, float("nan")), (1.0, 1000.0), (2.0, 1000.0)])["energy_j"] == 1.0


def test_per_token():
    energy = {"energy_j": 10.0, "power_w_avg": 5.0, "seconds": 2.0, "samples": 21}
    got = power.per_token(energy, 400)
    assert got["j_per_token"] == 0.025 and got["tokens_per_j"] == 40.0 and got["output_tokens"] == 400
    assert power.per_token(energy, 0)["j_per_token"] is None
    assert power.per_token(None, 400) is None


def test_the_meter_integrates_what_the_rail_reads_while_it_runs(tmp_path):
    """A fake clock and a rail that changes between samples: the energy is the trapezoid of what was read."""
    src = os.path.join(_root("orin-nx-16gb-r36.4.3"), "sys")
    shutil.copytree(src, str(tmp_path / "sys"))
    reader = RootReader(str(tmp_path))
    ticks = iter(range(100))
    meter = power.meter_for(reader)
    meter.clock = lambda: float(next(ticks))
    meter.interval = 3600  # the thread never samples on its own: start and stop only
    meter.start()
    _put(tmp_path, "sys/class/hwmon/hwmon1/curr1_input", 0)
    got = meter.stop()
    assert got["samples"] == 2 and got["seconds"] == 1.0
    assert got["energy_j"] == pytest.approx(5016 * 2870 / 1e6 / 2, abs=1e-4)


def test_the_meter_samples_in_its_thread(tmp_path):
    src = os.path.join(_root("thor-t5000-devkit-r39.2"), "sys")
    shutil.copytree(src, str(tmp_path / "sys"))
    meter = power.meter_for(RootReader(str(tmp_path)), interval=0.01)
    meter.start()
    while len(meter.samples) < 4:
        pass
    got = meter.stop()
    assert got["samples"] >= 5
    assert got["power_w_avg"] == pytest.approx(42.1596)
    assert power.PowerMeter(None, [], []).stop() is None  # never started
