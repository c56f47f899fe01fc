# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Runtime and image gates of a speculative launch: which vLLM will serve, and may it.

Standard library only, Python 3.8+.  Pure: the host's answers (the image's vLLM version
and labels, the NVIDIA container runtime) come in as facts read by jetson_facts.

Image tags, as the Jetson vLLM images are really tagged:
  ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra-aarch64-cu126-22.04   (L4T r36.4, JetPack 6)
  ghcr.io/nvidia-ai-iot/vllm:latest-jetson-orin                 (moving: no L4T in the tag)
  dustynv/vllm:0.8.6-r36.4-cu128-24.04                          (jetson-containers: vLLM, L4T)
  dustynv/vllm:r36.4.0
  vllm/vllm-openai:v0.20.1, vllm/vllm-openai:latest             (upstream, Thor)
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.jetson.specdec.plugins.module_utils.common.policy import (
    MIN_SPECULATIVE_VLLM, ORIN_FAMILIES, before_modern_l4t,
)

# The Jetson builds of vLLM: NVIDIA-AI-IOT's images and jetson-containers' (they build them).
JETSON_VLLM_REPOSITORIES = ("nvidia-ai-iot/vllm", "dustynv/vllm")
# The first vLLM release of each method in the V1 engine.  EAGLE-3: PR #16937 (v0.8.5).
# draft_model: removed with V0, still refused by 0.13.0 ("Speculative decoding with draft
# model is not supported yet", vllm-project/vllm#31883), back with PR #24322 after it.
METHOD_MIN_VLLM = {"ngram": (0, 8, 0), "eagle3": (0, 8, 5), "draft_model": (0, 14, 0)}

_L4T_IN_TAG = re.compile(r"(?:^|[-_.])r(\d{2})\.(\d+)")


def parse_version(text):
    """(major, minor, patch) from '0.20.1', 'v0.20.1', '0.11.0+jetson'; None when unknown."""
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", str(text or ""))
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def _show(version):
    return ".".join(str(part) for part in version)


def split_image(image):
    """(repository, tag) of an image reference; the tag is '' when absent (Docker's 'latest')."""
    ref = (image or "").split("@")[0]
    name, _sep, tag = ref.rpartition(":")
    if not name or "/" in tag:
        return ref.lower(), ""
    return name.lower(), tag


def is_jetson_vllm_image(image):
    """An NVIDIA-AI-IOT or jetson-containers vLLM image (any registry)."""
    repository = split_image(image)[0]
    return any(repository == repo or repository.endswith("/" + repo) for repo in JETSON_VLLM_REPOSITORIES)


def image_l4t(image):
    """(major, minor) of the L4T release an image's tag names (r36.4 in ...:r36.4-tegra-...), or None."""
    match = _L4T_IN_TAG.search(split_image(image)[1])
    return (int(match.group(1)), int(match.group(2))) if match else None


def known_image_l4t(image, image_facts=None):
    """(major, minor) of the L4T an image is built for: its tag, else its labels when it is on the host; or None.

    A digest (ghcr.io/nvidia-ai-iot/vllm@sha256:...) or a moving tag (:latest) names no release: then
    the image's own labels (jetson_facts runtime.image.labels, a label named like 'l4t') decide.
    """
    facts = image_facts or {}
    return image_l4t(image) or (_labelled_l4t(facts) if facts.get("present") else None)


def is_orin_image(image, image_facts=None):
    """A Jetson vLLM image built for Orin: 'orin' in its tag, or an L4T below r38 (Thor starts at r38) in its
    tag or, when the tag says none, in its labels."""
    if not is_jetson_vllm_image(image):
        return False
    l4t = known_image_l4t(image, image_facts)
    return "orin" in split_image(image)[1].lower() or (l4t is not None and l4t[0] < 38)


def image_vllm_version(image):
    """The vLLM version an image tag states (vllm/vllm-openai:v0.20.1, dustynv/vllm:0.8.6-r36.4-...), or None."""
    tag = split_image(image)[1]
    return parse_version(tag) if re.match(r"^v?\d+\.\d+", tag) else None


def _labelled_l4t(image_facts):
    """L4T (major, minor) from the image's labels (a label named like 'l4t'), or None."""
    for key, value in ((image_facts or {}).get("labels") or {}).items():
        if "l4t" in str(key).lower():
            version = parse_version(str(value).lstrip("rR"))
            if version:
                return version[:2]
    return None


def serving_version(inp, warnings):
    """(version, source) of the vLLM that will serve: override, the image on the host, its tag, or the CLI."""
    if inp.get("vllm_version"):
        return parse_version(inp["vllm_version"]), "vllm_server_vllm_version"
    if inp.get("runtime") == "container":
        image = inp.get("image")
        facts = inp.get("image_facts") or {}
        read = parse_version(facts.get("vllm_version")) if facts.get("present") else None
        if read:
            return read, "the image on the host"
        version = image_vllm_version(image)
        if version:
            return version, "the image tag"
        if split_image(image)[1] in ("", "latest") or "latest" in split_image(image)[1]:
            warnings.append("The image %s is a moving tag and is not on the host, so its vLLM version cannot be "
                            "read; pull it (the preflight then reads the version inside it) or pin a versioned "
                            "tag or digest." % image)
        return None, "unknown"
    version = parse_version(inp.get("installed_vllm_version"))
    return version, ("the vLLM CLI on the host" if version else "unknown")


def _refuse(refusals, rule, message):
    refusals.append({"rule": rule, "message": message})


def _check_container_runtime(inp, refusals):
    """The unit runs `docker run --runtime nvidia`: Docker must list that runtime (jetson_facts)."""
    wanted = inp.get("container_runtime")
    present = inp.get("nvidia_runtime_present")
    if isinstance(present, str):  # a templated fact: "True" / "False" / "" (unknown)
        present = {"true": True, "false": False}.get(present.strip().lower())
    if inp.get("runtime") != "container" or wanted != "nvidia" or present is None or present:
        return
    _refuse(refusals, "runtime.nvidia_container_runtime_missing",
            "The unit runs the image with --runtime nvidia, and Docker on this host lists no nvidia runtime "
            "(jetson_facts runtime.nvidia_runtime is false). Fix: install the NVIDIA Container Toolkit "
            "(nvidia-container-toolkit, part of JetPack) and run `sudo nvidia-ctk runtime configure --runtime=docker "
            "&& sudo systemctl restart docker`.")


def _check_docker_daemon(inp, refusals):
    """The unit runs `docker run`: a daemon that does not answer makes every start of it fail."""
    if inp.get("runtime") != "container":
        return
    state = inp.get("docker_daemon")
    if state == "not running":
        _refuse(refusals, "runtime.docker_not_running",
                "The unit runs vLLM with `docker run`, and the Docker daemon on this host does not answer "
                "(`docker info` failed or timed out; jetson_facts runtime.docker_daemon is 'not running' and its "
                "warnings quote Docker's error). Starting the unit would crash-loop, so nothing was changed. Fix: "
                "`sudo systemctl enable --now docker` (see `journalctl -u docker` if it does not stay up), then "
                "re-run; or serve natively with vllm_server_runtime: native.")
    elif state == "absent":
        _refuse(refusals, "runtime.docker_missing",
                "vllm_server_runtime is container, and this host has no Docker CLI (jetson_facts "
                "runtime.docker_daemon is 'absent'). Fix: install Docker with the NVIDIA Container Toolkit (part of "
                "JetPack), or serve natively with vllm_server_runtime: native.")


def _orin_image_hint(l4t_major):
    """Which image a pre-r39 Orin should run, said for its own L4T release.

    JetPack 6 is L4T r36, whose NVIDIA-AI-IOT builds carry CUDA 12.6; JetPack 5 (r35) ships CUDA 11.4, for which
    no such tag is published, so its advice is the upgrade, not a cu126 tag it cannot run."""
    if l4t_major is not None and not before_modern_l4t(l4t_major):
        return ("an image whose tag names r%s.x, or upstream vLLM >= 0.20 (vllm/vllm-openai), which L4T r%s runs"
                % (l4t_major, l4t_major))
    if l4t_major == 36:
        return ("the image built for it, for example ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra-aarch64-cu126-22.04 "
                "(L4T r36 is JetPack 6)")
    jetpack = {34: "JetPack 5", 35: "JetPack 5"}.get(l4t_major, "its JetPack")
    return ("an image built for L4T r%s if your registry has one (its tag names r%s.x; L4T r%s is %s, and "
            "NVIDIA-AI-IOT's vLLM images start at JetPack 6), else upgrade the board to JetPack 6 (L4T r36, "
            "ghcr.io/nvidia-ai-iot/vllm:r36.4-tegra-aarch64-cu126-22.04)" % (l4t_major, l4t_major, l4t_major, jetpack))


def _check_old_orin(inp, refusals, warnings, method):
    """L4T below r39: a JetPack-matched Jetson vLLM image whose vLLM has the method."""
    image = inp.get("image") if inp.get("runtime") == "container" else None
    l4t_major = inp.get("l4t_major")
    if not image or not is_jetson_vllm_image(image):
        _refuse(refusals, "runtime.old_orin_needs_orin_image",
                "Orin on L4T r%s (< r39) serves speculative decoding with the JetPack-matched NVIDIA-AI-IOT vLLM "
                "image. Fix: vllm_server_runtime: container with vllm_server_container_image set to %s; or upgrade "
                "the board to JetPack 7.2 / L4T r39+." % (l4t_major, _orin_image_hint(l4t_major)))
        return
    if _check_image_l4t(inp, refusals, warnings, image):
        _check_method_version(inp, refusals, warnings, method)


def _check_image_l4t(inp, refusals, warnings, image):
    """A Jetson vLLM image must be built for the board's L4T major release (its tag, else its labels).

    Checked below r39 and from r39 on alike: an r36 image on an r39 Orin runs another CUDA and
    driver stack than the board's. True when the image may run.
    """
    l4t_major, l4t_minor = inp.get("l4t_major"), inp.get("l4t_minor")
    tagged = known_image_l4t(image, inp.get("image_facts"))
    if tagged is None:
        _refuse(refusals, "runtime.image_l4t_unknown",
                "The image %s does not say which L4T release it was built for (no rNN.N in its tag, and no label "
                "named like l4t on the image on the host), so it cannot be matched with this board's L4T r%s. Fix: "
                "use %s, or pull the pinned image on the host so the preflight reads its labels."
                % (image, l4t_major, _orin_image_hint(l4t_major)))
        return False
    if tagged[0] != l4t_major:
        _refuse(refusals, "runtime.image_l4t_mismatch",
                "The image %s is built for L4T r%d.%d and this board runs L4T r%s: CUDA and the driver stack inside "
                "the image do not match the board. Fix: use the image built for r%s (NVIDIA-AI-IOT / "
                "jetson-containers tag their builds rMAJOR.MINOR)%s." % (
                    image, tagged[0], tagged[1], l4t_major, l4t_major,
                    "" if l4t_major is None or before_modern_l4t(l4t_major) else
                    ", or upstream vLLM >= 0.20 (vllm/vllm-openai), which L4T r39 runs"))
        return False
    if isinstance(l4t_minor, int) and tagged[1] != l4t_minor:
        warnings.append("The image %s is built for L4T r%d.%d and the board runs r%d.%d; the major releases match, "
                        "prefer the image of the board's exact release." % (image, tagged[0], tagged[1],
                                                                            l4t_major, l4t_minor))
    return True


def _check_method_version(inp, refusals, warnings, method):
    version, source = serving_version(inp, warnings)
    needed = METHOD_MIN_VLLM.get(method)
    if version is None:
        _refuse(refusals, "runtime.vllm_version_unknown",
                "The vLLM version inside %s is unknown, so it cannot be checked that it supports %s. Fix: pull the "
                "image on the host (the preflight reads the version inside it), use a tag that states it, or set "
                "vllm_server_vllm_version." % (inp.get("image"), method or "speculation"))
    elif needed and version < needed:
        _refuse(refusals, "runtime.method_unsupported",
                "vLLM %s (from %s) does not support speculative method %s, which needs vLLM >= %s. Fix: use an "
                "image with a newer vLLM, or a method it supports (ngram since %s)."
                % (_show(version), source, method, _show(needed), _show(METHOD_MIN_VLLM["ngram"])))


def check_runtime(inp, refusals, warnings, speculation, method=None):
    """Append the runtime refusals of this launch; ``method`` is the planned speculative method."""
    family = inp.get("family")
    image = inp.get("image") if inp.get("runtime") == "container" else None
    image_facts = inp.get("image_facts")
    if family == "thor" and image and is_orin_image(image, image_facts):
        how = ("its tag says it is built for Orin" if "orin" in split_image(image)[1].lower() or image_l4t(image) else
               "its labels say it is built for Orin: %s" % ", ".join("%s=%s" % item for item in sorted(
                   ((image_facts or {}).get("labels") or {}).items()) if "l4t" in str(item[0]).lower()))
        _refuse(refusals, "runtime.orin_image_on_thor",
                "The NVIDIA-AI-IOT Orin image %s must never run on Thor (%s). Fix: use "
                "upstream vLLM >= 0.20 (vllm/vllm-openai) or a validated native vLLM >= 0.20 on Thor." % (image, how))
    _check_docker_daemon(inp, refusals)
    _check_container_runtime(inp, refusals)
    if not speculation:
        return
    if (family == "thor" and image and is_jetson_vllm_image(image) and not is_orin_image(image, image_facts)
            and "thor" not in split_image(image)[1].lower() and known_image_l4t(image, image_facts) is None):
        # A digest or a moving tag of a Jetson build says nothing; it may be the Orin build.
        _refuse(refusals, "runtime.image_l4t_unknown",
                "The Jetson vLLM image %s does not say which board it was built for (no rNN.N or 'thor' in its tag, "
                "and no label named like l4t on the image on the host), and an Orin build must never run on Thor. "
                "Fix: pull the pinned image on the host so the preflight reads its labels, use a tag that names "
                "the release, or upstream vLLM >= 0.20 (vllm/vllm-openai)." % image)
        return
    if family in ORIN_FAMILIES and inp.get("l4t_major") is None:
        _refuse(refusals, "runtime.l4t_unknown",
                "This %s's L4T release could not be read (/etc/nv_tegra_release), and the runtime rule depends on it: "
                "the NVIDIA-AI-IOT image below r39, upstream vLLM >= 0.20 from r39. Speculation is refused rather "
                "than guessed. Fix: restore /etc/nv_tegra_release (jetson_facts reports why it was not read), or set "
                "vllm_server_speculation: false." % family)
        return
    if family in ORIN_FAMILIES and before_modern_l4t(inp.get("l4t_major")):
        _check_old_orin(inp, refusals, warnings, method)
        return
    if family in ORIN_FAMILIES and image and is_jetson_vllm_image(image) and not _check_image_l4t(
            inp, refusals, warnings, image):
        return
    version, source = serving_version(inp, warnings)
    if version is None:
        how = ("pull the image on the host so the preflight reads the vLLM version inside it, use a tag that "
               "states the version (vllm/vllm-openai:v0.20.1), or set vllm_server_vllm_version"
               if inp.get("runtime") == "container" else
               "point vllm_server_native_bin at the vLLM CLI the unit runs (the preflight asks it for --version), "
               "or set vllm_server_vllm_version")
        _refuse(refusals, "runtime.vllm_version_unknown",
                "The vLLM version that will serve is unknown, so the --speculative-config shape cannot be checked "
                "(vLLM >= 0.20 is required on %s). Fix: %s." % (family or "this board", how))
    elif version[:2] < MIN_SPECULATIVE_VLLM:
        _refuse(refusals, "runtime.vllm_too_old",
                "vLLM %s (from %s) is older than 0.20, which the current --speculative-config shape needs on %s. "
                "Fix: upgrade to vLLM >= 0.20 (upstream image or native)." % (_show(version), source, family))
