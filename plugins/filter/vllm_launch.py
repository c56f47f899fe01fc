# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filters that turn the role's variables into a validated ``vllm serve`` command line."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.launch.host_checks import host_refusals
from ansible_collections.jetson.specdec.plugins.module_utils.launch.inputs import input_refusals
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import SpecConfigError
from ansible_collections.jetson.specdec.plugins.module_utils.launch.ladder import fallback_rungs, next_rung
from ansible_collections.jetson.specdec.plugins.module_utils.launch.plan import (
    LaunchPlanError,
    normalize_plan_inputs,
    optional_int,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.rules import plan_launch
from ansible_collections.jetson.specdec.plugins.module_utils.launch.argv import (
    container_argv,
    native_argv,
)
from ansible_collections.jetson.specdec.plugins.module_utils.vllm.failure import classify_failure


def vllm_launch_argv(opts, runtime="native"):
    """Validated argv of the launch unit for ``runtime`` (native or container)."""
    builders = {"native": native_argv, "container": container_argv}
    if runtime not in builders:
        raise AnsibleFilterError("jetson.specdec.vllm_launch_argv: runtime must be native or container, got %r" % (runtime,))
    try:
        return builders[runtime](plain(opts))
    except SpecConfigError as exc:
        raise AnsibleFilterError("jetson.specdec.vllm_launch_argv: %s" % exc)


def vllm_launch_plan(inputs):
    """The launch plan (speculative config, utilization, refusals) for a host."""
    inputs = plain(inputs)
    if not isinstance(inputs, dict):
        raise AnsibleFilterError("jetson.specdec.vllm_launch_plan takes a dict of inputs")
    # The same normalization as vllm_server_launch: digit strings, "false" from -e, unset keys.
    try:
        return plan_launch(normalize_plan_inputs(inputs))
    except LaunchPlanError as exc:
        raise AnsibleFilterError("jetson.specdec.vllm_launch_plan: %s" % exc)


def spec_fallback_rungs(plan, catalog, target, drop=0.05, max_model_len=None):
    """Rungs of the startup fallback ladder for a planned speculative launch."""
    return fallback_rungs(plain(plan), plain(catalog), target, drop, max_model_len=optional_int(max_model_len))


def spec_next_rung(rungs, failed_rung, cause, message=None, headroom=None):
    """The rung to try after ``failed_rung`` failed with ``cause`` (from the cause and the sizes), and why."""
    try:
        return next_rung(plain(rungs), optional_int(failed_rung), cause, plain(message), plain(headroom))
    except ValueError as exc:
        raise AnsibleFilterError("jetson.specdec.spec_next_rung: %s" % exc)


def vllm_failure_cause(log_text):
    """out_of_memory, rejected_speculative_config, model_not_found, bad_arguments or unknown."""
    if isinstance(log_text, (list, tuple)):
        log_text = "\n".join(str(line) for line in log_text)
    return classify_failure(str(log_text or ""))


def vllm_server_input_refusals(opts):
    """Refusals (``input.<rule>: message``) for the vllm_server inputs; empty when all are safe."""
    opts = plain(opts)
    if not isinstance(opts, dict):
        raise AnsibleFilterError("jetson.specdec.vllm_server_input_refusals takes a dict of inputs")
    # allow_open_bind and the booleans are converted strictly there ("false" from -e is false, "maybe" is
    # refused as input.boolean).
    return input_refusals(opts)


def vllm_server_host_refusals(facts):
    """Refusals of the host itself (an account the role did not create, another family's group, no systemd)."""
    facts = plain(facts)
    if not isinstance(facts, dict):
        raise AnsibleFilterError("jetson.specdec.vllm_server_host_refusals takes a dict")
    try:
        return host_refusals(facts)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("jetson.specdec.vllm_server_host_refusals: %s" % exc)


class FilterModule(object):
    """Launch-unit filters of jetson.specdec."""

    def filters(self):
        return {
            "vllm_launch_argv": vllm_launch_argv,
            "vllm_launch_plan": vllm_launch_plan,
            "spec_fallback_rungs": spec_fallback_rungs,
            "spec_next_rung": spec_next_rung,
            "vllm_failure_cause": vllm_failure_cause,
            "vllm_server_input_refusals": vllm_server_input_refusals,
            "vllm_server_host_refusals": vllm_server_host_refusals,
        }
