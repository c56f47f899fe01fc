"""The simulated board's clock and temperature files, as the sensors of a real Jetson show them.

A real throttle is visible: the GPU devfreq node's ``cur_freq`` falls below the
``max_freq`` that ``jetson_clocks`` pinned ``min_freq`` to, and the thermal zones
read hot.  The collection samples those files (under rollout_facts_root on a
simulated board) before and during every benchmark round, so the test bed writes
the same paths and formats:

* ``<gpu_devfreq.node>/{cur_freq,min_freq,max_freq,governor}`` in Hz
  (``sys/class/devfreq/gpu-gpc-0`` on Thor, ``17000000.gpu`` on Orin, JetPack 6);
* ``sys/class/thermal/thermal_zone0/{type,temp}`` in millidegrees C.

Two halves, because the vLLM unit runs with ProtectSystem=strict and cannot write
the sysroot (a real kernel writes /sys, not vLLM):

* the stand-in, when its profile has ``throttle_file`` (a path in the unit's
  writable state directory), writes ``0`` there at every start and
  ``1 <slowdown>`` / ``0`` when the fault ``thermal_throttle`` begins and ends
  (the profile's noise is a slowdown nobody explains and is not shown);
* the board's sensor daemon (``bin/jetson-sim-sensors``, root, started by the test
  bed) holds the clocks (min = cur = max, a cool zone; with ``clocks_pinned: false``
  in the profile the floor stays at the DVFS minimum, as on a board nobody ran
  ``jetson_clocks`` on) and mirrors that file into the sysroot within a few milliseconds.

The board's ``nvpmodel`` and ``jetson_clocks`` stand-ins (board_tools.py) change the same
files the way the real tools do.
"""
import json
import os
import sys
import time

COOL_MILLI_C = 52000
HOT_MILLI_C = 96500
POLL_S = 0.05
GPU_FLOOR_HZ = 306000000  # the lowest clock of an Orin GPU's devfreq table


def _write(path, text):
    """Atomic: a reader never sees a half-written number."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        handle.write(text + "\n")
    os.replace(tmp, path)


class BoardSysfs(object):
    def __init__(self, root, devfreq):
        self.root = root
        self.node = str(devfreq.get("node") or "sys/class/devfreq/gpu-gpc-0").strip("/")
        self.max_hz = int(devfreq.get("max_hz") or 1575000000)
        self.min_hz = int(devfreq.get("min_hz") or GPU_FLOOR_HZ)
        self.zone = "sys/class/thermal/thermal_zone0"

    def _put(self, rel, text):
        _write(os.path.join(self.root, rel), text)

    def held(self, pinned=True):
        """The board at start: jetson_clocks pinned the GPU at its maximum (``pinned``), or DVFS
        may idle it down to the floor (``clocks_pinned: false`` in the profile); the board is cool."""
        for name in ("max_freq", "cur_freq"):
            self._put(self.node + "/" + name, str(self.max_hz))
        self._put(self.node + "/min_freq", str(self.max_hz if pinned else min(self.min_hz, self.max_hz)))
        self._put(self.node + "/governor", "nvhost_podgov")
        self._put(self.zone + "/type", "gpu-thermal")
        self._put(self.zone + "/temp", str(COOL_MILLI_C))

    def throttle(self, slowdown):
        """The clock the board actually runs at: the maximum, or below it while throttled."""
        active = slowdown > 1.0
        self._put(self.node + "/cur_freq", str(int(self.max_hz / slowdown) if active else self.max_hz))
        self._put(self.zone + "/temp", str(HOT_MILLI_C if active else COOL_MILLI_C))


def read_throttle(path):
    """The slowdown the stand-in announced (1.0: none or unreadable)."""
    try:
        with open(path) as handle:
            parts = handle.read().split()
    except OSError:
        return 1.0
    try:
        return float(parts[1]) if parts and parts[0] == "1" and len(parts) > 1 else 1.0
    except ValueError:
        return 1.0


def attach(profile, noise, visible):
    """The stand-in's half: announce the fault's episodes in the profile's ``throttle_file``."""
    path = getattr(profile, "throttle_file", None)
    if not path:
        return None

    def announce(text):
        try:
            _write(path, text)
        except OSError as exc:  # a test bed without the state directory: the episode stays unseen
            sys.stderr.write("jetson-sim: cannot write %s: %s\n" % (path, exc))

    announce("0")
    if visible and noise.thermal:
        slowdown = noise.thermal[2]
        noise.on_throttle = lambda active: announce("1 %s" % slowdown if active else "0")
    return path


def sensors_main(argv=None):
    """The sensor daemon: ``jetson-sim-sensors PROFILE_JSON SYSROOT``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        sys.stderr.write("usage: jetson-sim-sensors PROFILE_JSON SYSROOT\n")
        return 2
    with open(args[0]) as handle:
        profile = json.load(handle)
    board = BoardSysfs(args[1], profile.get("gpu_devfreq") or {})
    board.held(profile.get("clocks_pinned", True) is not False)
    path = profile.get("throttle_file")
    shown = 1.0
    while path:
        now = read_throttle(path)
        if now != shown:
            board.throttle(now)
            shown = now
        time.sleep(POLL_S)
    return 0
