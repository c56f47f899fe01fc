"""Fixtures of the real vLLM lane: the lane venv, the local models, a results table.

Off unless JETSON_SPECDEC_REAL_VLLM=1 (or JETSON_SPECDEC_LANE_VENV=<venv>). With it on, the
venv and models are prepared here when not given (JETSON_SPECDEC_LANE_VENV,
JETSON_SPECDEC_LANE_MODELS): both steps are cached and take seconds the second time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import lane  # noqa: E402

# name -> measured numbers; filled by the tests, printed and saved at the end of the session.
RESULTS: dict = {}
EXTRA: dict = {}
_T0 = time.monotonic()


def _last_line(cmd: list[str], timeout: float, env=None) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed rc={res.returncode}:\n{res.stderr[-4000:]}")
    return res.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def lane_venv() -> Path:
    if not lane.lane_enabled():
        pytest.skip(lane.SKIP_REASON)
    given = os.environ.get("JETSON_SPECDEC_LANE_VENV")
    t0 = time.monotonic()
    venv = Path(given) if given else Path(_last_line(["bash", str(HERE / "setup_venv.sh")], 2400))
    EXTRA["venv_prepare_s"] = round(time.monotonic() - t0, 1)
    assert (venv / "bin" / "vllm").exists(), f"no vllm in {venv}"
    return venv


@pytest.fixture(scope="session")
def lane_models(lane_venv) -> Path:
    given = os.environ.get("JETSON_SPECDEC_LANE_MODELS")
    t0 = time.monotonic()
    models = Path(given) if given else Path(
        _last_line([str(lane_venv / "bin" / "python"), str(HERE / "build_models.py")], 1200))
    EXTRA["models_prepare_s"] = round(time.monotonic() - t0, 1)
    for d in ("target", "draft-prefix", "draft-unrelated", "draft-perturbed", "eagle3-head", "draft-othervocab"):
        assert (models / d / "config.json").exists(), f"missing {models / d}"
    EXTRA["models_dir"] = str(models)
    EXTRA["build"] = json.loads((models / "build.json").read_text())
    return models


@pytest.fixture(scope="session")
def lane_log_dir() -> Path:
    d = lane.cache_root() / "vllm-lane-logs" / time.strftime("%Y%m%dT%H%M%S")
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="session")
def lane_results() -> dict:
    return RESULTS


def _fmt(v, spec="{:.2f}"):
    return "-" if v is None else spec.format(v)


def _machine() -> str:
    """The CPU, its cores and the load: the lane's effects are CPU timings, so a failed verdict
    in a CI log is read next to the machine that measured it."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{model}, {os.cpu_count()} cores, load average {load}"


def pytest_terminal_summary(terminalreporter):
    if not RESULTS:
        return
    total = time.monotonic() - _T0
    base = (RESULTS.get("baseline") or {}).get("tok_s")
    tr = terminalreporter
    tr.section("real vLLM lane: measured")
    tr.write_line(f"{'config':<26}{'start s':>9}{'tok/s':>9}{'vs base':>9}"
                  f"{'accept':>9}{'mean AL':>9}{'drafts':>8}")
    for name, r in RESULTS.items():
        tok_s = r.get("tok_s")
        ratio = tok_s / base if (tok_s and base) else None
        tr.write_line(f"{name:<26}{_fmt(r.get('start_s'), '{:.1f}'):>9}{_fmt(tok_s, '{:.1f}'):>9}"
                      f"{_fmt(ratio, '{:.2f}x'):>9}{_fmt(r.get('acceptance_rate'), '{:.3f}'):>9}"
                      f"{_fmt(r.get('mean_acceptance_length')):>9}"
                      f"{_fmt(r.get('drafts'), '{:.0f}'):>8}")
    sims = (EXTRA.get("build") or {}).get("simulated_acceptance") or {}
    if sims:
        tr.write_line("simulated at build time (HF, k=3): " + ", ".join(
            f"{k} {v['acceptance_rate']:.3f}" for k, v in sims.items()))
    tr.write_line(f"total lane time: {total:.0f} s; machine: {_machine()}")
    out = lane.cache_root() / "vllm-lane-results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"results": RESULTS, "total_lane_s": round(total, 1),
                               "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "machine": _machine(),
                               **{k: v for k, v in EXTRA.items() if k != "build"},
                               "simulated_acceptance": sims}, indent=2, default=str) + "\n")
    tr.write_line(f"written to {out}")
