# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The pull_mode role's input checks (filter pull_mode_refusals).

The rules live in module_utils/pull/inputs.py (pure, unit-tested).  Here, on the controller, the whole
ansible-pull command line is also parsed with ansible-pull's own parser (ansible.cli.pull.PullCLI, argparse
with allow_abbrev as ansible-pull really has it): what pull_mode_extra_args changes must be only the options
on the allow-list, whatever the spelling.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import contextlib
import io

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain
from ansible_collections.jetson.specdec.plugins.module_utils.record.wave import machine_id_duplicates
from ansible_collections.jetson.specdec.plugins.module_utils.pull.inputs import (
    ALLOWED_DESTS, RULE_ARGS, dir_refusals, environment_refusals, extra_args_refusals, link_refusals,
    unit_name_refusals, url_refusals,
)


def _pull_parser():
    """ansible-pull's argument parser, or None where ansible-core has no PullCLI."""
    try:
        from ansible.cli.pull import PullCLI
    except ImportError:  # pragma: no cover - ansible-core always ships it
        return None
    cli = PullCLI(["ansible-pull"])
    cli.init_parser()
    return cli.parser


def _parse(parser, argv):
    """(namespace dict, None) or (None, ansible-pull's error line)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return vars(parser.parse_args(list(argv))), None
    except (SystemExit, TypeError, ValueError):
        lines = err.getvalue().strip().splitlines()
        return None, lines[-1] if lines else "ansible-pull refuses the command line"


def argv_refusals(base_argv, argv, parser=None):
    """Refusals when ansible-pull's parser reads ``argv`` (the role's command line with the extra arguments)
    differently from ``base_argv`` (without them) in anything but the allowed options."""
    parser = parser or _pull_parser()
    if parser is None or not argv:
        return []
    base, error = _parse(parser, base_argv[1:])
    if error:
        return []  # the role's own command line: the other rules say what is wrong with it
    full, error = _parse(parser, argv[1:])
    if error:
        return ["%s: ansible-pull would refuse the command line with pull_mode_extra_args: %s." % (RULE_ARGS, error)]
    changed = sorted(k for k in set(base) | set(full) if base.get(k) != full.get(k) and k not in ALLOWED_DESTS)
    if not changed:
        return []
    return ["%s: ansible-pull's own parser reads pull_mode_extra_args as changing %s (only %s may change)."
            % (RULE_ARGS, ", ".join(changed), ", ".join(sorted(ALLOWED_DESTS)))]


def pull_mode_refusals(settings):
    """Every refusal of the pull-mode settings in ``settings`` (see pull_mode_refusals.yml)."""
    settings = plain(settings)
    if not isinstance(settings, dict):
        raise AnsibleFilterError("jetson.specdec.pull_mode_refusals: expects a dict of settings")
    refusals = []
    refusals += url_refusals(settings.get("repo_url"))
    refusals += extra_args_refusals(settings.get("extra_args"))
    if not refusals or not any(r.startswith(RULE_ARGS) for r in refusals):
        if settings.get("argv") and settings.get("base_argv"):
            refusals += argv_refusals(settings["base_argv"], settings["argv"])
    refusals += environment_refusals(settings.get("environment"))
    refusals += dir_refusals(settings.get("dirs") or {}, settings.get("checkout_base"))
    paths = dict(settings.get("dirs") or {})
    if settings.get("script_path"):
        paths["pull_mode_script_path"] = settings["script_path"]
    refusals += link_refusals(paths, settings.get("resolved"))
    refusals += unit_name_refusals(settings.get("unit_name"), settings.get("reserved_units") or ())
    return refusals


def pull_machine_id_duplicates(machine_ids):
    """Boards that share a machine id (cloned images): [{id, hosts}], ``id`` a short sha256 of the machine id.

    Pull mode's staged waves key on the machine id, so such boards always land in the same wave."""
    machine_ids = plain(machine_ids) or {}
    if not isinstance(machine_ids, dict):
        raise AnsibleFilterError("jetson.specdec.pull_machine_id_duplicates: expects a dict of host: machine id")
    return machine_id_duplicates(machine_ids)


class FilterModule(object):
    """jetson.specdec pull-mode input checks."""

    def filters(self):
        return {"pull_mode_refusals": pull_mode_refusals, "pull_machine_id_duplicates": pull_machine_id_duplicates}
