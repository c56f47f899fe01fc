# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Action of jetson.specdec.vllm_job_wait: poll the host, print progress lines, return the job's result.

The loop (plugin_utils/background.py) is on the controller, so that one task both waits and speaks:
an ``until`` loop would print "FAILED - RETRYING" on every poll and nothing about the benchmark.
"""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.jetson.specdec.plugins.plugin_utils.background import wait_for_job

ARGS = {
    "jid": {"type": "str", "required": True},
    "progress_path": {"type": "path", "required": True},
    "label": {"type": "str", "default": "job"},
    "interval": {"type": "int", "default": 30},
    "poll": {"type": "int", "default": 5},
    "timeout": {"type": "int", "required": True},
    "async_dir": {"type": "path"},
}


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGS)
        if args["timeout"] < 1 or args["poll"] < 1 or args["interval"] < 0:
            result.update(failed=True, msg="vllm_job_wait: timeout and poll must be >= 1 and interval >= 0 "
                                           "(timeout %s, poll %s, interval %s)"
                                           % (args["timeout"], args["poll"], args["interval"]))
            return result
        job = wait_for_job(self, args["jid"], args["progress_path"], args["label"], args["interval"], args["poll"],
                           args["timeout"], async_dir=args["async_dir"],
                           host=(task_vars or {}).get("inventory_hostname", "?"))
        result.update(job)
        return result
