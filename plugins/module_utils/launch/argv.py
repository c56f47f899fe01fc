# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Build the ``vllm serve`` argument vector of a launch unit (pure, stdlib only).

The role renders ExecStart from this list, so every flag the unit carries is
decided and validated in one place: model names and paths against a strict
pattern, numbers against their ranges, extra arguments one by one.  Secrets are
never arguments: the API key and the HF token travel in an EnvironmentFile.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.jetson.specdec.plugins.module_utils.common.booleans import strict_bool
from ansible_collections.jetson.specdec.plugins.module_utils.launch.inputs import check_extra_args
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import (
    SpecConfigError,
    render_spec_config_json,
    validate_model_ref,
    validate_served_name,
)

# [registry[:port]/]path[:tag][@sha256:digest]; a registry port (registry.local:5000/img) is allowed.
_IMAGE_RE = re.compile(r"^([a-z0-9][a-z0-9.-]*(:[0-9]{1,5})?/)?[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_.-]{1,128})?"
                       r"(@sha256:[a-f0-9]{64})?$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _fail(msg):
    raise SpecConfigError(msg)


def _number(name, value, low, high, kind):
    if isinstance(value, bool) or not isinstance(value, kind):
        _fail("%s must be a %s between %s and %s, got %r" % (name, kind.__name__ if kind is int else "number", low, high, value))
    if not low <= value <= high:
        _fail("%s must be between %s and %s, got %s" % (name, low, high, value))
    return value


def _flag_on(opts, key, var):
    """A boolean input: "false" from -e is false, junk is an error (never a flag switched on by a string)."""
    try:
        return strict_bool(var, opts.get(key))
    except ValueError as exc:
        _fail(str(exc))


def validate_extra_args(extra_args, extra_flags_allowed=()):
    """Each extra argument is one token and an allow-listed vLLM flag (spellings normalised, see launch/inputs.py)."""
    refusals = check_extra_args(extra_args, extra_flags_allowed)
    if refusals:
        _fail(" ".join(refusals))
    return list(extra_args or [])


def serve_args(opts):
    """The arguments after ``vllm serve`` (model first), validated."""
    model = validate_model_ref(opts.get("model"), "vllm_server_model")
    args = [model]
    served = opts.get("served_model_name")
    if served:
        args += ["--served-model-name", validate_served_name(served)]
    host = opts.get("host", "127.0.0.1")
    if not isinstance(host, str) or not re.match(r"^[0-9A-Za-z.:-]{1,253}$", host) or host.startswith("-"):
        _fail("vllm_server_host %r is not an IP address or host name" % (host,))
    args += ["--host", host, "--port", str(_number("vllm_server_port", opts.get("port", 8000), 1, 65535, int))]
    util = opts.get("gpu_memory_utilization")
    if util is not None:
        if isinstance(util, int) and not isinstance(util, bool):
            util = float(util)
        args += ["--gpu-memory-utilization", "%.2f" % _number("gpu_memory_utilization", util, 0.05, 0.99, float)]
    if opts.get("max_model_len") not in (None, ""):
        args += ["--max-model-len", str(_number("vllm_server_max_model_len", opts["max_model_len"], 64, 1048576, int))]
    if opts.get("max_num_seqs") not in (None, ""):
        args += ["--max-num-seqs", str(_number("vllm_server_max_num_seqs", opts["max_num_seqs"], 1, 1024, int))]
    if opts.get("dtype"):
        if opts["dtype"] not in ("auto", "half", "float16", "bfloat16", "float", "float32"):
            _fail("vllm_server_dtype must be one of auto, half, float16, bfloat16, float, float32")
        args += ["--dtype", opts["dtype"]]
    if _flag_on(opts, "enforce_eager", "vllm_server_enforce_eager"):
        args.append("--enforce-eager")
    if _flag_on(opts, "trust_remote_code", "vllm_server_trust_remote_code"):
        args.append("--trust-remote-code")
    spec = opts.get("speculative_config")
    if spec:
        args += ["--speculative-config", render_spec_config_json(spec)]
    return args + validate_extra_args(opts.get("extra_args"), opts.get("extra_flags_allowed"))


def native_argv(opts):
    """``<vllm> serve MODEL ...`` for a native (path or venv) install."""
    binary = opts.get("vllm_bin")
    if not isinstance(binary, str) or not re.match(r"^/[A-Za-z0-9_./-]+$", binary) or "/../" in binary:
        _fail("vllm_server_native_bin must be an absolute path without spaces or '..', got %r" % (binary,))
    return [binary, "serve"] + serve_args(opts)


# Inside the container: the model cache mount and the secrets file, which sh reads so the
# API key and HF token are in vLLM's environment but not in `docker inspect` (Config.Env).
CONTAINER_HF_HOME = "/huggingface"
CONTAINER_SECRETS = "/run/secrets/vllm.env"
CONTAINER_ENTRYPOINT = 'set -a; [ ! -r %s ] || . %s; set +a; exec vllm serve "$@"' % (CONTAINER_SECRETS, CONTAINER_SECRETS)


def container_argv(opts):
    """``docker run --rm --name SVC --pull P --runtime nvidia --network host ... IMAGE`` then ``vllm serve ...``.

    Hardened: no capabilities, no-new-privileges, private IPC with a sized /dev/shm,
    an optional numeric user, vllm_server_environment as -e, secrets from a read-only
    file mount instead of --env-file.
    """
    image = opts.get("image")
    if not isinstance(image, str) or not _IMAGE_RE.match(image):
        _fail("vllm_server_container_image %r is not an image reference (registry[:port]/name:tag[@sha256:...])"
              % (image,))
    name = opts.get("service_name", "vllm")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        _fail("vllm_server_service_name %r: letters, digits, _ . - only" % (name,))
    argv = [opts.get("docker_bin", "/usr/bin/docker"), "run", "--rm", "--name", name,
            "--pull", opts.get("pull") or "missing"]
    if opts.get("container_runtime"):
        argv += ["--runtime", opts["container_runtime"]]
    argv += ["--network", "host", "--shm-size", opts.get("shm_size") or "2g",
             "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    if opts.get("oom_score_adj") not in (None, ""):
        adj = opts["oom_score_adj"]
        if isinstance(adj, str) and re.match(r"^-?[0-9]{1,4}$", adj):
            adj = int(adj)  # templated role variables arrive as strings
        argv += ["--oom-score-adj", str(_number("vllm_server_oom_score_adjust", adj, -1000, 1000, int))]
    if opts.get("container_user"):
        argv += ["--user", opts["container_user"]]
    for env_name, value in sorted((opts.get("environment") or {}).items()):
        argv += ["-e", "%s=%s" % (env_name, value)]
    if opts.get("hf_cache_dir"):
        argv += ["-v", "%s:%s" % (opts["hf_cache_dir"], CONTAINER_HF_HOME), "-e", "HF_HOME=%s" % CONTAINER_HF_HOME]
    if opts.get("env_file"):
        argv += ["-v", "%s:%s:ro" % (opts["env_file"], CONTAINER_SECRETS)]
    return argv + ["--entrypoint", "/bin/sh", image, "-c", CONTAINER_ENTRYPOINT, "vllm"] + serve_args(opts)
