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
