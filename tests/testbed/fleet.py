#!/usr/bin/env python3
"""Bring a simulated Jetson fleet up or down in the test bed.

    fleet.py up FLEET.json INVENTORY_DIR   start one systemd container per board and
                                           write an Ansible inventory (docker connection)
    fleet.py down FLEET.json               remove the fleet's containers

FLEET.json: {"prefix": "...", "image_env": "JETSON_SPECDEC_BOARD_IMAGE",
             "boards": [{"name", "fixture", "profile", "profile_overrides"?, "hostvars"?,
                         "native_vllm_only_at"?: "/opt/venv/bin/vllm" (the stand-in only there, not on PATH)}],
             "hostvars": {... for every host}}
Containers have no network (network_mode none): Ansible reaches them with
`docker exec`, and every server in them listens on the container's own loopback.
"""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

THROTTLE_FILE = "/var/lib/vllm/jetson-sim-throttle"
POWER_FILE = "/var/lib/vllm/jetson-sim-power"
RUN_FLAGS = ["--cap-add", "SYS_ADMIN", "--cgroupns=host", "--security-opt", "seccomp=unconfined",
             "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run", "--tmpfs", "/run/lock",
             "--network", "none"]


def docker(*args, check=True):
    return subprocess.run(["docker"] + list(args), check=check, capture_output=True, text=True, timeout=120)


def prepare(name, board):
    """What tests/testbed/prepare_board.yml does, with `docker cp` (seconds for a whole fleet)."""
    fixture = os.path.join(REPO, "tests", "fixtures", "boards", board["fixture"], "root")
    with open(os.path.join(REPO, "tests", "simulator", "profiles", board["profile"] + ".json")) as handle:
        profile = json.load(handle)
    profile.update(board.get("profile_overrides", {}))
    # The board's GPU clock and temperature files in the sysroot the collection reads
    # (rollout_facts_root): the sensor daemon writes them, the stand-in tells it of a throttle
    # through a file in the vLLM unit's writable state directory (vllm_sim/board_sysfs.py).
    profile.setdefault("throttle_file", THROTTLE_FILE)
    # The same way for power: the stand-in announces its draw, the daemon scales the rails.
    profile.setdefault("power_file", POWER_FILE)
    docker("exec", name, "mkdir", "-p", "/opt/jetson-sim/root/usr/local/bin", "/etc/jetson-sim")
    docker("cp", fixture + "/.", "%s:/opt/jetson-sim/root/" % name)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "profile.json"), "w") as handle:
            json.dump(profile, handle, indent=2)
        # The board's own tools under the sysroot, where jetson_facts (probe_under_root) and
        # jetson_clock_hold (run_under_root) look: the stand-ins act on the sysroot's files.
        tools = {"usr/local/bin/vllm": 'exec /usr/local/bin/vllm "$@"',
                 "opt/vllm/bin/vllm": 'exec /opt/vllm/bin/vllm "$@"',
                 "usr/sbin/nvpmodel": 'exec /opt/vllm-sim/bin/nvpmodel "$@"',
                 "usr/bin/jetson_clocks": 'exec /opt/vllm-sim/bin/jetson_clocks "$@"'}
        only_at = board.get("native_vllm_only_at")
        if only_at:
            # vLLM installed at one path and nowhere else (no `vllm` on PATH, like a venv install):
            # jetson_facts must ask the configured CLI (issue 33). fleet.py points the host's
            # vllm_server_native_bin at it.
            docker("exec", name, "sh", "-c", "rm -f /usr/local/bin/vllm /opt/vllm/bin/vllm && mkdir -p %s && "
                   "ln -s /opt/vllm-sim/bin/vllm %s" % (os.path.dirname(only_at), only_at))
            for rel in ("usr/local/bin/vllm", "opt/vllm/bin/vllm"):
                tools.pop(rel)
            tools[only_at.lstrip("/")] = 'exec %s "$@"' % only_at
        for rel, line in tools.items():
            with open(os.path.join(tmp, rel.replace("/", "_")), "w") as handle:
                handle.write("#!/bin/sh\n%s\n" % line)
            os.chmod(os.path.join(tmp, rel.replace("/", "_")), 0o755)
        docker("exec", name, "mkdir", "-p", *sorted(set("/opt/jetson-sim/root/" + os.path.dirname(rel) for rel in tools)))
        docker("cp", os.path.join(tmp, "profile.json"), "%s:/etc/jetson-sim/profile.json" % name)
        for rel in tools:
            docker("cp", os.path.join(tmp, rel.replace("/", "_")), "%s:/opt/jetson-sim/root/%s" % (name, rel))
    docker("exec", name, "systemctl", "is-system-running", "--wait", check=False)
    # Detached from `docker exec`, not a systemd unit: systemd-run needs the container's bus, which
    # a loaded CI machine had not brought up yet when is-system-running returned (fleets failed to start).
    docker("exec", "-d", name, "/opt/vllm-sim/bin/jetson-sim-sensors", "/etc/jetson-sim/profile.json",
           "/opt/jetson-sim/root")


def container_names(fleet):
    return ["%s%s" % (fleet.get("prefix", ""), board["name"]) for board in fleet["boards"]]


def down(fleet):
    names = container_names(fleet)
    if names:
        docker("rm", "-f", *names, check=False)


def up(fleet, inventory_dir):
    image = os.environ.get(fleet.get("image_env", "JETSON_SPECDEC_BOARD_IMAGE"))
    if not image:
        sys.exit("fleet.py: set %s to the board image tag (tests/testbed/testbed.sh board-image)"
                 % fleet.get("image_env", "JETSON_SPECDEC_BOARD_IMAGE"))
    down(fleet)
    hosts = {}
    for board, name in zip(fleet["boards"], container_names(fleet)):
        # a board's "docker_flags" (for example a capability one test needs) follow the common ones
        docker("run", "-d", "--name", name, "--hostname", board["name"], *RUN_FLAGS, *board.get("docker_flags", []),
               image, "/lib/systemd/systemd")
        prepare(name, board)
        hostvars = {"ansible_connection": "community.docker.docker", "ansible_host": name,
                    "ansible_python_interpreter": "/usr/bin/python3",
                    "jetson_sim_fixture": board["fixture"], "jetson_sim_profile": board["profile"],
                    "jetson_sim_profile_overrides": board.get("profile_overrides", {})}
        hostvars.update(fleet.get("hostvars", {}))
        if board.get("native_vllm_only_at"):
            hostvars["vllm_server_native_bin"] = board["native_vllm_only_at"]
        hostvars.update(board.get("hostvars", {}))
        hosts[board["name"]] = hostvars
    os.makedirs(inventory_dir, exist_ok=True)
    inventory = {"all": {"children": {"jetsons": {"hosts": hosts}}}}
    path = os.path.join(inventory_dir, "hosts.yml")
    with open(path, "w") as handle:
        # JSON is YAML; Ansible reads it as the inventory's hosts.yml.
        json.dump(inventory, handle, indent=2)
    print(path)


def main(argv):
    if len(argv) < 3 or argv[1] not in ("up", "down") or (argv[1] == "up" and len(argv) != 4):
        sys.exit(__doc__)
    with open(argv[2]) as handle:
        fleet = json.load(handle)
    if argv[1] == "up":
        up(fleet, argv[3])
    else:
        down(fleet)


if __name__ == "__main__":
    main(sys.argv)
