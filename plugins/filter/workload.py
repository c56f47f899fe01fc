# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Filter ``jetson.specdec.rollout_workload``; documentation lives in rollout_workload.yml (sidecar)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

from ansible.errors import AnsibleFilterError

from ansible_collections.jetson.specdec.plugins.module_utils.bench.datasets import (
    DatasetError, describe, parse_dataset,
)
from ansible_collections.jetson.specdec.plugins.module_utils.common.plain_data import plain


def rollout_workload(contents, path, fmt="custom", category=None, max_model_len=None):
    """Check the operator's prompt file on the controller (before any host changes) and describe it."""
    try:
        dataset = parse_dataset(plain(contents), str(path), plain(fmt), plain(category) or None,
                                int(max_model_len) if max_model_len else None)
    except (DatasetError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("jetson.specdec.rollout_workload: rollout_bench_dataset %s: %s. Fix the file or "
                                 "rollout_bench_dataset_format / rollout_bench_dataset_category; no host was changed."
                                 % (path, exc))
    out = describe(dataset)
    # The host copy keeps the file's name (the report shows it; custom files must end in .jsonl)
    # in a directory named by its hash, so two files of one name never overwrite each other.
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(str(path))).lstrip(".") or "prompts"
    out["host_dir"] = "workloads/%s" % dataset["sha256"][:16]
    out["host_file"] = "%s/%s" % (out["host_dir"], name)
    return out


class FilterModule(object):
    """Workload filter of jetson.specdec."""

    def filters(self):
        return {"rollout_workload": rollout_workload}
