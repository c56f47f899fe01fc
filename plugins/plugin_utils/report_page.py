# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""report.html from the collection's template (controller only: Jinja2 comes with ansible-core).

The page's data is html_view() in module_utils/record/report.py (plain text, what each row says and
which outcome colours it); its layout is templates/fleet_report.html.j2 next to this file, rendered
with autoescaping on, so a host name, model or reason with ``<script>``, quotes or ``&`` is shown as text.
The result is one self-contained file: inline CSS, the chart as a data URI, no external resource.
Nothing here runs on a board.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ansible_collections.jetson.specdec.plugins.module_utils.record.report import html_view

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
TEMPLATE = "fleet_report.html.j2"

_ENV = []


def environment():
    """The page's Jinja2 environment (autoescaping on, an undefined name is an error), built once."""
    if not _ENV:
        _ENV.append(Environment(loader=FileSystemLoader(TEMPLATE_DIR), autoescape=True, undefined=StrictUndefined,
                                trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True))
    return _ENV[0]


def render_html(report, chart_png_b64=None, chart_note=None, title="jetson.specdec fleet report"):
    """report.html of ``report`` (record/report.build_report): self-contained, the chart an embedded base64 PNG
    when given, else ``chart_note`` says why there is none."""
    return environment().get_template(TEMPLATE).render(**html_view(report, chart_png_b64, chart_note, title))
