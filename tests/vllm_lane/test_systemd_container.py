"""The REAL vLLM as a systemd service inside a test-bed container (systemd as PID 1).

The lane venv, its base interpreter and the models are bind-mounted read-only at the same
paths; a unit file (the same kind the role writes on a Jetson) is dropped in and started with
systemctl; the container has no network, so every request is made from inside it through
`docker exec` to its own 127.0.0.1.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import lane  # noqa: E402
from prompts import MAX_TOKENS, NUM_SPECULATIVE_TOKENS, PROMPTS  # noqa: E402

pytestmark = [pytest.mark.real_vllm,
              pytest.mark.skipif(not lane.lane_enabled(), reason=lane.SKIP_REASON)]

PORT = 8011
UNIT = "vllm-specdec.service"
# Libraries the vLLM CPU build links against that a minimal Debian image may lack.
HOST_LIBS = ["/usr/lib/x86_64-linux-gnu/libnuma.so.1"]


@pytest.fixture(scope="module")
def testbed_image() -> str:
    script = REPO / "tests" / "testbed" / "testbed.sh"
    assert script.exists(), f"{script} is missing: the test bed provides the systemd image"
    res = subprocess.run(["bash", str(script), "image"], capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, f"testbed.sh image failed:\n{res.stderr[-3000:]}"
    return res.stdout.strip().splitlines()[-1]


def _missing_libs(image: str) -> list[str]:
    """Host libraries absent from the image; bind-mounted read-only (same Debian release)."""
    missing = []
    for lib in HOST_LIBS:
        res = lane.docker("run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", image,
                          "-c", f"test -e {lib}", timeout=60, check=False)
        if res.returncode != 0 and Path(lib).exists():
            missing.append(lib)
    return missing


def _lacks_cxx(image: str) -> bool:
    res = lane.docker("run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", image,
                      "-c", "command -v g++ || command -v c++", timeout=60, check=False)
    return res.returncode != 0


@pytest.fixture(scope="module")
def container(testbed_image, lane_venv, lane_models, lane_results):
    compile_cache = lane.cache_root() / "vllm-lane-compile"
    spec = lane.spec_for("prefix", lane_models)
    # vLLM's CPU torch.compile (inductor) needs a C++ compiler at start; without one in the
    # image, serve eagerly (a documented vLLM flag) instead of failing in warm-up.
    extra = ["--enforce-eager"] if _lacks_cxx(testbed_image) else []
    unit = lane.render_unit(lane_venv, lane_models / "target", PORT, spec,
                            env=lane.compile_cache_env(compile_cache), extra=extra)
    c = lane.start_in_container(testbed_image, lane_venv, lane_models, unit, PORT,
                                unit_name=UNIT, compile_cache=compile_cache,
                                extra_ro_mounts=_missing_libs(testbed_image) + [str(HERE)])
    lane_results["systemd:prefix"] = {"start_s": round(c.start_s, 1), "spec": lane.spec_json(spec),
                                      "extra_args": extra}
    print(f"\n[lane] systemd container {c.cid[:12]}: {UNIT} /health 200 after {c.start_s:.1f} s"
          f" (extra args: {extra or 'none'})")
    try:
        yield c
    finally:
        lane.stop_container(c)


def test_prefix_draft_under_systemd(container, lane_results, lane_venv):
    show = lane.docker("exec", container.cid, "systemctl", "show", UNIT,
                       "-p", "ActiveState", "-p", "MainPID", "-p", "ExecStart",
                       timeout=30).stdout
    assert "ActiveState=active" in show, show
    assert f"{lane_venv}/bin/vllm" in show and "--speculative-config" in show, show

    # Benchmark from inside the container with the lane's own stdlib client.
    res = lane.docker("exec", container.cid, "python3", str(HERE / "lane.py"), "bench",
                      str(PORT), timeout=600)
    b = json.loads(res.stdout.strip().splitlines()[-1])
    spec = b["spec"]
    lane_results["systemd:prefix"].update(
        tok_s=round(b["tok_s"], 1), acceptance_rate=spec["acceptance_rate"],
        mean_acceptance_length=spec["mean_acceptance_length"], drafts=spec["drafts"])
    print(f"\n[lane] systemd prefix: {b['tok_s']:.1f} tok/s, acceptance "
          f"{spec['acceptance_rate']}, mean AL {spec['mean_acceptance_length']}")
    assert b["tokens"] == len(PROMPTS) * MAX_TOKENS
    assert set(lane.SPEC_METRICS.values()) <= set(b["spec_metrics_present"])
    assert spec["draft_tokens"] == spec["drafts"] * NUM_SPECULATIVE_TOKENS > 0
    assert spec["acceptance_rate"] >= 0.99, spec
    assert spec["mean_acceptance_length"] >= NUM_SPECULATIVE_TOKENS + 1 - 0.05

    # The unit's Environment= lines reach the server: it is bound to loopback only.
    env = lane.docker("exec", container.cid, "sh", "-c",
                      f"tr '\\0' '\\n' < /proc/$(systemctl show -p MainPID --value {UNIT})/environ",
                      timeout=30).stdout
    for k, v in lane.loopback_env().items():
        assert f"{k}={v}" in env.splitlines(), f"{k} not set for the service"
