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

Power works the same way: the stand-in, when its profile has ``power_file`` and a ``power``
model (``idle_w``, ``busy_w``, ``per_seq_w``, ``draft_w``), writes the board's draw in mW there
as its engine steps (idle; busy plus a share per running sequence; plus the draft's share while
it speculates), and the sensor daemon scales the board's INA3221/INA238 rail files (the fixture
tree's, found by hwmon ``name``) so their total reads that draw.
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


class BoardRails(object):
    """The fixture's power rails, scaled so the board's total reads a given draw.

    The total follows the collection's rule (jetson/power.py): VIN, POM_5V_IN or VDD_IN when
    present, else AGX Orin's three module rails, else every rail; every rail moves by the same
    factor, as a busier board draws more on each of them."""

    TOTALS = ("VIN", "POM_5V_IN", "VDD_IN")
    AGX_ORIN = ("VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0")

    def __init__(self, root):
        self.root = root
        self.rails = []  # (label, file, base value, unit mW per base unit)
        base = os.path.join(root, "sys/class/hwmon")
        try:
            devices = sorted(os.listdir(base))
        except OSError:
            devices = []
        for dev in devices:
            path = os.path.join(base, dev)
            name = _read(os.path.join(path, "name"))
            if name == "ina238":
                self._add("VIN", os.path.join(path, "power1_input"), 0.001, os.path.join(path, "curr1_input"))
            elif name == "ina3221":
                for ch in (1, 2, 3):
                    label = _read(os.path.join(path, "in%d_label" % ch))
                    volt = _read(os.path.join(path, "in%d_input" % ch))
                    if label and "NC" not in label.split() and volt and volt.isdigit():
                        self._add(label, os.path.join(path, "curr%d_input" % ch), int(volt) / 1000.0)

    def _add(self, label, path, mw_per_unit, also=None):
        value = _read(path)
        if value and value.isdigit():
            extra = _read(also) if also else None
            self.rails.append((label, path, int(value), mw_per_unit,
                               (also, int(extra)) if extra and extra.isdigit() else None))

    def _total_labels(self):
        labels = [r[0] for r in self.rails]
        for name in self.TOTALS:
            if name in labels:
                return [name]
        if all(n in labels for n in self.AGX_ORIN):
            return list(self.AGX_ORIN)
        return labels

    def base_mw(self):
        chosen = self._total_labels()
        return sum(base * unit for label, dummy, base, unit, dummy2 in self.rails if label in chosen)

    def draw(self, mw):
        """Scale every rail so the total reads ``mw``."""
        base = self.base_mw()
        if base <= 0:
            return
        factor = mw / base
        for dummy, path, value, dummy2, also in self.rails:
            _write(path, str(int(round(value * factor))))
            if also:
                _write(also[0], str(int(round(also[1] * factor))))


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (OSError, TypeError):
        return None


class PowerModel(object):
    """The stand-in's half of the power rails: the draw of each engine step, announced in mW."""

    MIN_GAP_S = 0.05  # the daemon polls this often; more writes would not be seen

    def __init__(self, path, model, clock=time.monotonic):
        self.path = path
        self.idle_w = float(model.get("idle_w", 0.0))
        self.busy_w = float(model.get("busy_w", 0.0))
        self.per_seq_w = float(model.get("per_seq_w", 0.0))
        self.draft_w = float(model.get("draft_w", 0.0))
        self.clock = clock
        self.shown, self.last = None, None

    def watts(self, n_seqs, speculating):
        if not n_seqs:
            return self.idle_w
        return self.idle_w + self.busy_w + self.per_seq_w * n_seqs + (self.draft_w if speculating else 0.0)

    def step(self, n_seqs, speculating):
        milli = int(round(1000 * self.watts(n_seqs, speculating)))
        now = self.clock()
        if milli == self.shown:
            return
        # Going busy or idle is always shown; between two busy draws, at most every MIN_GAP_S.
        busy_before = self.shown is not None and self.shown != int(round(1000 * self.idle_w))
        if n_seqs and busy_before and now - self.last < self.MIN_GAP_S:
            return
        try:
            _write(self.path, str(milli))
        except OSError as exc:
            sys.stderr.write("jetson-sim: cannot write %s: %s\n" % (self.path, exc))
            return
        self.shown, self.last = milli, now


def attach_power(profile):
    """A PowerModel when the profile has ``power_file`` and a ``power`` model, else None."""
    path = getattr(profile, "power_file", None)
    model = getattr(profile, "power", None) or {}
    if not path or not model:
        return None
    meter = PowerModel(path, model)
    meter.step(0, False)
    return meter


def read_power(path):
    """The draw the stand-in announced in mW, or None."""
    value = _read(path)
    return int(value) if value and value.isdigit() else None


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
    power_path = profile.get("power_file") if profile.get("power") else None
    rails = BoardRails(args[1]) if power_path else None
    shown, drawn = 1.0, None
    while path or power_path:
        now = read_throttle(path) if path else 1.0
        if now != shown:
            board.throttle(now)
            shown = now
        mw = read_power(power_path) if power_path else None
        if mw is not None and mw != drawn:
            rails.draw(mw)
            drawn = mw
        time.sleep(POLL_S)
    return 0
