# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The pull decision and Docker's pull errors (texts from Docker 20.10 here and Docker Hub's documented answers)."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch.image_pull import (
    PULL_CAUSES, inspect_absent, plan_pull, pull_failure,
)


@pytest.mark.parametrize("policy,present,action", [
    ("missing", True, "keep"), ("missing", False, "pull"),
    ("always", True, "pull"), ("always", False, "pull"),
    ("never", True, "keep"), ("never", False, "refuse"),
])
def test_the_policy_decides_as_docker_run_pull_does(policy, present, action):
    assert plan_pull(policy, present) == action


def test_an_unknown_policy_is_an_error():
    with pytest.raises(ValueError, match="sometimes"):
        plan_pull("sometimes", True)


@pytest.mark.parametrize("text,cause", [
    # seen here (Docker 20.10 against loopback)
    ('Error response from daemon: Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused',
     "unreachable"),
    ("Error response from daemon: manifest unknown", "not_found_or_denied"),
    ("Error response from daemon: denied", "not_found_or_denied"),
    ('Error response from daemon: Get "https://no-such-host.invalid/v2/": dial tcp: lookup no-such-host.invalid on '
     '10.255.255.53:53: no such host', "unreachable"),
    # Docker Hub's and newer daemons' wordings
    ("Error response from daemon: manifest for vllm/vllm-openai:v9.9.9 not found: manifest unknown: manifest unknown",
     "not_found_or_denied"),
    ("Error response from daemon: pull access denied for acme/vllm, repository does not exist or may require "
     "'docker login': denied: requested access to the resource is denied", "not_found_or_denied"),
    ('Error response from daemon: Head "https://ghcr.io/v2/acme/vllm/manifests/r36.4": unauthorized', "not_found_or_denied"),
    ('Error response from daemon: Get "https://registry-1.docker.io/v2/": net/http: request canceled while waiting '
     'for connection (Client.Timeout exceeded while awaiting headers)', "unreachable"),
    ("Error response from daemon: Get \"https://registry-1.docker.io/v2/\": net/http: TLS handshake timeout", "unreachable"),
    ("Error response from daemon: toomanyrequests: You have reached your pull rate limit. You may increase the limit "
     "by authenticating and upgrading: https://www.docker.com/increase-rate-limit", "rate_limited"),
    ("v0.20.1: Pulling from vllm/vllm-openai\nfailed to register layer: write /usr/lib/python3/dist-packages/x.so: "
     "no space left on device", "no_space"),
    ("something nobody has seen", "unknown"),
])
def test_each_failure_names_its_cause_and_quotes_dockers_line(text, cause):
    failure = pull_failure(text)
    assert failure["cause"] == cause and failure["cause"] in PULL_CAUSES
    assert failure["line"] in text.splitlines()
    assert failure["fix"]


def test_the_fixes_name_what_to_change():
    assert "vllm_server_container_image" in pull_failure("Error response from daemon: manifest unknown")["fix"]
    assert "vllm_server_container_pull: never" in pull_failure("dial tcp 127.0.0.1:1: connect: connection refused")["fix"]
    assert "docker system df" in pull_failure("no space left on device")["fix"]


def test_a_pull_stopped_by_its_timeout_is_a_timeout_whatever_it_printed():
    failure = pull_failure("v0.20.1: Pulling from vllm/vllm-openai\nabc123: Downloading", timed_out=True)
    assert failure["cause"] == "timeout" and failure["line"] == "abc123: Downloading"
    assert pull_failure("", timed_out=True)["line"] is None


def test_an_absent_image_is_told_from_a_daemon_that_does_not_answer():
    assert inspect_absent("Error response from daemon: no such image: nope/nope:v1: No such image: nope/nope:v1")
    assert inspect_absent("Error: No such image: nope/nope:v1")
    assert not inspect_absent("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
                              "Is the docker daemon running?")
