# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""A Jetson's power rails: which sensors it has, which rails make its total, and joules per token.

Standard library only.  Jetson has no NVML; its power comes from the INA3221 (module rails) and,
on Thor's carrier, INA238 (total input) monitors in sysfs, the files jetson-stats and tegrastats read:

* L4T >= r34 (JetPack 5, 6, 7): the mainline hwmon ``ina3221`` driver, ``sys/class/hwmon/hwmon<N>/``
  with ``name`` = ``ina3221``, rails ``in<c>_label`` for channels 1-3, bus voltage ``in<c>_input``
  (mV) and current ``curr<c>_input`` (mA).  It exports no power file: the kernel computes nothing
  host-side, so power is mV x mA / 1000 (mW).  Channel 7 is the shunt sum, labels containing ``NC``
  are unconnected channels; both are skipped, as jetson-stats does.
* Thor's carrier: hwmon ``ina238`` with ``power1_input`` in microwatts, the total input rail ``VIN``.
* L4T <= r32: the downstream ``ina3221x`` IIO driver (``rail_name_<c>``, ``in_power<c>_input`` in mW,
  channels from 0).  Kept for completeness; the collection refuses those boards for speculation.

``hwmon<N>`` numbers change between boots, so devices are found by their ``name`` and rails by label.

The board's total is the first total-input rail present (``VIN``, then ``POM_5V_IN``, then ``VDD_IN``,
the order jetson-stats uses); AGX Orin has none, and its module total is
``VDD_GPU_SOC + VDD_CPU_CV + VIN_SYS_5V0`` (``VDDQ_VDD2_1V8AO`` is fed by ``VIN_SYS_5V0`` and would be
counted twice).  Otherwise every rail is summed.  Module rails exclude the carrier board, so the number is
the module's energy, comparable between two arms of one board, not a wall-socket reading.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import os
import re
import threading
import time

HWMON = "sys/class/hwmon"
IIO_INA3221X = "sys/bus/i2c/drivers/ina3221x"
TOTAL_INPUT_RAILS = ("VIN", "POM_5V_IN", "VDD_IN")
AGX_ORIN_MODULE_RAILS = ("VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0")
FED_BY = {"VDDQ_VDD2_1V8AO": "VIN_SYS_5V0"}  # a rail whose supply is another rail already counted
_HWMON_RE = re.compile(r"^hwmon\d+$")
_IIO_RE = re.compile(r"^iio:device\d+$")
MAX_RAILS = 16  # a board has at most a handful; more is a broken tree, not more power


def _int(text):
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def _listdir(reader, rel, pattern):
    try:
        names = os.listdir(reader.path(rel))
    except OSError:
        return []
    return sorted((n for n in names if pattern.match(n)), key=lambda n: int(re.sub(r"\D", "", n) or 0))


def _hwmon_rails(reader):
    rails = []
    for dev in _listdir(reader, HWMON, _HWMON_RE):
        base = "%s/%s" % (HWMON, dev)
        if not reader.is_dir(base):
            continue
        name = (reader.read_text(base + "/name") or "").strip()
        if name == "ina3221":
            for ch in (1, 2, 3):
                label = (reader.read_text("%s/in%d_label" % (base, ch)) or "").strip()
                if not label or "NC" in label.split():
                    continue
                rails.append({"name": label, "sensor": "ina3221", "device": "/" + base,
                              "volt": "%s/in%d_input" % (base, ch), "curr": "%s/curr%d_input" % (base, ch)})
        elif name == "ina238":
            # jetson-stats names Thor's carrier monitor's one rail VIN.
            rails.append({"name": "VIN", "sensor": "ina238", "device": "/" + base,
                          "power_uw": base + "/power1_input"})
    return rails


def _iio_rails(reader):
    rails = []
    for addr in _listdir(reader, IIO_INA3221X, re.compile(r"^\d+-[0-9a-fA-F]+$")):
        for dev in _listdir(reader, "%s/%s" % (IIO_INA3221X, addr), _IIO_RE):
            base = "%s/%s/%s" % (IIO_INA3221X, addr, dev)
            for ch in (0, 1, 2):
                label = (reader.read_text("%s/rail_name_%d" % (base, ch)) or "").strip()
                if label and "NC" not in label.split():
                    rails.append({"name": label, "sensor": "ina3221x", "device": "/" + base,
                                  "power_mw": "%s/in_power%d_input" % (base, ch)})
    return rails


def find_rails(reader):
    """Every readable rail under the reader's root, as dicts (name, sensor, device and the files)."""
    rails = _hwmon_rails(reader) + _iio_rails(reader)
    seen, unique = set(), []
    for rail in rails:
        if rail["name"] in seen:  # the same label twice (two monitors): keep the first
            continue
        seen.add(rail["name"])
        unique.append(rail)
    return unique[:MAX_RAILS]


def total_rails(rails):
    """The names of the rails whose sum is the board's total, and how that total was chosen."""
    names = [r["name"] for r in rails]
    for name in TOTAL_INPUT_RAILS:
        if name in names:
            return [name], "total input rail %s" % name
    if all(n in names for n in AGX_ORIN_MODULE_RAILS):
        return list(AGX_ORIN_MODULE_RAILS), "AGX Orin module rails %s" % " + ".join(AGX_ORIN_MODULE_RAILS)
    summed = [n for n in names if FED_BY.get(n) not in names]
    if not summed:
        return [], "no power rails"
    return summed, "sum of all rails (%s)" % " + ".join(summed)


def describe(reader):
    """The facts: the rails found and the total's rails, for jetson_facts."""
    rails = find_rails(reader)
    total, how = total_rails(rails)
    return {"rails": [{"name": r["name"], "sensor": r["sensor"], "device": r["device"]} for r in rails],
            "total_rails": total, "total_source": how}


def read_rail_mw(reader, rail):
    """One rail's power now in milliwatts, or None when a file is missing or garbage."""
    if "power_uw" in rail:
        value = _int(reader.read_text(rail["power_uw"]))
        return None if value is None or value < 0 else value / 1000.0
    if "power_mw" in rail:
        value = _int(reader.read_text(rail["power_mw"]))
        return None if value is None or value < 0 else float(value)
    volt, curr = _int(reader.read_text(rail["volt"])), _int(reader.read_text(rail["curr"]))
    if volt is None or curr is None or volt < 0 or curr < 0:
        return None
    return volt * curr / 1000.0


def read_total_mw(reader, rails, names):
    """The sum of the named rails now in mW, or None when one of them cannot be read."""
    by_name = dict((r["name"], r) for r in rails)
    total = 0.0
    for name in names:
        value = read_rail_mw(reader, by_name[name])
        if value is None:
            return None
        total += value
    return total


def integrate(samples):
    """Energy (J) and average power (W) of ``[(t seconds, mW)]`` by the trapezoidal rule.

    Returns None with fewer than two samples (one reading says nothing about a level's energy)."""
    points = [(float(t), float(p)) for t, p in samples
              if p is not None and math.isfinite(float(p)) and math.isfinite(float(t))]
    if len(points) < 2:
        return None
    joules = 0.0
    for (t0, p0), (t1, p1) in zip(points, points[1:]):
        if t1 > t0:
            joules += (p0 + p1) / 2.0 / 1000.0 * (t1 - t0)
    span = points[-1][0] - points[0][0]
    if span <= 0:
        return None
    return {"energy_j": round(joules, 4), "power_w_avg": round(joules / span, 4),
            "seconds": round(span, 4), "samples": len(points)}


def per_token(energy, output_tokens):
    """Add joules per output token and output tokens per joule to an ``integrate`` result."""
    if energy is None:
        return None
    out = dict(energy)
    out["output_tokens"] = int(output_tokens or 0)
    if output_tokens and energy["energy_j"] > 0:
        out["j_per_token"] = round(energy["energy_j"] / output_tokens, 6)
        out["tokens_per_j"] = round(output_tokens / energy["energy_j"], 4)
    else:
        out["j_per_token"] = None
        out["tokens_per_j"] = None
    return out


class PowerMeter(object):
    """Samples a board's total power in a thread of the benchmark's own process while a level runs.

    ``start()`` before the level's first request, ``stop()`` after its last: it returns the
    ``integrate`` result (or None when the rails could not be read twice).  The INA3221 averages over
    its own conversion window (milliseconds to tens of ms), so sampling every ``interval`` seconds
    (0.1 by default) is as fine as the sensor is."""

    def __init__(self, reader, rails, names, interval=0.1, clock=time.monotonic):
        self.reader, self.rails, self.names = reader, rails, list(names)
        self.interval, self.clock = float(interval), clock
        self.samples, self._thread, self._stop = [], None, threading.Event()

    def _take(self):
        self.samples.append((self.clock(), read_total_mw(self.reader, self.rails, self.names)))

    def _loop(self):
        while not self._stop.wait(self.interval):
            self._take()

    def start(self):
        self.samples, self._stop = [], threading.Event()
        self._take()
        self._thread = threading.Thread(target=self._loop, name="power-meter")
        self._thread.daemon = True
        self._thread.start()

    def stop(self):
        if self._thread is None:
            return None
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._take()
        return integrate(self.samples)


def meter_for(reader, interval=0.1):
    """A PowerMeter for the board under ``reader``, or None when it has no readable rails."""
    rails = find_rails(reader)
    names, dummy = total_rails(rails)
    if not names or read_total_mw(reader, rails, names) is None:
        return None
    return PowerMeter(reader, rails, names, interval=interval)
