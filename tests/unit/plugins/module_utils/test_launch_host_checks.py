# -*- coding: utf-8 -*-
"""Refusals of the host itself: the account, the inventory group, systemd (launch/host_checks.py)."""
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.jetson.specdec.plugins.filter.vllm_launch import FilterModule
from ansible_collections.jetson.specdec.plugins.module_utils.launch.host_checks import host_refusals

GOOD = dict(host="thor-01", runtime="native", user="vllm", exists=False, uid=None, marker=False,
            use_existing_user=False, wrong_groups=[], family="thor", model="NVIDIA Jetson AGX Thor Developer Kit",
            systemd_booted=True)


def rules(facts):
    return [r.split(":", 1)[0] for r in host_refusals(dict(GOOD, **facts))]


def test_a_new_account_on_its_own_group_with_systemd_is_managed():
    assert host_refusals(GOOD) == []


def test_the_account_the_role_created_is_managed_again():
    assert rules(dict(exists=True, uid="998", marker=True)) == []


@pytest.mark.parametrize("facts, why", [
    (dict(exists=True, uid="1000", marker=False), "that this role did not create"),
    (dict(exists=True, uid="0", marker=True), "(uid 0, a root account)"),
    (dict(exists=True, uid=0, marker=False, use_existing_user=True), "(uid 0, a root account)"),
])
def test_an_account_the_role_did_not_create_or_root_is_refused(facts, why):
    refusals = host_refusals(dict(GOOD, **facts))
    assert len(refusals) == 1 and refusals[0].startswith("input.existing_account: vllm_server_user vllm ")
    assert why in refusals[0] and "vllm_server_use_existing_user: true" in refusals[0]


def test_a_dedicated_account_the_operator_manages_is_used():
    assert rules(dict(exists=True, uid="1001", marker=False, use_existing_user=True)) == []


def test_the_container_runtime_does_not_check_the_account():
    assert rules(dict(runtime="container", exists=True, uid="0")) == []


def test_another_familys_group_names_the_groups_the_family_and_the_fix():
    refusals = host_refusals(dict(GOOD, wrong_groups=["agx_orin", "orin_nx"]))
    assert refusals == ["inventory.wrong_group: thor-01 is listed in the inventory group(s) agx_orin, orin_nx, but the "
                        "board reports thor (NVIDIA Jetson AGX Thor Developer Kit), so that group's settings (k, "
                        "utilization, speculation) would apply to it. Fix: move it to the thor group (or list it only "
                        "under jetsons; the run groups boards by their own family)."]


def test_no_systemd_is_refused():
    assert rules(dict(systemd_booted=False)) == ["host.no_systemd"]


def test_every_reason_at_once_in_order():
    assert rules(dict(exists=True, uid="1000", wrong_groups=["agx_orin"], systemd_booted=False)) == [
        "input.existing_account", "inventory.wrong_group", "host.no_systemd"]


def test_the_filter_refuses_what_is_not_a_dict():
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="takes a dict"):
        FilterModule().filters()["vllm_server_host_refusals"](["thor-01"])
    with pytest.raises(AnsibleFilterError, match="vllm_server_host_refusals"):
        FilterModule().filters()["vllm_server_host_refusals"](dict(GOOD, exists=True, uid="abc"))


# Issue 34, medium 7 (host side): vllm_host_info's unit facts; a unit of the name the collection did not write.
@pytest.mark.parametrize("unit", [
    {"name": "ssh", "paths": ["/lib/systemd/system/ssh.service"], "exists": True, "written_by_collection": False},
    {"name": "vllm", "paths": ["/etc/systemd/system/vllm.service"], "exists": True, "written_by_collection": False},
    {"name": "vllm", "paths": ["/etc/systemd/system/vllm.service", "/usr/lib/systemd/system/vllm.service"],
     "exists": True, "written_by_collection": False},
    {"name": "llm", "paths": ["/run/systemd/system/llm.service"], "exists": True, "written_by_collection": False},
])
def test_a_unit_the_collection_did_not_write_is_refused(unit):
    out = host_refusals(dict(GOOD, unit=unit))
    assert [r.split(":", 1)[0] for r in out] == ["host.unit_not_ours"]
    assert all(path in out[0] for path in unit["paths"]) and "vllm_server_service_name" in out[0]


@pytest.mark.parametrize("unit", [
    None, {}, {"name": "vllm", "paths": [], "exists": False, "written_by_collection": False},
    {"name": "vllm", "paths": ["/etc/systemd/system/vllm.service"], "exists": True, "written_by_collection": True},
])
def test_no_unit_or_the_collections_own_unit_is_managed(unit):
    assert host_refusals(dict(GOOD, unit=unit)) == []
