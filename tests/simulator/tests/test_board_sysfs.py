"""The simulated board's sensors: held clocks at the real paths, a visible throttle, the noise unseen."""
import os
import threading
import time

import pytest
from test_noise import requests, tpots

from vllm_sim import board_sysfs
from vllm_sim.noise import Noise


def read(root, rel):
    with open(os.path.join(root, rel)) as handle:
        return handle.read().strip()


def test_held_clocks_and_a_throttle_use_the_devfreq_and_thermal_formats(tmp_path):
    board = board_sysfs.BoardSysfs(str(tmp_path), {"node": "sys/class/devfreq/17000000.gpu", "max_hz": 1300500000})
    board.held()
    node = "sys/class/devfreq/17000000.gpu"
    assert [read(tmp_path, node + "/" + f) for f in ("min_freq", "cur_freq", "max_freq")] == ["1300500000"] * 3
    assert read(tmp_path, "sys/class/thermal/thermal_zone0/type") == "gpu-thermal"
    assert int(read(tmp_path, "sys/class/thermal/thermal_zone0/temp")) < 60000
    board.throttle(2.5)
    assert read(tmp_path, node + "/cur_freq") == str(int(1300500000 / 2.5))
    assert read(tmp_path, node + "/min_freq") == "1300500000"  # still pinned: the board pulled the clock down
    assert int(read(tmp_path, "sys/class/thermal/thermal_zone0/temp")) > 90000
    board.throttle(1.0)
    assert read(tmp_path, node + "/cur_freq") == "1300500000"


class _Profile(object):
    def __init__(self, path):
        self.throttle_file = path


def test_the_stand_in_announces_the_faults_episode_and_its_end(tmp_path):
    path = str(tmp_path / "throttle")
    noise = Noise({"thermal": {"after_requests": 2, "duration_requests": 3, "slowdown": 2.0}})
    assert board_sysfs.attach(_Profile(path), noise, visible=True) == path
    assert board_sysfs.read_throttle(path) == 1.0
    seen = []
    for dummy in range(7):
        noise.admit()
        seen.append(board_sysfs.read_throttle(path))
    assert seen == [1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0]


def test_noise_alone_is_not_shown(tmp_path):
    path = str(tmp_path / "throttle")
    noise = Noise({"thermal": {"after_requests": 0, "duration_s": 100.0, "slowdown": 2.0}})
    board_sysfs.attach(_Profile(path), noise, visible=False)
    noise.admit()
    noise.step(0.01)
    assert noise.throttled() and board_sysfs.read_throttle(path) == 1.0


def test_a_request_counted_episode_ends_after_its_requests():
    settings = {"thermal": {"after_requests": 5, "duration_requests": 5, "slowdown": 3.0}, "seed": 1}
    slow = tpots(requests(settings, spec=False, n=15, out=16))
    fast = tpots(requests(None, spec=False, n=15, out=16))
    assert slow[:5] == pytest.approx(fast[:5]) and slow[10:] == pytest.approx(fast[10:])
    assert [round(s / f, 6) for s, f in zip(slow[5:10], fast[5:10])] == [3.0] * 5


def test_the_sensor_daemon_mirrors_the_announcement(tmp_path):
    import json
    profile = tmp_path / "profile.json"
    throttle = tmp_path / "throttle"
    profile.write_text(json.dumps({"throttle_file": str(throttle),
                                   "gpu_devfreq": {"node": "sys/class/devfreq/gpu-gpc-0", "max_hz": 1000000000}}))
    root = tmp_path / "root"
    threading.Thread(target=board_sysfs.sensors_main, args=([str(profile), str(root)],), daemon=True).start()
    cur = "sys/class/devfreq/gpu-gpc-0/cur_freq"

    def wait_for(value):
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                if read(root, cur) == value:
                    return True
            except OSError:
                pass
            time.sleep(0.01)
        return False

    assert wait_for("1000000000")
    throttle.write_text("1 4.0\n")
    assert wait_for("250000000")
    throttle.write_text("0\n")
    assert wait_for("1000000000")


def test_the_draw_follows_the_load_and_speculation():
    model = board_sysfs.PowerModel("/nonexistent", {"idle_w": 10, "busy_w": 20, "per_seq_w": 1, "draft_w": 5})
    assert model.watts(0, True) == 10
    assert model.watts(1, False) == 31 and model.watts(8, False) == 38
    assert model.watts(1, True) == 36


def test_the_stand_in_announces_its_draw_at_most_every_50_ms(tmp_path):
    ticks = [0.0]
    path = str(tmp_path / "power")
    model = board_sysfs.PowerModel(path, {"idle_w": 10, "busy_w": 20, "per_seq_w": 1, "draft_w": 5},
                                   clock=lambda: ticks[0])
    model.step(0, False)
    assert board_sysfs.read_power(path) == 10000
    model.step(2, False)  # going busy is always shown
    assert board_sysfs.read_power(path) == 32000
    model.step(3, True)  # another busy draw within 50 ms: not written yet
    assert board_sysfs.read_power(path) == 32000
    ticks[0] = 0.06
    model.step(3, True)
    assert board_sysfs.read_power(path) == 38000
    ticks[0] = 0.07
    model.step(0, False)  # going idle is always shown
    assert board_sysfs.read_power(path) == 10000


@pytest.mark.parametrize("fixture, rails", [
    ("thor-t5000-devkit-r39.2", ["VIN"]),
    ("agx-orin-64gb-devkit-r39.2", ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"]),
    ("orin-nx-16gb-r36.4.3", ["VDD_IN"]),
])
def test_the_daemon_scales_the_fixture_rails_to_the_draw_the_collection_reads(tmp_path, fixture, rails):
    """What the collection's own reader (jetson/power.py) sees after the daemon scaled a real layout."""
    import shutil
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    shutil.copytree(os.path.join(repo, "tests", "fixtures", "boards", fixture, "root", "sys"), str(tmp_path / "sys"))
    board = board_sysfs.BoardRails(str(tmp_path))
    board.draw(33000)
    import importlib.util
    spec = importlib.util.spec_from_file_location("unit_conftest", os.path.join(repo, "tests", "unit", "conftest.py"))
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # puts the collection on sys.path
    from ansible_collections.jetson.specdec.plugins.module_utils.jetson import power
    from ansible_collections.jetson.specdec.plugins.module_utils.jetson.files import RootReader
    reader = RootReader(str(tmp_path))
    found = power.find_rails(reader)
    names, dummy = power.total_rails(found)
    assert names == rails
    assert power.read_total_mw(reader, found, names) == pytest.approx(33000, rel=0.002)
