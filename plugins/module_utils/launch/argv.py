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

from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import (
    SpecConfigError,
    render_spec_config_json,
    validate_model_ref,
    validate_served_name,
)

# One flag or value: printable, no shell/systemd metacharacters, no whitespace.
_EXTRA_ARG_RE = re.compile(r"^[A-Za-z0-9_@+=:,./-]{1,256}$")
_IMAGE_RE = re.compile(r"^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_.-]{1,128})?(@sha256:[a-f0-9]{64})?$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_FLAGS_WE_OWN = ("--speculative-config", "--speculative_config", "-sc", "--api-key", "--host", "--port",
                 "--gpu-memory-utilization", "--max-model-len", "--max-num-seqs", "--served-model-name",
                 "--trust-remote-code")


def _fail(msg):
    raise SpecConfigError(msg)


def _number(name, value, low, high, kind):
    if isinstance(value, bool) or not isinstance(value, kind):
        _fail("%s must be a %s between %s and %s, got %r" % (name, kind.__name__ if kind is int else "number", low, high, value))
    if not low <= value <= high:
        _fail("%s must be between %s and %s, got %s" % (name, low, high, value))
    return value


def validate_extra_args(extra_args):
    """Each extra argument is one token; flags the role manages itself are refused."""
    if extra_args is None:
        return []
    if not isinstance(extra_args, (list, tuple)):
        _fail("vllm_server_extra_args must be a list of single arguments, not %s" % type(extra_args).__name__)
    checked = []
    for arg in extra_args:
        if not isinstance(arg, str) or not _EXTRA_ARG_RE.match(arg):
            _fail("vllm_server_extra_args item %r is refused: one argument per item, letters, digits and "
                  "_@+=:,./- only (no spaces, quotes, $ or ;)" % (arg,))
        if arg.split("=", 1)[0] in _FLAGS_WE_OWN:
            _fail("vllm_server_extra_args must not set %s: the role manages it through its own variable "
                  "(see the role's argument_specs)" % arg.split("=", 1)[0])
        checked.append(arg)
    return checked


def serve_args(opts):
    """The arguments after ``vllm serve`` (model first), validated."""
    model = validate_model_ref(opts.get("model"), "vllm_server_model")
    args = [model]
    served = opts.get("served_model_name")
    if served:
        args += ["--served-model-name", validate_served_name(served)]
    host = opts.get("host", "127.0.0.1")
    if not isinstance(host, str) or not re.match(r"^[0-9A-Za-z.:-]{1,253}$", host):
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
    if opts.get("enforce_eager"):
        args.append("--enforce-eager")
    if opts.get("trust_remote_code"):
        args.append("--trust-remote-code")
    spec = opts.get("speculative_config")
    if spec:
        args += ["--speculative-config", render_spec_config_json(spec)]
    return args + validate_extra_args(opts.get("extra_args"))


def native_argv(opts):
    """``<vllm> serve MODEL ...`` for a native (path or venv) install."""
    binary = opts.get("vllm_bin")
    if not isinstance(binary, str) or not re.match(r"^/[A-Za-z0-9_./-]+$", binary) or "/../" in binary:
        _fail("vllm_server_native_bin must be an absolute path without spaces or '..', got %r" % (binary,))
    return [binary, "serve"] + serve_args(opts)


def container_argv(opts):
    """``docker run --rm --name SVC --runtime nvidia --network host --ipc host ... IMAGE vllm serve ...``."""
    image = opts.get("image")
    if not isinstance(image, str) or not _IMAGE_RE.match(image):
        _fail("vllm_server_container_image %r is not an image reference (registry/name:tag[@sha256:...])" % (image,))
    name = opts.get("service_name", "vllm")
    if not _NAME_RE.match(name):
        _fail("vllm_server_service_name %r: letters, digits, _ . - only" % (name,))
    argv = [opts.get("docker_bin", "/usr/bin/docker"), "run", "--rm", "--name", name]
    if opts.get("container_runtime"):
        argv += ["--runtime", opts["container_runtime"]]
    argv += ["--network", "host", "--ipc", "host"]
    if opts.get("hf_cache_dir"):
        argv += ["-v", "%s:/root/.cache/huggingface" % opts["hf_cache_dir"]]
    if opts.get("env_file"):
        argv += ["--env-file", opts["env_file"]]
    return argv + [image, "vllm", "serve"] + serve_args(opts)
