#!/usr/bin/env python3
"""Bring a simulated Jetson fleet up or down in the test bed.

    fleet.py up FLEET.json INVENTORY_DIR   start one systemd container per board and
                                           write an Ansible inventory (docker connection)
    fleet.py down FLEET.json               remove the fleet's containers

FLEET.json: {"prefix": "...", "image_env": "JETSON_SPECDEC_BOARD_IMAGE",
             "boards": [{"name", "fixture", "profile", "profile_overrides"?, "hostvars"?}],
             "hostvars": {... for every host}}
Containers have no network (network_mode none): Ansible reaches them with
`docker exec`, and every server in them listens on the container's own loopback.
"""
import json
import os
import subprocess
import sys

RUN_FLAGS = ["--cap-add", "SYS_ADMIN", "--cgroupns=host", "--security-opt", "seccomp=unconfined",
             "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run", "--tmpfs", "/run/lock",
             "--network", "none"]


def docker(*args, check=True):
    return subprocess.run(["docker"] + list(args), check=check, capture_output=True, text=True, timeout=120)


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
        docker("run", "-d", "--name", name, "--hostname", board["name"], *RUN_FLAGS, image, "/lib/systemd/systemd")
        hostvars = {"ansible_connection": "community.docker.docker", "ansible_host": name,
                    "ansible_python_interpreter": "/usr/bin/python3",
                    "jetson_sim_fixture": board["fixture"], "jetson_sim_profile": board["profile"],
                    "jetson_sim_profile_overrides": board.get("profile_overrides", {})}
        hostvars.update(fleet.get("hostvars", {}))
        hostvars.update(board.get("hostvars", {}))
        hosts[board["name"]] = hostvars
    os.makedirs(inventory_dir, exist_ok=True)
    inventory = {"all": {"children": {"jetsons": {"hosts": hosts}}}}
    path = os.path.join(inventory_dir, "hosts.yml")
    with open(path, "w") as handle:
        # JSON is YAML; Ansible reads it as the inventory's hosts.yml.
        json.dump(inventory, handle, indent=2, sort_keys=True)
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
