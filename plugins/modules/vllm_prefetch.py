#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: vllm_prefetch
short_description: Fetch a speculative candidate's draft or EAGLE-3 head into the board's Hugging Face cache
version_added: 0.1.0
description:
  - vLLM downloads a speculative model it does not find in its cache when it starts, while the host serves
    nothing. This module fetches each model of O(models) first, with the Hugging Face CLI that comes with vLLM
    (C(hf download), or C(huggingface-cli download) of huggingface_hub before 0.34), while the current launch
    still serves, so the switch is only a restart.
  - It uses what the unit uses - the cache O(hf_home), the service's O(environment) (a mirror in C(HF_ENDPOINT),
    C(HF_HUB_OFFLINE), proxies) and the Hub token of the secrets file O(env_file) (never on the command line) -
    and runs the CLI as the service account O(user), so vLLM can use and update what it wrote.
  - A model already complete in the cache (its C(main) snapshot with C(config.json) and weights) is left alone
    without starting the CLI, so a converged host needs no network.
  - A failed download names its cause (C(not_found), C(gated), C(offline_not_cached), C(no_space), C(quota_exceeded),
    C(file_too_large), C(rate_limited), C(unreachable), C(timeout), C(no_cli), C(unknown)) with the CLI's own line and
    the fix. C(definite) causes (not found, gated, offline, disk full, quota, file too large, HTTP 429) mean vLLM could
    not start that model either; M(jetson.specdec.rollout) then records the rung as failed without restarting the host.
  - When the disk is the cause (C(no_space) for ENOSPC, C(quota_exceeded) for EDQUOT, C(file_too_large) for EFBIG),
    the message says where, how much the CLI needed and how much is free, and the model's partial downloads
    (C(blobs/*.incomplete)) are removed, so the disk the baseline serves from gets its space back. A sharded model
    counts as cached only with every shard its index names, so a download cut short is fetched again next time.
author: jetson.specdec contributors (@jetson-specdec)
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: Says which models it would fetch (changed) and fetches nothing.
options:
  models:
    description: Hugging Face repository ids (C(owner/name)). Local paths are not accepted; they are on the board already.
    type: list
    elements: str
    required: true
  hf_home:
    description: The service's Hugging Face home (C(vllm_server_hf_home)); the cache is C(<hf_home>/hub).
    type: path
    required: true
  runtime:
    description: C(native) runs O(cli) on the host; C(container) runs the CLI inside O(image) with the unit's mounts.
    type: str
    choices: [native, container]
    default: native
  cli:
    description:
      - The CLI for the native runtime, normally next to C(vllm) (C(/opt/vllm/bin/hf)). When it is missing, a
        C(huggingface-cli) in the same directory is used; with neither, the models are reported C(no_cli) and vLLM
        fetches them at its start.
    type: path
    default: /opt/vllm/bin/hf
  image:
    description: The vLLM image (container runtime).
    type: str
  docker_bin:
    description: The Docker CLI (container runtime).
    type: path
    default: /usr/bin/docker
  container_user:
    description: C(--user) for the container, as the unit's C(vllm_server_container_user).
    type: str
  env_file:
    description: The role's secrets file; only its C(HF_TOKEN) (or C(HUGGING_FACE_HUB_TOKEN)) line is handed to the CLI.
    type: path
  environment:
    description: The service's environment (C(vllm_server_environment)).
    type: dict
    default: {}
  user:
    description: The account the native CLI runs as (the service user). Ignored when the module does not run as root.
    type: str
    default: vllm
  timeout:
    description: Seconds one model's download may take before it is stopped (cause C(timeout)).
    type: int
    default: 1800
  fail_on_unavailable:
    description:
      - Fail when a model cannot be fetched for a C(definite) cause. M(jetson.specdec.rollout) sets it false and
        reads RV(unavailable) instead, to record the rung's failure itself.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Fetch the EAGLE-3 head while the baseline serves
  jetson.specdec.vllm_prefetch:
    models: [yuhuili/EAGLE3-LLaMA3.1-Instruct-8B]
    hf_home: /var/lib/vllm/huggingface
    env_file: /etc/vllm/vllm.env
    environment:
      HF_ENDPOINT: https://hf-mirror.example.internal
  register: prefetch

- name: Show what was fetched and how long it took
  ansible.builtin.debug:
    msg: "{{ prefetch.models | map(attribute='status') | list }} in {{ prefetch.seconds }} s"
"""

RETURN = r"""
models:
  description: One entry per model, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    model:
      description: The repository id.
      type: str
    status:
      description: C(cached) (complete before), C(fetched), C(would_fetch) (check mode), C(failed) or C(no_cli).
      type: str
    seconds:
      description: Wall seconds of the download (0 when it was cached).
      type: float
    path:
      description: The snapshot directory in the cache, when the model is there.
      type: str
    cause:
      description:
        - Why it failed - one of not_found, gated, offline_not_cached, no_space, quota_exceeded, file_too_large,
          rate_limited, unreachable, timeout, no_cli, unknown.
      type: str
    line:
      description: The CLI's own line that shows the cause.
      type: str
    fix:
      description: What to change.
      type: str
    definite:
      description: vLLM could not start this model either (not found, gated, offline and not cached, disk full, HTTP 429).
      type: bool
    detail:
      description: For a disk cause - where, how much was needed and free, what partial downloads were removed.
      type: str
    free_bytes:
      description: For a disk cause - the bytes the account can still write in the cache after the clean-up.
      type: int
    needed_bytes:
      description: For a disk cause - the size of the file the CLI could not fit, when it said it (else null).
      type: int
    removed_partial:
      description: For a disk cause - [files, bytes] of the model's partial downloads removed from the cache.
      type: list
      elements: int
  sample:
    - {model: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, status: fetched, seconds: 41.2,
       path: /var/lib/vllm/huggingface/hub/models--yuhuili--EAGLE3-LLaMA3.1-Instruct-8B/snapshots/0d6c9d0e5f1e4d8b8d2c1f0e9a8b7c6d5e4f3a2b}
unavailable:
  description: "The models that failed for a definite cause: {model: a sentence with the cause, the CLI's line and the fix}."
  returned: always
  type: dict
  sample: {acme/gated-llama-draft: "acme/gated-llama-draft was not fetched (gated): Error: Access denied. Model 'acme/gated-llama-draft'
      requires approval. Fix: accept the model's licence on its Hub page with the account whose token is vllm_server_hf_token,
      and set vllm_server_hf_token (group_vars, vaulted)."}
seconds:
  description: Wall seconds of the whole prefetch.
  returned: always
  type: float
"""

import os
import stat
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.jetson.specdec.plugins.module_utils.launch import prefetch
from ansible_collections.jetson.specdec.plugins.module_utils.launch.safetensors import (
    ModelFileError,
    hf_snapshot_dir,
    open_model_file,
    read_json_file,
    weight_bytes_in_dir,
)

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def complete_snapshot(hf_home, model):
    """The cached ``main`` snapshot when it has config.json and weights vLLM can load, else None.

    A sharded model is complete only with every shard its index names: a download cut short (disk full, a
    timeout) leaves the index and the shards that finished, and such a snapshot must be fetched again, not
    taken as cached."""
    path = hf_snapshot_dir(hf_home, model)
    if not path or not os.path.isfile(os.path.join(path, "config.json")):
        return None
    try:
        weight_bytes_in_dir(path)
        for shard in index_shards(path):
            handle, _size = open_model_file(os.path.join(path, shard))
            handle.close()
    except (ModelFileError, OSError, ValueError):
        return None
    return path


def index_shards(path):
    """The shard files model.safetensors.index.json names (its weight_map's values); none without an index."""
    index = os.path.join(path, "model.safetensors.index.json")
    if not os.path.isfile(index):
        return []
    weight_map = read_json_file(index, "safetensors index").get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ModelFileError("%s: no weight_map" % index)
    shards = sorted(set(str(name) for name in weight_map.values()))
    if any(name.startswith("/") or ".." in name.split("/") for name in shards):
        raise ModelFileError("%s: a shard outside the snapshot" % index)
    return shards


def remove_partial_downloads(hf_home, model):
    """(files, bytes) of the partial downloads (``blobs/*.incomplete``) of ``model`` removed from the cache.

    After a full disk they are what fills it: huggingface_hub >= 2 removes its own on an error, older CLIs
    (and a download killed by the timeout) keep them to resume, and the baseline serving on the same disk would
    go on without room for its logs. Never follows a link: the cache belongs to the service account, and this
    runs as root (issue 34)."""
    count = size = 0
    fds = []
    try:
        try:
            fds.append(os.open(hf_home, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW))
            for name in ("hub", "models--" + model.replace("/", "--"), "blobs"):
                fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1]))
        except OSError:
            return 0, 0
        for name in sorted(os.listdir(fds[-1])):
            if not name.endswith(".incomplete"):
                continue
            try:
                st = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    continue
                os.unlink(name, dir_fd=fds[-1])
            except OSError:
                continue
            count += 1
            size += st.st_size
    finally:
        for fd in fds:
            os.close(fd)
    return count, size


def free_bytes(hf_home, model):
    """(directory, bytes the service account can still write there): the cache's deepest existing directory."""
    repo = prefetch.cache_repo_dir(hf_home, model)
    for path in (repo + "/blobs", repo, hf_home.rstrip("/") + "/hub", hf_home):
        try:
            st = os.statvfs(path)
        except OSError:
            continue
        return path, st.f_bavail * st.f_frsize
    return hf_home, None


def native_cli(cli):
    """The hf CLI, else huggingface-cli beside it, else None."""
    for candidate in (cli, os.path.join(os.path.dirname(cli), "huggingface-cli")):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def account(module, name):
    """(uid, gid, home) of the service account; None when this module does not run as root."""
    if os.geteuid() != 0:
        return None
    import pwd  # POSIX only, as the boards are
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        module.fail_json(msg="vllm_prefetch: the service account %r does not exist on the host. Fix: run "
                             "jetson.specdec.vllm_server on it first (it creates vllm_server_user)." % name)
    return entry.pw_uid, entry.pw_gid, entry.pw_dir


def child_env(p, home, secrets):
    env = {"PATH": _PATH, "HOME": home or "/", "LANG": "C.UTF-8", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
           "NO_COLOR": "1"}
    env.update(dict((str(k), str(v)) for k, v in (p["environment"] or {}).items()))
    env.update(secrets)
    env["HF_HOME"] = p["hf_home"]
    return env


def run_cli(module, argv, env, ids, timeout):
    """(rc, stdout, stderr, timed_out): the CLI under coreutils' timeout, as the service account (setpriv).

    The token goes through the environment, never the command line (argv is readable in /proc)."""
    timeout_bin = module.get_bin_path("timeout")
    prefix = [timeout_bin, "--kill-after=10", str(timeout)] if timeout_bin else []
    if ids:
        setpriv = module.get_bin_path("setpriv")
        if not setpriv:
            module.fail_json(msg="vllm_prefetch: setpriv (util-linux) is needed to run the CLI as the service "
                                 "account and is not on the host. Fix: install util-linux, or set "
                                 "rollout_prefetch: false.")
        prefix += [setpriv, "--reuid=%d" % ids[0], "--regid=%d" % ids[1], "--clear-groups", "--"]
    rc, out, err = module.run_command(prefix + argv, environ_update=env, cwd="/")
    return rc, out, err, bool(timeout_bin) and rc in (124, 137)


def fetch(module, model, opts, env, ids):
    started = time.time()
    rc, out, err, timed_out = run_cli(module, prefetch.download_argv(opts, model), env, ids, module.params["timeout"])
    seconds = round(time.time() - started, 2)
    path = complete_snapshot(module.params["hf_home"], model) if opts["runtime"] == "native" else None
    if rc == 0:
        return {"model": model, "status": "fetched", "seconds": seconds,
                "path": path or prefetch.snapshot_path(out)}
    found = prefetch.failure("%s\n%s" % (err, out), timed_out=timed_out)
    entry = dict(found, model=model, status="failed", seconds=seconds, path=path)
    if found["cause"] in prefetch.DISK_CAUSES:
        # The container's CLI writes the same cache through its mount: the host's paths are the ones to name.
        removed = remove_partial_downloads(module.params["hf_home"], model)
        where, free = free_bytes(module.params["hf_home"], model)
        shortfall = prefetch.disk_shortfall("%s\n%s" % (err, out))
        entry.update(free_bytes=free, needed_bytes=shortfall["needed"] if shortfall else None,
                     removed_partial=list(removed),
                     detail=prefetch.disk_detail(found["cause"], where, free, shortfall, removed))
    return entry


def describe(entry):
    """One sentence for a model that was not fetched: the warning, the value in RV(unavailable) and the failure."""
    line = (entry.get("line") or "no output").rstrip(".")
    if entry.get("detail"):
        line = "%s (%s)" % (entry["detail"], line)
    return "%s was not fetched (%s): %s. Fix: %s." % (entry["model"], entry["cause"], line, entry["fix"])


def run(module):
    p = module.params
    bad = [m for m in p["models"] if not prefetch.is_hub_id(m)]
    if bad:
        module.fail_json(msg="vllm_prefetch: %s is not a Hugging Face repository id (owner/name). Nothing was fetched. "
                             "Fix: pass Hub ids only; a local directory is on the board already." % ", ".join(map(repr, bad)))
    if p["timeout"] < 1:
        module.fail_json(msg="vllm_prefetch: timeout must be at least 1 second, got %s" % p["timeout"])
    if p["runtime"] == "container" and not p["image"]:
        module.fail_json(msg="vllm_prefetch: runtime container needs image (vllm_server_container_image).")
    started = time.time()
    results = []
    for model in p["models"]:
        path = complete_snapshot(p["hf_home"], model)
        results.append({"model": model, "status": "cached" if path else "would_fetch", "seconds": 0.0, "path": path})
    if any(r["status"] == "would_fetch" for r in results) and not module.check_mode:
        opts = {"runtime": p["runtime"], "docker_bin": p["docker_bin"], "image": p["image"], "hf_home": p["hf_home"],
                "env_file": p["env_file"], "environment": p["environment"], "container_user": p["container_user"]}
        ids = home = None
        secrets = {}
        if p["runtime"] == "native":
            opts["cli"] = native_cli(p["cli"])
            found = account(module, p["user"])
            if found:
                ids, home = found[:2], found[2]
            if p["env_file"] and os.path.isfile(p["env_file"]):
                with open(p["env_file"]) as handle:
                    secrets = prefetch.secrets_from_env_file(handle.read())
        for index, entry in enumerate(results):
            if entry["status"] != "would_fetch":
                continue
            if p["runtime"] == "native" and not opts["cli"]:
                results[index] = {"model": entry["model"], "status": "no_cli", "seconds": 0.0, "path": None,
                                  "cause": "no_cli", "definite": False, "line": None,
                                  "fix": "install huggingface_hub beside vLLM (%s) or set the CLI's path; vLLM "
                                         "fetches the model at its start meanwhile" % os.path.dirname(p["cli"])}
                continue
            results[index] = fetch(module, entry["model"], opts, child_env(p, home, secrets), ids)
    not_fetched = [r for r in results if r["status"] in ("failed", "no_cli")]
    for entry in not_fetched:
        module.warn(describe(entry))
    unavailable = dict((r["model"], describe(r)) for r in not_fetched if r.get("definite"))
    out = {"models": results, "unavailable": unavailable, "seconds": round(time.time() - started, 2),
           "changed": any(r["status"] in ("fetched", "would_fetch") for r in results)}
    if unavailable and p["fail_on_unavailable"]:
        module.fail_json(msg="vllm_prefetch: " + " ".join(unavailable.values()), **out)
    module.exit_json(**out)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            models=dict(type="list", elements="str", required=True),
            hf_home=dict(type="path", required=True),
            runtime=dict(type="str", default="native", choices=["native", "container"]),
            cli=dict(type="path", default="/opt/vllm/bin/hf"),
            image=dict(type="str"),
            docker_bin=dict(type="path", default="/usr/bin/docker"),
            container_user=dict(type="str"),
            env_file=dict(type="path"),
            environment=dict(type="dict", default={}),
            user=dict(type="str", default="vllm"),
            timeout=dict(type="int", default=1800),
            fail_on_unavailable=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
