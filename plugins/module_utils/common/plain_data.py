# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Plain Python data from templated values (stdlib only)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def plain(value):
    """Turn Ansible's tagged/lazy containers into plain dicts, lists and str (ansible-core 2.19 data tagging)."""
    if isinstance(value, dict):
        return dict((plain(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value
