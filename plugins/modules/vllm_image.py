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
  - With O(heartbeat) (the rollout passes its lock), the rollout lock is refreshed before the pull and every
    O(heartbeat.interval) seconds while it runs, so a pull longer than the lock's timeout does not let the lock
    go stale and another controller take the host over mid-pull. A lock that is no longer this run's stops the
    pull and fails the task; nothing else on the host was changed.
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
  heartbeat:
    description:
      - The rollout lock this run holds, refreshed while the pull runs (as M(jetson.specdec.rollout_state) with
        O(jetson.specdec.rollout_state#module:state=refresh) does between steps). Unset, no lock is touched.
    type: dict
    version_added: 0.3.0
    suboptions:
      path:
        description: The rollout state file; the lock is C(rollout.lock) next to it.
        type: path
        required: true
      lock_path:
        description: The lock file, when it is not C(rollout.lock) next to O(heartbeat.path).
        type: path
      token:
        description: The lock's token (C(lock.token) of the rollout_state task that took it).
        type: str
        required: true
      interval:
        description:
          - Seconds between two heartbeats during the pull. V(0) (the default) takes a quarter of the lock's own
            timeout, at most 60 s, so three heartbeats can be missed before anyone may call the lock stale.
        type: int
        default: 0
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
heartbeats:
  description: How many times the rollout lock was refreshed (before and during the pull), with O(heartbeat).
  returned: when a pull ran with O(heartbeat)
  type: int
  sample: 12
lock_lost:
  description: The pull was stopped because the rollout lock was no longer this run's.
  returned: failure, with O(heartbeat)
  type: bool
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.launch import image_pull
from ansible_collections.jetson.specdec.plugins.module_utils.record.heartbeat import Heartbeat, pull_with_heartbeat
from ansible_collections.jetson.specdec.plugins.module_utils.record.state import LockHeld, StateError


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
    if p["heartbeat"] and p["heartbeat"]["interval"] < 0:
        module.fail_json(msg="vllm_image: heartbeat.interval must be 0 (a quarter of the lock's timeout) or more "
                             "seconds, got %s" % p["heartbeat"]["interval"], image=image)
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
    extra = {}
    if p["heartbeat"]:
        heartbeat = Heartbeat(p["heartbeat"])
        try:
            heartbeat.beat()  # before anything: a run that lost its lock does not start a pull
        except (LockHeld, StateError) as exc:
            module.fail_json(msg="vllm_image: the pull of %s did not start: %s" % (image, exc), image=image,
                             lock_lost=isinstance(exc, LockHeld), heartbeats=0)
        started = time.time()
        rc, out, err, lost = pull_with_heartbeat(argv, heartbeat)
        extra = {"heartbeats": heartbeat.count}
        if lost:
            module.fail_json(msg="vllm_image: stopped `docker pull %s` after %d s: this run lost its rollout lock "
                                 "while pulling: %s Nothing else was changed on the host; the layers pulled so far "
                                 "stay in Docker's cache." % (image, time.time() - started, lost),
                             image=image, lock_lost=True, **extra)
    else:
        rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C"})
    if rc != 0:
        failure = image_pull.pull_failure("%s\n%s" % (out, err), timed_out=bool(timeout_bin) and rc == 124)
        module.fail_json(msg="vllm_image: `docker pull %s` failed (%s): %s. Nothing was changed; the current launch "
                             "keeps serving. Fix: %s." % (image, failure["cause"], failure["line"] or "no output",
                                                          failure["fix"]),
                         image=image, cause=failure["cause"], docker_line=failure["line"], rc=rc, **extra)
    dummy, new_id, dummy2 = _inspect(module, docker)
    module.exit_json(changed=new_id != image_id, image=image, present=new_id is not None, id=new_id, pulled=True,
                     **extra)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            image=dict(type="str", required=True),
            pull=dict(type="str", default="missing", choices=list(image_pull.PULL_POLICIES)),
            docker_bin=dict(type="path", default="/usr/bin/docker"),
            timeout=dict(type="int", default=3600),
            heartbeat=dict(type="dict", options=dict(
                path=dict(type="path", required=True),
                lock_path=dict(type="path"),
                token=dict(type="str", required=True, no_log=True),
                interval=dict(type="int", default=0),
            )),
        ),
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
