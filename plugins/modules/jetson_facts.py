#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
---
module: jetson_facts
short_description: Identify an NVIDIA Jetson board, its L4T/JetPack release and its vLLM runtime
description:
  - Reads the device tree, C(/etc/nv_tegra_release), C(/etc/nv_boot_control.conf), C(/proc/meminfo),
    C(/etc/os-release) and the CUDA version file, optionally runs a few read-only probe commands,
    and returns C(ansible_facts.jetson).
  - The family decision comes from module part numbers, the compatible list and the model string;
    memory size is used for the variant only as the last resort, and conflicting evidence yields
    C(unknown)/null plus a warning instead of a guess.
  - Runs with the Python standard library only and never changes the host.
version_added: "0.1.0"
author:
  - jetson.specdec contributors (@jetson-specdec)
options:
  root:
    description:
      - Every file is read under this prefix.
      - Keep C(/) on a real board; point it at a sysroot (a fixture tree, a simulated board) to
        describe that tree instead. Symlinks leading outside I(root) are not followed.
    type: path
    default: /
  probe_commands:
    description:
      - Run C(nvpmodel -q), C(nvidia-smi --query-gpu=name --format=csv,noheader) (Thor only, where
        it is real), C(dpkg-query) for C(nvidia-l4t-core) (only when C(/etc/nv_tegra_release) is
        unusable), C(docker info), C(docker image ls) and C(vllm --version) where present.
      - Each command runs with C(LC_ALL=C) under C(timeout) I(probe_timeout) seconds. A missing or
        failing command is a warning (docker and vllm may simply be absent), never an error.
      - With I(root) other than C(/) no command runs unless I(probe_under_root=true), because host
        commands would describe the machine running the module rather than the tree under I(root).
    type: bool
    default: true
  probe_under_root:
    description:
      - Only used when I(root) is not C(/) and I(probe_commands=true).
      - Run the probe executables found under I(root) (C(usr/sbin), C(usr/bin), C(sbin), C(bin),
        C(usr/local/bin)), for example stand-ins installed in a simulated board's sysroot.
        Commands missing from the root are skipped; the host's own are never used.
    type: bool
    default: false
  probe_timeout:
    description: Seconds each probe command may run before it is stopped and reported as a warning.
    type: int
    default: 5
  vllm_bin:
    description:
      - The vLLM CLI the service runs (for example C(/opt/vllm/bin/vllm), the role's C(vllm_server_native_bin)).
      - When set, its C(--version) is reported as C(runtime.vllm_version) instead of the C(vllm) found on C(PATH),
        also when it does not answer or is not executable (then null, since a C(vllm) on C(PATH) is another install).
      - Ignored when probes are off; under a I(root) other than C(/) with I(probe_under_root) the path is taken
        inside I(root).
    type: path
  vllm_image:
    description:
      - The container image the service runs. When set and Docker answers, C(runtime.image) says whether the image
        is on the host, its labels, and the vLLM version installed in it (read from the package metadata in a
        C(docker run --rm --network none) of the image; vLLM itself is not imported, no GPU is used).
      - The image is never pulled.
    type: str
  vllm_probe_timeout:
    description:
      - Seconds the vLLM version probes of I(vllm_bin) and I(vllm_image) may take (C(vllm --version) on C(PATH) keeps I(probe_timeout)). Importing
        vLLM loads torch, which takes longer than the other probes on a Jetson.
    type: int
    default: 30
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode returns the same facts.
notes:
  - Detection order for the Thor T5000/T4000 split is C(nv_boot_control.conf) TNSPEC, device-tree part
    number or model string, C(nvidia-smi) name, then C(MemTotal).
  - C(jetpack) comes from the exact L4T table, else from the L4T major.minor when every known release
    of that series maps to one JetPack major.minor (C(39.2.1) gives C(7.2)); otherwise it is null.
"""

EXAMPLES = r"""
- name: Gather Jetson facts
  jetson.specdec.jetson_facts:

- name: Describe a simulated board's sysroot without running host commands
  jetson.specdec.jetson_facts:
    root: /opt/jetson-sim/root

- name: Use the stand-in probe commands installed inside the sysroot
  jetson.specdec.jetson_facts:
    root: /opt/jetson-sim/root
    probe_under_root: true

- name: Read the version of the vLLM the service runs, natively and in its image
  jetson.specdec.jetson_facts:
    vllm_bin: /opt/vllm/bin/vllm
    vllm_image: vllm/vllm-openai:latest
    vllm_probe_timeout: 60

- name: Group hosts by board family
  ansible.builtin.group_by:
    key: "{{ ansible_facts.jetson.family }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to C(ansible_facts).
  returned: always
  type: dict
  contains:
    jetson:
      description: What the module found about this board.
      returned: always
      type: dict
      contains:
        is_jetson:
          description: True when a Tegra device tree, a Jetson model string or an L4T release was found.
          type: bool
          sample: true
        family:
          description: Board group used for group_vars and C(group_by).
          type: str
          choices: [thor, agx_orin, orin_nx, orin_nano, agx_xavier, xavier_nx, unknown]
          sample: agx_orin
        variant:
          description: Module variant, or null when the evidence is missing or conflicting.
          type: str
          sample: agx_orin_64gb
        variant_source:
          description: Which evidence named the variant.
          type: str
          choices: [boot_control, device_tree, nvidia_smi, memory]
          sample: device_tree
        super:
          description: True when the compatible list, model string, board config or power mode says Super.
          type: bool
          sample: false
        model:
          description: Device-tree model string with NULs stripped; null when absent or binary junk.
          type: str
          sample: NVIDIA Jetson AGX Orin Developer Kit
        compatible:
          description: Device-tree compatible entries in order.
          type: list
          elements: str
          sample: [nvidia,p3737-0000+p3701-0005, nvidia,p3701-0005, nvidia,tegra234, nvidia,tegra23x]
        module_part:
          description: Module part number from TNSPEC, the compatible list or nvidia,boardids.
          type: str
          sample: p3701-0005
        soc:
          description: Tegra SoC.
          type: str
          sample: tegra234
        cuda_arch:
          description: CUDA compute capability of the integrated GPU.
          type: str
          sample: "8.7"
        memory_bandwidth_gbps:
          description: Theoretical memory bandwidth from the module table (Super figure when super).
          type: float
          sample: 204.8
        memory_total_bytes:
          description: MemTotal from /proc/meminfo in bytes.
          type: int
          sample: 65894313984
        memory_available_bytes:
          description: MemAvailable from /proc/meminfo in bytes.
          type: int
          sample: 58123456512
        machine_id:
          description: The 32 hex digits of /etc/machine-id (null when absent or uninitialized); the staged rollout's wave key.
          type: str
          sample: 5f3c9e0a8b7d4c21a0e9f6b3d2c1a7e4
        l4t:
          description: Jetson Linux release, or null.
          type: dict
          contains:
            release:
              description: Dotted release.
              type: str
              sample: 36.4.4
            major:
              description: Major release number.
              type: int
              sample: 36
            minor:
              description: Minor release number.
              type: int
              sample: 4
            patch:
              description: Patch release number.
              type: int
              sample: 4
            source:
              description: Where the release was read.
              type: str
              choices: [nv_tegra_release, dpkg]
              sample: nv_tegra_release
        jetpack:
          description: Plain dotted JetPack version, or null when it cannot be known.
          type: str
          sample: 6.2.1
        jetpack_label:
          description: The exact table label including NVIDIA's suffix, null for major.minor answers.
          type: str
          sample: 7.2 GA
        jetpack_source:
          description: C(exact) table hit or C(major_minor) series answer; null with jetpack.
          type: str
          sample: exact
        cuda_version:
          description: cuda_nvcc.version from usr/local/cuda/version.json, else version.txt.
          type: str
          sample: 12.6.68
        power_mode:
          description: Active nvpmodel mode (from C(nvpmodel -q), else nvpmodel's status and conf files).
          type: dict
          contains:
            name:
              description: Mode name.
              type: str
              sample: MAXN
            id:
              description: Mode id.
              type: int
              sample: 0
        maxn:
          description: True when the power mode is MAXN or MAXN_*.
          type: bool
          sample: true
        os:
          description: Operating system from etc/os-release.
          type: dict
          contains:
            distribution:
              description: NAME field.
              type: str
              sample: Ubuntu
            version:
              description: VERSION_ID field.
              type: str
              sample: "22.04"
        kernel:
          description: Kernel release from proc/sys/kernel/osrelease.
          type: str
          sample: 5.15.148-tegra
        runtime:
          description: Container and vLLM runtime found on the host.
          type: dict
          contains:
            docker:
              description: Docker answers C(docker info) (with probes) or is installed (without).
              type: bool
            docker_daemon:
              description:
                - C(running) when C(docker info) answered, C(not running) when the Docker CLI is installed and
                  C(docker info) failed or timed out (the daemon is stopped or hung), C(absent) without a Docker CLI.
                - Null without probes (I(probe_commands=false), or a I(root) other than C(/) without I(probe_under_root)).
                - vllm_server refuses the container runtime on a host whose daemon is not running, before any change.
              type: str
              choices: [running, not running, absent]
            nvidia_runtime:
              description: Docker lists an nvidia runtime (or daemon.json / nvidia-container-runtime has it).
              type: bool
            vllm_version:
              description: Output of a native C(vllm --version), or null.
              type: str
            vllm_images:
              description: Local Docker images whose name contains vllm.
              type: list
              elements: str
            vllm_bin:
              description: The I(vllm_bin) that was asked for its version, or null.
              type: str
            image:
              description: What the host knows about I(vllm_image); null when I(vllm_image) is not set.
              type: dict
              contains:
                name:
                  description: The image reference.
                  type: str
                present:
                  description: The image is on the host (C(docker image inspect) found it); null when Docker did not answer.
                  type: bool
                labels:
                  description: The image's labels.
                  type: dict
                vllm_version:
                  description: The vLLM version installed in the image, or null.
                  type: str
        power:
          description:
            - The board's power rails, found by driver name (hwmon C(ina3221) and C(ina238), the older IIO C(ina3221x))
              and rail label, as jetson-stats reads them; null on a host that is not a Jetson.
            - C(rails) lists each rail (C(name), C(sensor), C(device)); C(total_rails) the rails whose sum is the board's
              total (C(VIN), C(POM_5V_IN) or C(VDD_IN) when present; AGX Orin's C(VDD_GPU_SOC + VDD_CPU_CV + VIN_SYS_5V0);
              else every rail); C(total_source) says which. Module rails exclude the carrier board.
          type: dict
          version_added: 0.2.0
          sample: {rails: [{name: VDD_IN, sensor: ina3221, device: /sys/class/hwmon/hwmon1}], total_rails: [VDD_IN],
                   total_source: total input rail VDD_IN}
        boot_control:
          description: Raw TNSPEC and COMPATIBLE_SPEC lines of nv_boot_control.conf (null when absent).
          type: dict
          contains:
            tnspec:
              description: TNSPEC value.
              type: str
              sample: 3701-500-0004-L.0-1-0-jetson-agx-orin-devkit-
            compatible_spec:
              description: COMPATIBLE_SPEC value.
              type: str
              sample: 3701--0004--1--jetson-agx-orin-devkit-
        probes_run:
          description: Probe commands that were actually executed.
          type: list
          elements: str
          sample: [nvpmodel, docker]
        warnings:
          description: Plain sentences about missing, broken or conflicting evidence and about settings
            that make benchmarks unreliable, each with its remedy when there is one.
          type: list
          elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.jetson.detect import gather
from ansible_collections.jetson.specdec.plugins.module_utils.jetson import probes
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.commands import make_runner


def probe_runtime_versions(module, root, facts, run_with_timeout):
    """Fill runtime.vllm_version from the configured CLI and runtime.image from the configured image."""
    runtime = facts.setdefault("runtime", {})
    params = module.params
    vllm_bin = params.get("vllm_bin")
    if vllm_bin and os.path.realpath(root) != "/":
        vllm_bin = os.path.join(root, vllm_bin.lstrip("/"))
    image = params.get("vllm_image")
    if image:
        runtime["image"] = {"name": image, "present": None, "labels": {}, "vllm_version": None}
    docker = module.get_bin_path("docker") if image else None
    for what, argv in probes.runtime_version_probes(vllm_bin, image if docker else None):
        if what != "native":
            argv = [docker] + argv[1:]
        elif not os.access(argv[0], os.X_OK):
            # The unit runs this CLI and no other: a `vllm` found on PATH says nothing about it.
            runtime["vllm_bin"] = params["vllm_bin"]
            runtime["vllm_version"] = None
            facts["warnings"].append("vllm_bin %s is not an executable file, so the vLLM version it serves is "
                                     "unknown." % params["vllm_bin"])
            continue
        rc, out, err = run_with_timeout(argv)
        if what == "native":
            runtime["vllm_bin"] = params["vllm_bin"]
            runtime["vllm_version"] = probes.parse_vllm_version(out) if rc == 0 else None
            if runtime["vllm_version"] is None:
                facts["warnings"].append("`%s --version` answered rc=%s within %d s, so the vLLM version it serves "
                                         "is unknown: %s" % (params["vllm_bin"], rc, params["vllm_probe_timeout"],
                                                             (err or out or "").strip()[-300:]))
        elif what == "image_labels":
            labels = probes.parse_image_labels(out) if rc == 0 else None
            runtime["image"]["present"] = labels is not None
            runtime["image"]["labels"] = labels or {}
            if labels is None:
                break  # not on the host: never pulled here
        else:
            runtime["image"]["vllm_version"] = probes.parse_vllm_version(out) if rc == 0 else None
            if runtime["image"]["vllm_version"] is None:
                facts["warnings"].append("The vLLM version inside %s could not be read (rc=%s within %d s): %s"
                                         % (image, rc, params["vllm_probe_timeout"], (err or out or "").strip()[-300:]))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", default="/"),
            probe_commands=dict(type="bool", default=True),
            probe_under_root=dict(type="bool", default=False),
            probe_timeout=dict(type="int", default=5),
            vllm_bin=dict(type="path"),
            vllm_image=dict(type="str"),
            vllm_probe_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    root = module.params["root"]
    if not os.path.isdir(root):
        module.fail_json(msg="root %s is not a directory" % root)
    if module.params["probe_timeout"] < 1:
        module.fail_json(msg="probe_timeout must be at least 1 second")
    runner = make_runner(module, root, module.params["probe_commands"],
                         module.params["probe_under_root"], module.params["probe_timeout"])
    if module.params["vllm_probe_timeout"] < 1:
        module.fail_json(msg="vllm_probe_timeout must be at least 1 second")
    facts = gather(root, runner)
    if runner is not None and (module.params["vllm_bin"] or module.params["vllm_image"]):
        timeout_bin = module.get_bin_path("timeout")

        def run_with_timeout(argv):
            command = ([timeout_bin, str(module.params["vllm_probe_timeout"])] if timeout_bin else []) + argv
            return module.run_command(command, check_rc=False, environ_update={"LANG": "C", "LC_ALL": "C"})
        probe_runtime_versions(module, root, facts, run_with_timeout)
    module.exit_json(changed=False, ansible_facts={"jetson": facts})


if __name__ == "__main__":
    main()
