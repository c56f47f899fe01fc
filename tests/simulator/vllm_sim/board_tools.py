"""SIMULATED `nvpmodel` and `jetson_clocks` of a Jetson test bed, working on the board's sysroot.

They change the files the collection reads (``var/lib/nvpmodel/status``, the GPU devfreq
node's ``min_freq``/``max_freq``/``cur_freq``) the way the real tools do, with their
output and error texts:

* ``nvpmodel -q`` prints "NV Power Mode: <name>" and the id on the next line;
  ``nvpmodel -p --verbose`` lists "NVPM VERB: POWER_MODEL: ID=<id> NAME=<name>";
  ``nvpmodel -m <id>`` writes ``pmode:<id>`` to the status file and applies the mode's
  ``GPU MAX_FREQ`` (-1: the module's maximum); like the real tool it resets the GPU floor,
  so a ``jetson_clocks`` pin does not survive a mode change.  An id the conf does not list
  fails with "NVPM ERROR: request for bad power mode <id>".
* ``jetson_clocks`` pins the GPU floor to its ceiling; ``--store [file]`` writes
  "<path>:<value>" lines (refusing an existing file unless told "y", as the real script
  asks), ``--restore [file]`` writes them back ("Error: <file> file not found !" when absent),
  ``--show`` prints "GPU MinFreq=… MaxFreq=… CurrentFreq=…".

Paths in a stored file are the board's own (``/sys/class/devfreq/...``); the stand-in maps
them into the sysroot (``JETSON_SIM_SYSROOT``, default /opt/jetson-sim/root).
"""
import json
import os
import re
import sys

from vllm_sim.board_sysfs import GPU_FLOOR_HZ

SYSROOT = "/opt/jetson-sim/root"
PROFILE = "/etc/jetson-sim/profile.json"
_MODE_RE = re.compile(r"<\s*POWER_MODEL\s+ID=(\d+)\s+NAME=([A-Za-z0-9_]+)\s*>")
_DEFAULT_RE = re.compile(r"<\s*PM_CONFIG\s+DEFAULT=(\d+)\s*>")
_GPU_MAX_RE = re.compile(r"^\s*GPU\s+MAX_FREQ\s+(-?\d+)", re.M)


def _env():
    root = os.environ.get("JETSON_SIM_SYSROOT", SYSROOT)
    try:
        with open(os.environ.get("JETSON_SIM_PROFILE", PROFILE)) as handle:
            profile = json.load(handle)
    except (OSError, ValueError):
        profile = {}
    devfreq = profile.get("gpu_devfreq") or {}
    node = str(devfreq.get("node") or "sys/class/devfreq/gpu-gpc-0").strip("/")
    return root, node, int(devfreq.get("max_hz") or 1575000000), int(devfreq.get("min_hz") or GPU_FLOOR_HZ)


def _read(path, default=""):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return default


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def parse_conf(text):
    """[(id, name, gpu_max_hz or -1)] in file order, and the default id."""
    modes = []
    for block in re.split(r"(?=<\s*POWER_MODEL)", text):
        head = _MODE_RE.search(block)
        if head:
            cap = _GPU_MAX_RE.search(block)
            modes.append((int(head.group(1)), head.group(2), int(cap.group(1)) if cap else -1))
    default = _DEFAULT_RE.search(text)
    return modes, int(default.group(1)) if default else (modes[0][0] if modes else 0)


def nvpmodel_main(argv=None, out=sys.stdout):
    args = list(sys.argv[1:] if argv is None else argv)
    root, node, hw_max, floor = _env()
    conf_text = _read(os.path.join(root, "etc/nvpmodel.conf"), None)
    if conf_text is None:
        out.write("NVPM ERROR: Error opening /etc/nvpmodel.conf : 2\n")
        return 1
    modes, default = parse_conf(conf_text)
    names = dict((i, n) for i, n, _cap in modes)
    status_path = os.path.join(root, "var/lib/nvpmodel/status")
    match = re.search(r"pmode:0*(\d+)", _read(status_path))
    current = int(match.group(1)) if match else default
    if args[:1] == ["-q"]:
        out.write("NV Power Mode: %s\n%d\n" % (names.get(current, "UNKNOWN"), current))
        return 0
    if args[:1] == ["-p"]:
        out.write("NVPM VERB: Config file: /etc/nvpmodel.conf\nNVPM VERB: parsing done for /etc/nvpmodel.conf\n")
        for mode_id, name, _cap in modes:
            out.write("NVPM VERB: POWER_MODEL: ID=%d NAME=%s\n" % (mode_id, name))
        out.write("NVPM VERB: PM_CONFIG: DEFAULT=%s(%d)\n" % (names.get(default, "UNKNOWN"), default))
        return 0
    if args[:1] == ["-m"] and len(args) == 2 and args[1].isdigit():
        wanted = int(args[1])
        cap = dict((i, c) for i, _n, c in modes).get(wanted)
        if wanted not in names:
            out.write("NVPM ERROR: request for bad power mode %d\n" % wanted)
            return 1
        _write(status_path, "pmode:%04d\n" % wanted)
        top = hw_max if cap is None or cap < 0 else min(cap, hw_max)
        base = os.path.join(root, node)
        _write(os.path.join(base, "max_freq"), "%d\n" % top)
        _write(os.path.join(base, "min_freq"), "%d\n" % min(floor, top))
        _write(os.path.join(base, "cur_freq"), "%d\n" % top)
        return 0
    out.write("NVPM ERROR: bad input!\n")
    return 1


def jetson_clocks_main(argv=None, out=sys.stdout, answer=None):
    args = list(sys.argv[1:] if argv is None else argv)
    root, node, _hw_max, _floor = _env()
    base = os.path.join(root, node)
    conf = os.path.join(os.environ.get("HOME", "/root"), "l4t_dfs.conf")
    action = "pin"
    while args:
        opt = args.pop(0)
        if opt in ("--store", "--restore"):
            action = opt[2:]
            if args and not args[0].startswith("-"):
                conf = args.pop(0)
        elif opt == "--show":
            action = "show"
        elif opt in ("-h", "--help"):
            out.write("Maximize jetson performance by setting static max frequency to CPU, GPU and EMC clocks.\n")
            return 0
        else:
            out.write("Unknown option: %s\n" % opt)
            return 1
    gpu = dict((name, os.path.join(base, name)) for name in ("min_freq", "max_freq", "cur_freq"))
    if action == "show":
        out.write("GPU MinFreq=%s MaxFreq=%s CurrentFreq=%s\n" % tuple(
            _read(gpu[k]).strip() for k in ("min_freq", "max_freq", "cur_freq")))
        return 0
    if action == "store":
        if os.path.exists(conf):
            out.write("File %s already exists. Can I overwrite it? Y/N:\n" % conf)
            reply = answer if answer is not None else sys.stdin.readline()
            if reply.strip() not in ("y", "Y"):
                out.write("Error: file %s already exists!\n" % conf)
                return 1
            os.unlink(conf)
        with open(conf, "a") as handle:
            handle.write("/%s/min_freq:%s\n" % (node, _read(gpu["min_freq"]).strip()))
        return 0
    if action == "restore":
        if not os.path.exists(conf):
            out.write("Error: %s file not found !\n" % conf)
            return 1
        for line in _read(conf).splitlines():
            path, _sep, value = line.partition(":")
            if path and _sep:
                _write(os.path.join(root, path.lstrip("/")), value + "\n")
        return 0
    top = _read(gpu["max_freq"]).strip()
    _write(gpu["min_freq"], top + "\n")
    _write(gpu["cur_freq"], top + "\n")
    return 0
