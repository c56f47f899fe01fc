"""Helpers of the real vLLM lane: start/stop a real `vllm serve` (on the host or under systemd
in a test-bed container), wait for /health with a bound, stream completions, scrape /metrics.

Standard library only, so the project venv (which has no torch/vLLM) can drive the lane venv.
Everything binds 127.0.0.1; every call has a timeout.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from prompts import MAX_TOKENS, NUM_SPECULATIVE_TOKENS, PROMPTS  # noqa: E402

SERVED_NAME = "tiny"
MAX_MODEL_LEN = 1024
START_TIMEOUT = float(os.environ.get("JETSON_SPECDEC_LANE_START_TIMEOUT", "300"))
REQUEST_TIMEOUT = 120.0

SPEC_METRICS = {
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted": "vllm:spec_decode_num_accepted_tokens_total",
}
PER_POS_METRIC = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


def cache_root() -> Path:
    return Path(os.environ.get("JETSON_SPECDEC_CACHE") or Path.home() / ".cache" / "jetson-specdec")


def compile_cache_env(root: Path) -> dict[str, str]:
    """Compile caches under the lane's cache dir, so the second start in a run is warm."""
    return {
        "VLLM_CACHE_ROOT": str(root / "vllm"),
        "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
        "TRITON_CACHE_DIR": str(root / "triton"),
        "XDG_CACHE_HOME": str(root / "xdg"),
        "HF_HOME": str(root / "hf"),
    }


def loopback_env() -> dict[str, str]:
    return {
        "VLLM_HOST_IP": "127.0.0.1",
        "GLOO_SOCKET_IFNAME": "lo",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "VLLM_TARGET_DEVICE": "cpu",
        "VLLM_CPU_KVCACHE_SPACE": "1",
    }


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(loopback_env())
    env.update(compile_cache_env(cache_root() / "vllm-lane-compile"))
    return env


def spec_json(spec) -> str | None:
    if spec is None:
        return None
    return spec if isinstance(spec, str) else json.dumps(spec, separators=(",", ":"))


def serve_args(target: str, port: int, spec=None, extra=()) -> list[str]:
    """Arguments after `vllm` (the same ones the role's unit passes)."""
    args = ["serve", str(target), "--served-model-name", SERVED_NAME,
            "--host", "127.0.0.1", "--port", str(port),
            "--max-model-len", str(MAX_MODEL_LEN), "--dtype", "float32"]
    sj = spec_json(spec)
    if sj is not None:
        args += ["--speculative-config", sj]
    return args + list(extra)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------- HTTP client

def _auth(api_key: str | None) -> dict:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def http_request(port: int, method: str, path: str, body=None, timeout: float = 10.0,
                 api_key: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        headers.update(_auth(api_key))
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    finally:
        conn.close()


def parse_metrics(text: str) -> dict:
    """Spec-decode counters from Prometheus text, summed over label sets."""
    out: dict = {"present": set(), "per_pos": {}}
    for key in SPEC_METRICS:
        out[key] = 0.0
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')
    for line in text.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        for key, metric in SPEC_METRICS.items():
            if name == metric:
                out[key] += value
                out["present"].add(metric)
        if name == PER_POS_METRIC:
            out["present"].add(PER_POS_METRIC)
            pos = re.search(r'position="(\d+)"', labels)
            if pos:
                p = int(pos.group(1))
                out["per_pos"][p] = out["per_pos"].get(p, 0.0) + value
    return out


def scrape_metrics(port: int, timeout: float = 10.0) -> dict:
    status, text = http_request(port, "GET", "/metrics", timeout=timeout)
    if status != 200:
        raise RuntimeError(f"/metrics returned {status}")
    parsed = parse_metrics(text)
    parsed["raw"] = text
    return parsed


def spec_delta(before: dict, after: dict) -> dict:
    d = {k: after[k] - before[k] for k in SPEC_METRICS}
    d["acceptance_rate"] = d["accepted"] / d["draft_tokens"] if d["draft_tokens"] else None
    d["mean_acceptance_length"] = 1 + d["accepted"] / d["drafts"] if d["drafts"] else None
    d["per_pos"] = {p: after["per_pos"].get(p, 0.0) - before["per_pos"].get(p, 0.0)
                    for p in after["per_pos"]}
    return d


def stream_completion(port: int, prompt: str, max_tokens: int = MAX_TOKENS,
                      timeout: float = REQUEST_TIMEOUT, api_key: str | None = None) -> dict:
    """One streaming /v1/completions request (temperature 0, ignore_eos), timed client-side."""
    body = {"model": SERVED_NAME, "prompt": prompt, "max_tokens": max_tokens,
            "temperature": 0, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t0 = time.perf_counter()
    deadline = t0 + timeout
    ttft = None
    chunks, text, usage, done = 0, [], None, False
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json", **_auth(api_key)})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"/v1/completions returned {resp.status}: {resp.read()[:500]!r}")
        while True:
            if time.perf_counter() > deadline:
                raise TimeoutError("stream exceeded its deadline")
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                done = True
                break
            ev = json.loads(payload)
            if ev.get("usage"):
                usage = ev["usage"]
            for ch in ev.get("choices") or []:
                chunks += 1
                if ttft is None:
                    ttft = time.perf_counter() - t0
                text.append(ch.get("text") or "")
    finally:
        conn.close()
    elapsed = time.perf_counter() - t0
    return {"elapsed": elapsed, "ttft": ttft, "chunks": chunks, "text": "".join(text),
            "usage": usage, "done": done,
            "completion_tokens": (usage or {}).get("completion_tokens")}


def benchmark(port: int, prompts=None, max_tokens: int = MAX_TOKENS, warmup: bool = True) -> dict:
    """Sequential streams; tok/s = generated tokens / wall time; spec counters from /metrics deltas."""
    prompts = PROMPTS if prompts is None else prompts
    if warmup:
        stream_completion(port, prompts[0], max_tokens=16)
    before = scrape_metrics(port)
    t0 = time.perf_counter()
    runs = [stream_completion(port, p, max_tokens) for p in prompts]
    wall = time.perf_counter() - t0
    after = scrape_metrics(port)
    tokens = sum(r["completion_tokens"] or 0 for r in runs)
    return {
        "streams": len(runs),
        "tokens": tokens,
        "wall_s": wall,
        "tok_s": tokens / wall if wall else 0.0,
        "mean_ttft_ms": 1000 * sum(r["ttft"] or 0 for r in runs) / len(runs),
        "spec": spec_delta(before, after),
        "spec_metrics_present": sorted(after["present"]),
        "runs": runs,
    }


# ------------------------------------------------------------------- host server lifecycle

@dataclass
class Server:
    name: str
    argv: list
    port: int
    proc: subprocess.Popen
    log_path: Path
    start_s: float = 0.0
    info: dict = field(default_factory=dict)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def wait_health(port: int, timeout: float, alive=lambda: True) -> float:
    """Poll /health until 200; raise on timeout or when alive() says the server died."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not alive():
            raise RuntimeError("server exited before /health answered")
        try:
            status, dummy = http_request(port, "GET", "/health", timeout=2)
            if status == 200:
                return time.monotonic() - t0
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.5)
    raise TimeoutError(f"/health not 200 within {timeout:.0f} s")


def start_server(venv: Path, target, spec=None, *, name: str = "server", log_dir: Path,
                 extra=(), timeout: float = START_TIMEOUT) -> Server:
    port = free_port()
    argv = [str(Path(venv) / "bin" / "vllm")] + serve_args(target, port, spec, extra)
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    log = open(log_path, "w")
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=server_env(), stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    srv = Server(name=name, argv=argv, port=port, proc=proc, log_path=log_path)
    try:
        wait_health(port, timeout, alive=lambda: proc.poll() is None)
    except Exception as exc:
        stop_server(srv)
        raise RuntimeError(f"{name}: {exc}; rc={proc.returncode}\n{srv.log_tail()}") from exc
    srv.start_s = time.monotonic() - t0
    return srv


def stop_server(srv: Server, timeout: float = 30.0) -> int | None:
    """SIGTERM the server's process group, SIGKILL after timeout."""
    if srv.proc.poll() is None:
        try:
            os.killpg(srv.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            srv.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(srv.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            srv.proc.wait(10)
    # Engine children live in the same session; make sure none is left behind.
    try:
        os.killpg(srv.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return srv.proc.returncode


def run_expect_failure(venv: Path, target, spec, *, timeout: float = 240.0) -> dict:
    """Run `vllm serve` with a config that must be rejected; return rc, output and seconds.

    If it comes up instead (health 200), it is stopped and reported as rc None.
    """
    port = free_port()
    argv = [str(Path(venv) / "bin" / "vllm")] + serve_args(target, port, spec)
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=server_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        out, dummy = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, dummy = proc.communicate(timeout=30)
        rc = None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return {"rc": rc, "output": out.decode("utf-8", "replace"), "seconds": time.monotonic() - t0,
            "argv": argv}


# ------------------------------------------------------------ systemd in a test-bed container

def systemd_quote(arg: str) -> str:
    """Quote one ExecStart argument for systemd (specifiers %, variables $ and quotes escaped)."""
    s = str(arg).replace("%", "%%").replace("$", "$$")
    if re.fullmatch(r"[A-Za-z0-9_./:=,+@-]+", s):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_unit(venv: Path, target, port: int, spec=None, *, env: dict | None = None,
                extra=(), description: str = "vLLM server (jetson.specdec real lane)") -> str:
    """A unit like the one the role writes for a Jetson, for the lane's container test."""
    argv = [str(Path(venv) / "bin" / "vllm")] + serve_args(target, port, spec, extra)
    envs = dict(loopback_env())
    envs.update(env or {})
    lines = ["[Unit]", f"Description={description}", "After=network.target", "",
             "[Service]", "Type=simple"]
    lines += [f"Environment={systemd_quote(f'{k}={v}')}" for k, v in sorted(envs.items())]
    lines += ["ExecStart=" + " ".join(systemd_quote(a) for a in argv),
              "KillSignal=SIGTERM", "TimeoutStopSec=30", "Restart=no", "",
              "[Install]", "WantedBy=multi-user.target", ""]
    return "\n".join(lines)


def docker(*args, timeout: float = 60.0, input: str | None = None, check: bool = True):
    res = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                         input=input, check=False)
    if check and res.returncode != 0:
        raise RuntimeError(f"docker {' '.join(shlex.quote(a) for a in args[:3])} ... "
                           f"rc={res.returncode}: {res.stderr.strip()[-2000:]}")
    return res


def venv_base_prefix(venv: Path) -> Path:
    out = subprocess.run([str(Path(venv) / "bin" / "python"), "-c",
                          "import sys; print(sys.base_prefix)"],
                         capture_output=True, text=True, timeout=60, check=True)
    return Path(out.stdout.strip())


@dataclass
class Container:
    cid: str
    unit_name: str
    port: int
    start_s: float = 0.0


_HEALTH_PY = ("import sys, urllib.request\n"
              "try:\n"
              "    r = urllib.request.urlopen('http://127.0.0.1:%d%s', timeout=%s)\n"
              "    sys.stdout.write(r.read().decode()); sys.exit(0 if r.status == 200 else 1)\n"
              "except Exception as e:\n"
              "    sys.stderr.write(repr(e)); sys.exit(1)\n")


def container_get(c: Container, path: str, timeout: float = 10.0):
    """GET http://127.0.0.1:<port><path> from inside the container (it has no network)."""
    res = docker("exec", c.cid, "python3", "-c", _HEALTH_PY % (c.port, path, timeout),
                 timeout=timeout + 20, check=False)
    return res.returncode, res.stdout, res.stderr


def start_in_container(image: str, venv: Path, models_dir: Path, unit_text: str, port: int, *,
                       unit_name: str = "vllm-specdec.service", name: str | None = None,
                       compile_cache: Path | None = None, extra_ro_mounts=(),
                       timeout: float = START_TIMEOUT) -> Container:
    """Run a systemd test-bed container, drop `unit_text` in as `unit_name`, start it, wait /health.

    Bind-mounted read-only at the same paths: the venv, its base interpreter prefix and the
    models, plus `extra_ro_mounts` (files or dirs). `compile_cache` (read-write, same path)
    keeps vLLM's compile caches between runs. `unit_text` is the whole unit: the role's rendered
    unit can be dropped in as it is.
    """
    venv, models_dir = Path(venv), Path(models_dir)
    mounts = []
    for p in (venv, venv_base_prefix(venv), models_dir, *extra_ro_mounts):
        mounts += ["-v", f"{p}:{p}:ro"]
    if compile_cache is not None:
        Path(compile_cache).mkdir(parents=True, exist_ok=True)
        mounts += ["-v", f"{compile_cache}:{compile_cache}:rw"]
    argv = ["run", "-d", "--cap-add", "SYS_ADMIN", "--cgroupns=host",
            "--security-opt", "seccomp=unconfined", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
            "--tmpfs", "/run", "--tmpfs", "/run/lock", "--network", "none", "--shm-size", "2g",
            *mounts]
    if name:
        argv += ["--name", name]
    argv += [image, "/lib/systemd/systemd"]
    t0 = time.monotonic()
    cid = docker(*argv, timeout=120).stdout.strip()
    c = Container(cid=cid, unit_name=unit_name, port=port)
    try:
        # systemd must be up before systemctl can talk to it.
        deadline = time.monotonic() + 90
        state = ""
        while time.monotonic() < deadline:
            state = docker("exec", cid, "systemctl", "is-system-running", timeout=20,
                           check=False).stdout.strip()
            if state in ("running", "degraded"):
                break
            time.sleep(1)
        else:
            raise RuntimeError(f"systemd in container not running: {state!r}")
        docker("exec", "-i", cid, "sh", "-c", f"cat > /etc/systemd/system/{unit_name}",
               input=unit_text, timeout=30)
        docker("exec", cid, "sh", "-c",
               f"systemctl daemon-reload && systemctl start {unit_name}", timeout=60)
        t_unit = time.monotonic()
        while True:
            rc, dummy, dummy2 = container_get(c, "/health", timeout=3)
            if rc == 0:
                break
            active = docker("exec", cid, "systemctl", "is-active", unit_name, timeout=20,
                            check=False).stdout.strip()
            if active in ("failed", "inactive"):
                raise RuntimeError(f"{unit_name} is {active}:\n" + unit_journal(c))
            if time.monotonic() - t_unit > timeout:
                raise TimeoutError(f"/health not 200 within {timeout:.0f} s:\n" + unit_journal(c))
            time.sleep(1)
        c.start_s = time.monotonic() - t0
        return c
    except BaseException:
        stop_container(c)
        raise


def unit_journal(c: Container, lines: int = 60) -> str:
    res = docker("exec", c.cid, "journalctl", "-u", c.unit_name, "--no-pager", "-n", str(lines),
                 timeout=30, check=False)
    return res.stdout + res.stderr


def stop_container(c: Container) -> None:
    try:
        docker("exec", c.cid, "systemctl", "stop", c.unit_name, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pass
    docker("rm", "-f", c.cid, timeout=60, check=False)


# ------------------------------------------------------------------------------ lane config

def lane_enabled() -> bool:
    return (os.environ.get("JETSON_SPECDEC_REAL_VLLM", "") not in ("", "0")
            or bool(os.environ.get("JETSON_SPECDEC_LANE_VENV")))


SKIP_REASON = ("real vLLM lane is off: set JETSON_SPECDEC_REAL_VLLM=1 (or JETSON_SPECDEC_LANE_VENV="
               "<venv from tests/vllm_lane/setup_venv.sh>) to run it; `make real-lane` does")


def spec_for(name: str, models_dir: Path):
    """The speculative config of each lane server (None = baseline)."""
    k = NUM_SPECULATIVE_TOKENS
    draft = {"prefix": "draft-prefix", "unrelated": "draft-unrelated",
             "perturbed": "draft-perturbed"}
    if name == "baseline":
        return None
    if name in draft:
        return {"method": "draft_model", "model": str(Path(models_dir) / draft[name]),
                "num_speculative_tokens": k}
    if name == "ngram":
        return {"method": "ngram", "num_speculative_tokens": k,
                "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    raise KeyError(name)


def spec_stream(port: int, api_key: str | None = None, prompt: str = PROMPTS[0]) -> dict:
    """/metrics before and after one streamed completion: the spec-decode counters' deltas."""
    before = scrape_metrics(port)
    run = stream_completion(port, prompt, api_key=api_key)
    after = scrape_metrics(port)
    run.pop("text", None)
    return {"before": {k: before[k] for k in SPEC_METRICS}, "after": {k: after[k] for k in SPEC_METRICS},
            "delta": {k: v for k, v in spec_delta(before, after).items() if k != "per_pos"},
            "present": sorted(after["present"]), "run": run}


def _main(argv: list[str]) -> int:
    """`python3 lane.py bench PORT [API_KEY]` - benchmark a server on 127.0.0.1, print JSON.
    `python3 lane.py spec-stream PORT [API_KEY]` - spec-decode counters around one stream.

    Used inside the test-bed container (stdlib only: the container's own python3 runs it).
    """
    if len(argv) in (2, 3) and argv[0] == "bench":
        res = benchmark(int(argv[1]))
        for r in res["runs"]:
            r.pop("text", None)
        print(json.dumps(res))
        return 0
    if len(argv) in (2, 3) and argv[0] == "spec-stream":
        print(json.dumps(spec_stream(int(argv[1]), argv[2] if len(argv) == 3 else None)))
        return 0
    print(_main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
