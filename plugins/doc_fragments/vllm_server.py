# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""How a module reaches a vLLM OpenAI-compatible server (vllm_wait, vllm_bench)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  url:
    description: Base URL of the vLLM server, C(http://HOST:PORT).
    type: str
    default: http://127.0.0.1:8000
  api_key:
    description:
      - Bearer token sent as C(Authorization) header when the server was started with C(--api-key).
      - Never logged.
    type: str
"""
