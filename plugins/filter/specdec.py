# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filters for the vllm_server role: speculative config JSON, systemd quoting, catalog choice.

Each filter is documented in a sidecar file next to this one (``<filter name>.yml``),
the layout ansible-core uses for its own filters.  The logic lives in module_utils
so the same code is unit-tested and usable from modules.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.launch.catalog import (
    select_speculation,
)
from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import (
    SpecConfigError, render_spec_config_json, validate_model_ref, validate_served_name,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.systemd import (
    SystemdQuoteError, systemd_command_line, systemd_quote,
)


def _wrap(func, name):
    def filter_func(*args, **kwargs):
        try:
            return func(*[plain(a) for a in args], **dict((k, plain(v)) for k, v in kwargs.items()))
        except (SpecConfigError, SystemdQuoteError) as exc:
            raise AnsibleFilterError("jetson.specdec.%s: %s" % (name, exc))
    filter_func.__name__ = name
    filter_func.__doc__ = func.__doc__
    return filter_func


def _speculative_config_json(cfg, extra=None):
    return render_spec_config_json(cfg, extra)


def _spec_model_ref(ref, kind="model"):
    if kind == "served_name":
        return validate_served_name(ref)
    if kind != "model":
        raise SpecConfigError("kind must be 'model' or 'served_name', got %r" % (kind,))
    return validate_model_ref(ref)


def _spec_catalog_select(catalog, target, family_board=None, preferred_method="eagle3"):
    return select_speculation(catalog, target, preferred_method, family_board)


class FilterModule(object):
    """jetson.specdec filters."""

    def filters(self):
        return {
            "speculative_config_json": _wrap(_speculative_config_json, "speculative_config_json"),
            "systemd_quote": _wrap(systemd_quote, "systemd_quote"),
            "systemd_command_line": _wrap(systemd_command_line, "systemd_command_line"),
            "spec_model_ref": _wrap(_spec_model_ref, "spec_model_ref"),
            "spec_catalog_select": _wrap(_spec_catalog_select, "spec_catalog_select"),
        }
