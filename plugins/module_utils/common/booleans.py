# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Strict booleans for role inputs (pure).

``-e vllm_server_trust_remote_code=false`` arrives as the string ``"false"``, which Python and Jinja read as
true; role argument validation (``type: bool``) checks the value but does not replace the variable. Every
place that acts on a boolean input converts it here: ansible's own words (true/false, yes/no, on/off, 1/0,
y/n, t/f, any case) and nothing else ("maybe" is refused, not read as false).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean


def strict_bool(name, value, default=False):
    """``value`` as a bool; None is ``default``; anything but a boolean word raises ValueError naming ``name``."""
    if value is None:
        return default
    try:
        if isinstance(value, float) and value not in (0.0, 1.0):
            raise TypeError(value)
        return boolean(value, strict=True)
    except TypeError:
        raise ValueError("%s must be a boolean (true/false, yes/no, on/off, 1/0), got %r. Fix: set it to true or "
                         "false." % (name, value))
