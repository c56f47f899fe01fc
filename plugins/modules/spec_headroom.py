#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: spec_headroom
short_description: Check that a vLLM target plus its speculative draft fit a Jetson's memory
version_added: 0.1.0
description:
  - Adds up the target weights, the draft model or EAGLE-3 head weights, the KV cache for
    O(max_model_len) x O(max_num_seqs) tokens and an activation/CUDA-graph allowance, and checks
    that the sum fits in vLLM's share O(gpu_memory_utilization) x O(memory_total_bytes).
  - Also checks vLLM's startup rule (free memory must be at least utilization x total) and that
    O(reserve_bytes) stay outside vLLM.
  - Weight sizes come from the local model files when present (safetensors headers,
    C(model.safetensors.index.json), C(config.json) in the Hugging Face cache or a local model
    directory); nothing is downloaded. Otherwise the sizes in O(catalog) are used.
  - Read-only unless O(drop_caches=true).
author:
  - jetson.specdec contributors (@jetson-specdec)
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: With O(drop_caches=true) the page caches are not dropped in check mode; the rest is read-only.
options:
  target_model:
    description: Target model, a Hugging Face repo id V(owner/name) or an absolute local path.
    type: str
    required: true
  speculative_config:
    description:
      - The structured speculative config, a mapping (keys C(method), C(model), C(num_speculative_tokens), ...).
      - A string is refused; Ansible would otherwise parse JSON text into a dict and hide a free-form value.
      - Omit it to check the non-speculative baseline.
    type: raw
  catalog:
    description: The C(vllm_server_model_catalog) mapping, used when local files are absent.
    type: dict
    default: {}
  hf_home:
    description: Hugging Face home directory; the cache is C(<hf_home>/hub).
    type: path
    default: ~/.cache/huggingface
  memory_total_bytes:
    description: Total memory the GPU sees (unified memory on Jetson), in bytes.
    type: int
    required: true
  memory_available_bytes:
    description: Currently available memory (C(MemAvailable)), in bytes.
    type: int
    required: true
  reclaimable_bytes:
    description: Memory held by the running vLLM service that the restart will free, in bytes.
    type: int
    default: 0
  reserve_bytes:
    description: Memory to keep outside vLLM for the OS and other services, in bytes.
    type: int
    default: 2147483648
  gpu_memory_utilization:
    description: The utilization vLLM will be started with; must be within 0.30 to 0.95.
    type: float
    required: true
  max_gpu_memory_utilization:
    description: Ceiling for RV(recommended_gpu_memory_utilization); within 0.30 to 0.95.
    type: float
    default: 0.9
  max_model_len:
    description: vLLM C(--max-model-len).
    type: int
    required: true
  max_num_seqs:
    description: Number of full-length sequences the KV cache must hold at once.
    type: int
    default: 1
  kv_cache_dtype:
    description: vLLM C(--kv-cache-dtype); fp8 variants halve the KV cache.
    type: str
    default: auto
    choices: [auto, fp8, fp8_e4m3, fp8_e5m2]
  overhead_bytes:
    description: Override the activation/CUDA-graph allowance (default 1 GiB, plus 0.5 GiB with an
      EAGLE head or 0.75 GiB with a draft model).
    type: int
  l4t_major:
    description: L4T major version; below 39 a warning explains the stuck-memory remedy.
    type: int
  family:
    description:
      - Board family as C(ansible_facts.jetson.family) reports it (V(thor), V(agx_orin), V(orin_nx), V(orin_nano), ...).
      - Used for a warning when speculation is checked on a family other than Thor and AGX Orin.
    type: str
  drop_caches:
    description:
      - Run C(sync) and write C(3) to C(/proc/sys/vm/drop_caches) before re-reading C(MemAvailable).
      - Needs root. Reports C(changed=true); in check mode nothing is run.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Read the board's memory and L4T release
  jetson.specdec.jetson_facts:

# Sizes come from the model's safetensors in the Hugging Face cache when it is there, else from
# the catalog (the role passes vllm_server_model_catalog; this entry shows the keys it reads).
- name: Check that Llama-3.1-8B FP4 plus its EAGLE-3 head fits
  jetson.specdec.spec_headroom:
    target_model: nvidia/Llama-3.1-8B-Instruct-FP4
    speculative_config:
      method: eagle3
      model: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
      num_speculative_tokens: 5
    catalog:
      nvidia/Llama-3.1-8B-Instruct-FP4:
        weight_bytes: 6000000000
        kv_bytes_per_token: 131072
        eagle3_heads:
          - {model: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, weight_bytes: 850000000, kv_bytes_per_token: 4096}
    hf_home: /var/lib/vllm/hf
    memory_total_bytes: "{{ ansible_facts.jetson.memory_total_bytes }}"
    memory_available_bytes: "{{ ansible_facts.jetson.memory_available_bytes }}"
    l4t_major: "{{ ansible_facts.jetson.l4t.major }}"
    family: "{{ ansible_facts.jetson.family }}"
    gpu_memory_utilization: 0.70
    max_model_len: 8192
  register: spec_headroom_result

- name: Stop when it does not fit, with the utilization that would
  ansible.builtin.assert:
    that: spec_headroom_result.fits
    fail_msg: >-
      {{ spec_headroom_result.reasons | join(' ') }} Recommended gpu_memory_utilization:
      {{ spec_headroom_result.recommended_gpu_memory_utilization | default('none fits') }}
"""

RETURN = r"""
fits:
  description: True when the requirement fits vLLM's share, free memory covers that share and the reserve stays free.
  returned: success
  type: bool
required_bytes:
  description: Target + speculative weights + KV caches + overhead allowance.
  returned: success
  type: int
available_bytes:
  description: Free memory counted for vLLM's startup check (available + reclaimable, capped at total).
  returned: success
  type: int
budget_bytes:
  description: gpu_memory_utilization x memory_total_bytes.
  returned: success
  type: int
recommended_gpu_memory_utilization:
  description: Largest utilization (step 0.01, at most max_gpu_memory_utilization) that passes all rules; null when none does.
  returned: success
  type: float
reasons:
  description: Sentences with the numbers behind the verdict.
  returned: success
  type: list
  elements: str
headroom_warnings:
  description:
    - Things to look at that do not change the verdict (catalog fallbacks, L4T memory issue, board family).
    - Each is also shown as an Ansible warning.
  returned: success
  type: list
  elements: str
method:
  description: The speculative method checked, or null for the baseline.
  returned: success
  type: str
caches_dropped:
  description: True when the page caches were dropped by this run.
  returned: success
  type: bool
breakdown:
  description: Every number used, in bytes, plus where the sizes came from.
  returned: success
  type: dict
  contains:
    target_weight_bytes: {description: Target weights., returned: success, type: int}
    target_weight_source: {description: "C(file:<path>) or C(catalog).", returned: success, type: str}
    kv_source: {description: "Where the target's KV bytes per token came from.", returned: success, type: str}
    speculative_weight_bytes: {description: Draft model or head weights., returned: success, type: int}
    speculative_weight_source: {description: "C(file:<path>), C(catalog) or null.", returned: success, type: str}
    kv_bytes_per_token: {description: Target KV bytes per token., returned: success, type: int}
    speculative_kv_bytes_per_token: {description: Draft KV bytes per token., returned: success, type: int}
    kv_cache_tokens: {description: max_model_len x max_num_seqs., returned: success, type: int}
    kv_cache_bytes: {description: Target KV cache., returned: success, type: int}
    speculative_kv_cache_bytes: {description: Draft KV cache., returned: success, type: int}
    overhead_bytes: {description: Activation/CUDA-graph allowance., returned: success, type: int}
    reserve_bytes: {description: Memory kept outside vLLM., returned: success, type: int}
    memory_total_bytes: {description: Total memory., returned: success, type: int}
    memory_available_bytes: {description: Available memory used (re-read after dropping caches)., returned: success, type: int}
    reclaimable_bytes: {description: Memory freed by restarting vLLM., returned: success, type: int}
    budget_bytes: {description: vLLM's share., returned: success, type: int}
    outside_vllm_bytes: {description: Memory left outside vLLM., returned: success, type: int}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.jetson.specdec.plugins.module_utils.launch.spec_config import (
    METHODS_WITHOUT_MODEL, SpecConfigError, validate_model_ref, validate_spec_config,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.memory import (
    KV_CACHE_DTYPES, SpecMemoryError, compute_headroom, gather_model_facts, validate_utilization,
)
from ansible_collections.jetson.specdec.plugins.module_utils.launch.catalog import CATALOG_VAR
from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import (
    L4T_MODERN_MAJOR, MEMORY_RESERVE_BYTES, UTILIZATION_CEILING, before_modern_l4t, speculation_supported,
)
from ansible_collections.jetson.specdec.plugins.module_utils.jetson.sysfiles import parse_meminfo

DROP_CACHES_PATH = "/proc/sys/vm/drop_caches"
MEMINFO_PATH = "/proc/meminfo"
REMEDY = "sync; echo 3 > /proc/sys/vm/drop_caches"


def _drop_caches(module):
    """sync, drop page caches, return the fresh MemAvailable in bytes (None if unreadable)."""
    module.run_command([module.get_bin_path("sync", required=True)], check_rc=True)
    try:
        with open(DROP_CACHES_PATH, "w") as handle:
            handle.write("3\n")
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot write %s (%s); drop_caches needs root (become: true)"
                         % (DROP_CACHES_PATH, exc))
    try:
        with open(MEMINFO_PATH) as handle:
            return parse_meminfo(handle.read()).get("MemAvailable")
    except (IOError, OSError):
        return None


def _facts_or_fail(module, model, params, what):
    facts = gather_model_facts(model, params["hf_home"], params["catalog"], params["kv_cache_dtype"], what)
    if facts["weight_bytes"] is None:
        module.fail_json(msg="no weight size for %s %s: it is not in the local Hugging Face cache (%s/hub) "
                             "and not in %s; add weight_bytes to the catalog or download the model first"
                             % (what, model, params["hf_home"], CATALOG_VAR))
    return facts


def run(module):
    params = module.params
    result = {"changed": False, "caches_dropped": False, "method": None}
    warnings = []
    try:
        target = validate_model_ref(params["target_model"], "target_model")
        spec = None
        if params["speculative_config"] is not None:
            spec = validate_spec_config(params["speculative_config"])
        # Refuse bad numbers before any side effect (drop_caches).
        validate_utilization("gpu_memory_utilization", params["gpu_memory_utilization"])
        validate_utilization("max_gpu_memory_utilization", params["max_gpu_memory_utilization"])
        if params["memory_total_bytes"] <= 0 or params["memory_available_bytes"] < 0:
            raise SpecMemoryError("memory_total_bytes must be > 0 and memory_available_bytes >= 0 (got %d and %d); "
                                  "pass them from the Jetson facts" % (params["memory_total_bytes"],
                                                                       params["memory_available_bytes"]))
    except (SpecConfigError, SpecMemoryError) as exc:
        module.fail_json(msg=str(exc), **result)
    method = spec["method"] if spec else None
    result["method"] = method

    available = params["memory_available_bytes"]
    if params["drop_caches"]:
        result["changed"] = True
        if module.check_mode:
            warnings.append("check mode: page caches were not dropped; MemAvailable is the value passed in")
        else:
            fresh = _drop_caches(module)
            result["caches_dropped"] = True
            if fresh is not None:
                available = min(fresh, params["memory_total_bytes"])

    target_facts = _facts_or_fail(module, target, params, "target")
    warnings.extend(target_facts["warnings"])
    if target_facts["kv_bytes_per_token"] is None:
        module.fail_json(msg="no KV size for target %s: no config.json in the local cache and no "
                             "kv_bytes_per_token in %s" % (target, CATALOG_VAR), **result)

    spec_weights, spec_kv, spec_source = 0, 0, None
    if spec and spec.get("model") and method not in METHODS_WITHOUT_MODEL:
        spec_facts = _facts_or_fail(module, spec["model"], params, method)
        warnings.extend(spec_facts["warnings"])
        spec_weights, spec_source = spec_facts["weight_bytes"], spec_facts["weight_source"]
        spec_kv = spec_facts["kv_bytes_per_token"]
        if spec_kv is None:
            if method == "draft_model":
                module.fail_json(msg="no KV size for draft model %s: add kv_bytes_per_token to its %s entry"
                                 % (spec["model"], CATALOG_VAR), **result)
            # A one-layer EAGLE head caches a few KiB per token: negligible next to the target.
            warnings.append("no KV size for %s head %s; counted as 0" % (method, spec["model"]))
            spec_kv = 0

    try:
        report = compute_headroom(
            target_weight_bytes=target_facts["weight_bytes"],
            kv_bytes_per_token=target_facts["kv_bytes_per_token"],
            max_model_len=params["max_model_len"], max_num_seqs=params["max_num_seqs"],
            memory_total_bytes=params["memory_total_bytes"], memory_available_bytes=available,
            gpu_memory_utilization=params["gpu_memory_utilization"],
            max_gpu_memory_utilization=params["max_gpu_memory_utilization"],
            method=method, spec_weight_bytes=spec_weights, spec_kv_bytes_per_token=spec_kv,
            reclaimable_bytes=params["reclaimable_bytes"], reserve_bytes=params["reserve_bytes"],
            overhead_bytes=params["overhead_bytes"])
    except SpecMemoryError as exc:
        module.fail_json(msg=str(exc), **result)

    # detect_jetson.sh / jetson-memory-audit: the stuck-memory issue is fixed from L4T r39 (JetPack 7.2).
    if before_modern_l4t(params["l4t_major"]):
        warnings.append("L4T r%d (< r%d): memory can look stuck after a vLLM container exits, and vLLM then "
                        "reports less free memory than MemAvailable; remedy: `%s` as root (set drop_caches: "
                        "true to let this module run it)" % (params["l4t_major"], L4T_MODERN_MAJOR, REMEDY))
    if method and params["family"] and not speculation_supported(params["family"]):
        warnings.append("board family %s: the speculative-decoding rules enable speculation only on Thor and "
                        "AGX Orin; other boards (Orin Nano/NX) usually OOM with a target plus a draft"
                        % params["family"])

    report["breakdown"].update({
        "target_weight_source": target_facts["weight_source"], "kv_source": target_facts["kv_source"],
        "speculative_weight_source": spec_source,
    })
    report_warnings = report.pop("warnings")
    result.update(report)
    # exit_json(warnings=...) is deprecated in ansible-core 2.19 and the key is rewritten;
    # show each through module.warn and return the plain sentences under their own key.
    result["headroom_warnings"] = warnings + report_warnings
    for text in result["headroom_warnings"]:
        module.warn(text)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            target_model=dict(type="str", required=True),
            speculative_config=dict(type="raw"),
            catalog=dict(type="dict", default={}),
            hf_home=dict(type="path", default="~/.cache/huggingface"),
            memory_total_bytes=dict(type="int", required=True),
            memory_available_bytes=dict(type="int", required=True),
            reclaimable_bytes=dict(type="int", default=0),
            reserve_bytes=dict(type="int", default=MEMORY_RESERVE_BYTES),
            gpu_memory_utilization=dict(type="float", required=True),
            max_gpu_memory_utilization=dict(type="float", default=UTILIZATION_CEILING),
            max_model_len=dict(type="int", required=True),
            max_num_seqs=dict(type="int", default=1),
            kv_cache_dtype=dict(type="str", default="auto", choices=list(KV_CACHE_DTYPES)),
            overhead_bytes=dict(type="int"),
            l4t_major=dict(type="int"),
            family=dict(type="str"),
            drop_caches=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    run(module)


if __name__ == "__main__":
    main()
