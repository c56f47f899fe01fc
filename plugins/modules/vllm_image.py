#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_image
short_description: Put the vLLM container image on a Jetson before its unit changes
version_added: 0.1.0
description:
  - Makes sure O(image) is on the host as O(pull) asks, with C(docker pull) while the current launch still serves.
    The unit's switch is then only a restart (a multi-gigabyte pull inside C(docker run) would be a serving gap of
    minutes), and a pull that cannot succeed fails this host before anything on it changes.
  - A failed pull names its cause (C(not_found_or_denied), C(unreachable), C(rate_limited), C(no_space), C(timeout),
    C(unknown)), quotes Docker's own line and says what fixes it.
  - M(jetson.specdec.vllm_server) runs it for C(vllm_server_runtime=container), after its preflight and before its
    unit.
author: jetson.specdec contributors (@jetson-specdec)
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: Says whether it would pull (changed) and never pulls.
options:
  image:
    description: The image reference, as C(vllm_server_container_image) (a tag or a digest; a name starting with C(-) is refused).
    type: str
    required: true
  pull:
    description:
      - V(missing) pulls when the image is not on the host, V(always) pulls every time (a newer image under the same
        tag is changed), V(never) only checks that it is there.
      - The same policy as the unit's C(docker run --pull).
    type: str
    choices: [missing, always, never]
    default: missing
  docker_bin:
    description: The Docker CLI.
    type: path
    default: /usr/bin/docker
  timeout:
    description: Seconds the pull may take before it is stopped and the host failed (cause C(timeout)).
    type: int
    default: 3600
"""

EXAMPLES = r"""
- name: Pull the vLLM image while the current launch serves
  jetson.specdec.vllm_image:
    image: vllm/vllm-openai:v0.20.1
    pull: missing
  register: vllm_image

- name: Only check that a pre-loaded image is there (no registry on the line)
  jetson.specdec.vllm_image:
    image: ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra-aarch64-cu126-22.04
    pull: never
"""

RETURN = r"""
image:
  description: The image reference.
  returned: always
  type: str
  sample: vllm/vllm-openai:v0.20.1
present:
  description: The image is on the host now (in check mode - before a pull that would run).
  returned: success
  type: bool
id:
  description: The image ID on the host (C(docker image inspect)), null when it is not there.
  returned: success
  type: str
  sample: sha256:fad73aa3aaf1ee6a8f8e65dae0174e66e005f224497a66a19c21b30f16f2ca5c
pulled:
  description: C(docker pull) ran (and succeeded).
  returned: success
  type: bool
cause:
  description: Why the pull failed - not_found_or_denied, unreachable, rate_limited, no_space, timeout or unknown.
  returned: failure of a pull
  type: str
  sample: unreachable
docker_line:
  description: Docker's own line that shows the cause.
  returned: failure of a pull
  type: str
  sample: 'Error response from daemon: manifest unknown'
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.launch import image_pull


def _inspect(module, docker):
    """(present, image id, error text): error text when Docker itself did not answer."""
    rc, out, err = module.run_command([docker, "image", "inspect", "--format", "{{.Id}}", "--", module.params["image"]],
                                      environ_update={"LC_ALL": "C"})
    if rc == 0:
        return True, out.strip() or None, None
    text = (err or out or "").strip()
    if image_pull.inspect_absent(text):
        return False, None, None
    return False, None, text


def run(module):
    p = module.params
    image = p["image"]
    if not image or image.startswith("-") or any(c.isspace() for c in image):
        module.fail_json(msg="vllm_image: image %r is not an image reference (empty, starts with '-' or has "
                             "white space). Fix: set vllm_server_container_image to repository:tag or "
                             "repository@sha256:digest." % image, image=image)
    if p["timeout"] < 1:
        module.fail_json(msg="vllm_image: timeout must be at least 1 second, got %s" % p["timeout"], image=image)
    docker = p["docker_bin"]
    present, image_id, error = _inspect(module, docker)
    if error is not None:
        module.fail_json(msg="vllm_image: Docker did not answer `docker image inspect %s`: %s. Nothing was changed. "
                             "Fix: start Docker on the host (`sudo systemctl enable --now docker`)." % (image, error[-300:]),
                         image=image)
    action = image_pull.plan_pull(p["pull"], present)
    if action == "refuse":
        module.fail_json(msg="vllm_image: %s is not on the host and vllm_server_container_pull is never, so the unit "
                             "could not start it. Nothing was changed. Fix: load the image on the host (`docker load`) "
                             "or set vllm_server_container_pull: missing." % image, image=image, present=False)
    if action == "keep":
        module.exit_json(changed=False, image=image, present=True, id=image_id, pulled=False)
    if module.check_mode:
        module.exit_json(changed=True, image=image, present=present, id=image_id, pulled=False,
                         msg="would pull %s" % image)
    timeout_bin = module.get_bin_path("timeout")
    argv = ([timeout_bin, str(p["timeout"])] if timeout_bin else []) + [docker, "pull", "--", image]
    rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C"})
    if rc != 0:
        failure = image_pull.pull_failure("%s\n%s" % (out, err), timed_out=bool(timeout_bin) and rc == 124)
        module.fail_json(msg="vllm_image: `docker pull %s` failed (%s): %s. Nothing was changed; the current launch "
                             "keeps serving. Fix: %s." % (image, failure["cause"], failure["line"] or "no output",
                                                          failure["fix"]),
                         image=image, cause=failure["cause"], docker_line=failure["line"], rc=rc)
    dummy, new_id, dummy2 = _inspect(module, docker)
    module.exit_json(changed=new_id != image_id, image=image, present=new_id is not None, id=new_id, pulled=True)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            pull=dict(type="str", default="missing", choices=list(image_pull.PULL_POLICIES)),
            docker_bin=dict(type="path", default="/usr/bin/docker"),
            timeout=dict(type="int", default=3600),
        ),
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
