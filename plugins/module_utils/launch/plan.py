# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The launch of one host, planned once: the fact ``vllm_server_launch``.

vllm_server's preflight computes it and every other part of the collection reads
it (the rollout, revert, the unit template): the baseline and the speculative
candidate (argv, plan, refusals, warnings, fallback rungs), which of the two this
run applies, and how to talk to the service (URL, health-check settings, unit).
Pure: no I/O; the memory headroom (a module, it reads the host) is folded in
afterwards with ``with_headroom``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.jetson.specdec.plugins.module_utils.launch.argv import container_argv, native_argv
from ansible_collections.jetson.specdec.plugins.module_utils.launch.catalog import catalog_entry
from ansible_collections.jetson.specdec.plugins.module_utils.launch.ladder import fallback_rungs
from ansible_collections.jetson.specdec.plugins.module_utils.launch.prefetch import hub_models
from ansible_collections.jetson.specdec.plugins.module_utils.launch.rules import plan_launch
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import SpecConfigError

ARGV_BUILDERS = {"native": native_argv, "container": container_argv}
OPTIONAL_INTS = ("l4t_major", "l4t_minor", "k", "expected_concurrency", "max_spec_concurrency",
                 "draft_tensor_parallel_size")


class LaunchPlanError(ValueError):
    """Input the launch cannot be planned from (the message names the variable and the fix)."""


def optional_int(value):
    """'' and None mean "not set"; digit strings from templating become ints."""
    if value in ("", None):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def _bool(name, value):
    # -e vllm_server_speculation=false arrives as the string "false".
    try:
        return boolean(value or False, strict=True)
    except TypeError as exc:
        raise LaunchPlanError("%s must be a boolean: %s" % (name, exc))


def _int(name, value, minimum):
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or number < minimum:
        raise LaunchPlanError("%s must be an integer >= %d, got %r." % (name, minimum, value))
    return number


def normalize_plan_inputs(inputs):
    """The rules' inputs with templated strings turned back into ints and bools."""
    if not isinstance(inputs, dict):
        raise LaunchPlanError("the plan inputs must be a dict, got %r" % (type(inputs).__name__,))
    out = dict(inputs)
    for key in OPTIONAL_INTS:
        value = optional_int(out.get(key))
        if value is None:
            # not set: the rules' own default applies (for example max_spec_concurrency 7), not None
            out.pop(key, None)
        else:
            out[key] = value
    names = {"speculation": "vllm_server_speculation", "force": "vllm_server_force_speculation",
             "k_tuning": "vllm_server_k_tuning"}
    for key, name in names.items():
        out[key] = _bool(name, out.get(key))
    return out


def url_for(host, port):
    """http://host:port; an IPv6 literal gets its brackets."""
    host = str(host or "").strip()
    if not host:
        raise LaunchPlanError("vllm_server_health_host must name the address to probe (for example 127.0.0.1).")
    if ":" in host and not host.startswith("["):
        host = "[%s]" % host
    return "http://%s:%d" % (host, _int("vllm_server_port", port, 1))


def _arm(host, plan_inputs, argv_opts, runtime, speculation):
    """One launch (plan + argv) with speculation on or off; argv is [] when refused."""
    plan = plan_launch(dict(plan_inputs, speculation=speculation))
    argv = []
    if not plan["refusals"]:
        opts = dict(argv_opts, gpu_memory_utilization=plan["gpu_memory_utilization"],
                    speculative_config=plan["speculative_config"])
        try:
            argv = ARGV_BUILDERS[runtime](opts)
        except SpecConfigError as exc:
            plan["refusals"].append({"rule": "config.command_line", "message": str(exc)})
            plan["refusal_text"] = _refusal_text(plan["refusals"])
    return {"plan": plan, "argv": argv, "gpu_memory_utilization": plan["gpu_memory_utilization"],
            "refusals": plan["refusals"], "refusal_text": plan["refusal_text"],
            "refusal_message": _refusal_message(host, plan["refusal_text"]), "warnings": plan["warnings"]}


def prompt_token_ids_range(catalog, model):
    """[0, tokenizer vocabulary) of a catalogued target, or None: the ids synthetic prompts are drawn
    from, the whole base vocabulary as ``vllm bench serve --dataset-name random`` draws them."""
    try:
        entry = catalog_entry(catalog or {}, model) or {}
    except SpecConfigError:  # the rules refuse a bad catalog with their own message
        return None
    size = entry.get("tokenizer_vocab_size")
    if isinstance(size, bool) or not isinstance(size, int) or size < 2:
        return None
    return [0, size]


def launch_plan(inputs):
    """The ``vllm_server_launch`` fact from the role's variables.

    ``inputs``: ``host`` (inventory name, for the refusal message), ``plan`` (the rules' inputs, ``speculation`` = what this run applies),
    ``argv`` (the command-line options other than utilization and speculative config),
    ``runtime``, ``model``, ``catalog``, ``utilization_drop``, ``service_name``,
    ``unit_path``, ``health_host``, ``port``, ``health_timeout``, ``health_interval``,
    ``crash_loop_restarts``, ``service_user``; ``prepared`` (the switch entry point: false when
    the role's preflight has not run on the host in this play).
    """
    if not isinstance(inputs, dict):
        raise LaunchPlanError("the launch inputs must be a dict")
    if inputs.get("prepared") is False:
        raise LaunchPlanError("vllm_server tasks_from switch runs only after this role's preflight (or its main entry "
                              "point) ran on %s in the same play; include the role without tasks_from first."
                              % inputs.get("host"))
    runtime = inputs.get("runtime", "native")
    if runtime not in ARGV_BUILDERS:
        raise LaunchPlanError("vllm_server_runtime must be native or container, got %r." % (runtime,))
    plan_inputs = normalize_plan_inputs(inputs.get("plan") or {})
    argv_opts = dict(inputs.get("argv") or {})
    host = inputs.get("host")
    baseline = _arm(host, plan_inputs, argv_opts, runtime, False)
    candidate = _arm(host, plan_inputs, argv_opts, runtime, True)
    candidate["rungs"] = (fallback_rungs(candidate["plan"], inputs.get("catalog") or {}, inputs.get("model"),
                                         inputs.get("utilization_drop", 0.05),
                                         max_model_len=argv_opts.get("max_model_len"))
                          if candidate["plan"]["speculation"] and not candidate["refusals"] else [])
    candidate["headroom"] = None
    applied = candidate if plan_inputs["speculation"] else baseline
    # The planned rung's draft or head only: a fallback rung's model (an OOM's smaller draft) is
    # fetched by vLLM at that rung's start, not downloaded on every board in advance.
    prefetch = {"models": hub_models(candidate["rungs"][:1]), "hf_home": argv_opts.get("hf_cache_dir"),
                "runtime": runtime, "image": argv_opts.get("image") or None,
                "cli": "%s/hf" % (argv_opts.get("vllm_bin") or "/opt/vllm/bin/vllm").rsplit("/", 1)[0],
                "docker_bin": argv_opts.get("docker_bin") or "/usr/bin/docker",
                "container_user": argv_opts.get("container_user") or None,
                "env_file": argv_opts.get("env_file") or None, "environment": argv_opts.get("environment") or {},
                "user": inputs.get("service_user") or "vllm"}
    service = inputs.get("service_name") or ""
    url = url_for(inputs.get("health_host"), inputs.get("port"))
    return {
        "speculation": plan_inputs["speculation"],
        "applied": "candidate" if plan_inputs["speculation"] else "baseline",
        "argv": applied["argv"],
        "plan": applied["plan"],
        "refusals": applied["refusals"],
        "refusal_text": applied["refusal_text"],
        "refusal_message": applied["refusal_message"],
        "baseline": baseline,
        "candidate": candidate,
        "host": host,
        "model": inputs.get("model"),
        "expected_concurrency": plan_inputs.get("expected_concurrency") or 1,
        "max_model_len": argv_opts.get("max_model_len"),
        "prompt_token_ids_range": prompt_token_ids_range(inputs.get("catalog"), inputs.get("model")),
        "service_name": service,
        "prefetch": prefetch,
        "unit_path": inputs.get("unit_path") or "/etc/systemd/system/%s.service" % service,
        "url": url,
        "health": {"url": url, "service": service,
                   "timeout": _int("vllm_server_health_timeout", inputs.get("health_timeout"), 1),
                   "interval": _int("vllm_server_health_interval", inputs.get("health_interval"), 1),
                   "crash_loop_restarts": _int("vllm_server_crash_loop_restarts", inputs.get("crash_loop_restarts"), 0)},
    }


def headroom_refusal(headroom):
    """The memory.headroom refusal of a spec_headroom result that does not fit or could not check (None when it fits)."""
    if not headroom:
        return None
    if "fits" not in headroom:
        # the module could not measure (for example no weight size in the local cache): its message says why
        return {"rule": "memory.headroom", "message": str(headroom.get("msg") or "the memory headroom check failed")}
    if headroom["fits"]:
        return None
    recommended = headroom.get("recommended_gpu_memory_utilization") or "(none fits)"
    # The module's reasons are clauses without a full stop: one sentence each.
    reasons = " ".join("%s%s." % (r[:1].upper(), r[1:].rstrip(" .")) for r in headroom.get("reasons") or [] if str(r).strip())
    return {"rule": "memory.headroom",
            "message": "target, draft and KV cache do not fit. %s Fix: use the recommended gpu_memory_utilization %s, "
                       "lower vllm_server_max_model_len, pick a smaller draft, or keep speculation off."
                       % (reasons, recommended)}


def with_headroom(launch, headroom):
    """The fact with the candidate's memory check folded in (a refusal when it does not fit)."""
    out = dict(launch)
    candidate = dict(out["candidate"], headroom=headroom or None)
    refusal = headroom_refusal(headroom)
    if refusal:
        candidate["refusals"] = candidate["refusals"] + [refusal]
        candidate["refusal_text"] = _refusal_text(candidate["refusals"])
        candidate["refusal_message"] = _refusal_message(out.get("host"), candidate["refusal_text"])
        candidate["argv"] = []
        candidate["rungs"] = []
    candidate["warnings"] = candidate["warnings"] + list((headroom or {}).get("headroom_warnings") or [])
    out["candidate"] = candidate
    if out["applied"] == "candidate":
        out.update(refusals=candidate["refusals"], refusal_text=candidate["refusal_text"],
                   refusal_message=candidate["refusal_message"], argv=candidate["argv"])
    return out


def _refusal_text(refusals):
    return "\n".join("%s: %s" % (r["rule"], r["message"]) for r in refusals)


def _refusal_message(host, text):
    """What the preflight fails with (and what the rollout records as the refusal): empty when nothing is refused."""
    return "vllm_server preflight refused %s (nothing was changed):\n%s" % (host, text) if text else ""
