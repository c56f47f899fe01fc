# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Refusals of the host itself, after the input checks (stdlib only, Python 3.8+): pure, no I/O.

What vllm_server's preflight read on the host (the service account and its marker, the board
family against the inventory groups, whether systemd runs, a unit of the service's name the
collection did not write) decides whether the role may manage
it. One list, so one task refuses a host for every reason at once, each starting with its rule.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.jetson.specdec.plugins.module_utils.common.booleans import strict_bool


def check_account(user, exists, uid, marker, use_existing):
    """An existing account the role did not create (or a uid-0 one) is never taken over."""
    if not exists:
        return []
    root = uid == 0
    if not root and (marker or use_existing):
        return []
    return ["input.existing_account: vllm_server_user %s is an existing account %s; the role would run vLLM as it "
            "and own its files. Fix: keep the default vllm (the role creates it), pick a new name, or, for a dedicated "
            "service account you manage yourself, set vllm_server_use_existing_user: true (the role then never "
            "changes the account)." % (user, "(uid 0, a root account)" if root else "that this role did not create")]


def check_groups(host, wrong_groups, family, model):
    """A host listed under another family's group would get that group's k, utilization and speculation."""
    if not wrong_groups:
        return []
    return ["inventory.wrong_group: %s is listed in the inventory group(s) %s, but the board reports %s (%s), so that "
            "group's settings (k, utilization, speculation) would apply to it. Fix: move it to the %s group (or list "
            "it only under jetsons; the run groups boards by their own family)."
            % (host, ", ".join(wrong_groups), family, model or "model unknown", family)]


def check_systemd(host, booted):
    """The role manages a systemd unit (sd_booted: /run/systemd/system exists)."""
    if booted:
        return []
    return ["host.no_systemd: vllm_server manages a systemd unit, and systemd is not running on %s "
            "(/run/systemd/system is missing). Fix: run the role on a host booted with systemd." % host]


def check_unit(host, unit):
    """A unit of the service's name that the collection did not write is never replaced (ssh.service, an
    operator's own vllm.service): vllm_host_info's ``unit`` (its files in systemd's search path, the marker)."""
    unit = unit or {}
    if not unit.get("exists") or unit.get("written_by_collection"):
        return []
    name = unit.get("name")
    return ["host.unit_not_ours: %s.service already exists on %s (%s) and was not written by jetson.specdec (no "
            "'# jetson.specdec.vllm_server unit' line in /etc/systemd/system/%s.service): the role would replace or "
            "override it. Fix: choose another vllm_server_service_name (the default vllm, or vllm-<model>); if it is "
            "a vLLM unit you wrote by hand, stop and remove it first (systemctl disable --now %s; rm the file)."
            % (name, host, ", ".join(unit.get("paths") or []), name, name)]


def host_refusals(facts):
    """Every refusal of the host, from what preflight read (a dict; see the filter's documentation)."""
    facts = dict(facts or {})
    host = facts.get("host")
    out = []
    if facts.get("runtime", "native") == "native":
        uid = facts.get("uid")
        out += check_account(facts.get("user"), bool(facts.get("exists")), None if uid is None else int(uid),
                             bool(facts.get("marker")),
                             strict_bool("vllm_server_use_existing_user", facts.get("use_existing_user")))
    out += check_groups(host, list(facts.get("wrong_groups") or []), facts.get("family"), facts.get("model"))
    out += check_systemd(host, bool(facts.get("systemd_booted")))
    out += check_unit(host, facts.get("unit"))
    return out
