"""Real-vLLM hosts for the collection's playbooks: plain test-bed containers (systemd as PID 1,
no network) with the lane venv, its base interpreter, the models and the repository's tests
bind-mounted read-only at the same paths, reached by Ansible with `docker exec`.

Standard library only (runs under the project venv).
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import lane

HERE = Path(__file__).resolve().parent
CHAT_TEMPLATE = "/etc/specdec-lane/chat_template.jinja"
REPO = HERE.parents[1]
API_KEY = "lane-secret-key"
PORT = 8000
SERVICE = "vllm"

RUN_FLAGS = ["--cap-add", "SYS_ADMIN", "--cgroupns=host", "--security-opt", "seccomp=unconfined",
             "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run", "--tmpfs", "/run/lock",
             "--network", "none", "--shm-size", "2g"]


def make_readable(models: Path) -> list[str]:
    """The service runs as user vllm: give the models' files read access for others.

    save_pretrained writes model.safetensors 0600 (a temp file renamed); the lane's build is a
    cache we own, so widening it to 0644 is safe. Returns the files changed.
    """
    changed = []
    for p in Path(models).rglob("*"):
        mode = p.stat().st_mode
        want = mode | (0o055 if p.is_dir() else 0o044)
        if want != mode:
            p.chmod(want)
            changed.append(str(p))
    return changed


def start_host(image: str, name: str, venv: Path, models: Path, timeout: float = 90) -> str:
    """Start one container; returns its name once systemd runs. The caller removes it."""
    mounts = []
    for p in (venv, lane.venv_base_prefix(venv), models, REPO / "tests"):
        mounts += ["-v", f"{p}:{p}:ro"]
    # The unit runs with PrivateTmp=yes, so a checkout under /tmp is invisible to the
    # service: the chat template gets a path of its own.
    mounts += ["-v", f"{HERE / 'chat_template.jinja'}:{CHAT_TEMPLATE}:ro"]
    lane.docker("rm", "-f", name, timeout=60, check=False)
    lane.docker("run", "-d", "--name", name, "--hostname", name, *RUN_FLAGS, *mounts, image,
                "/lib/systemd/systemd", timeout=120)
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        state = lane.docker("exec", name, "systemctl", "is-system-running", timeout=20,
                            check=False).stdout.strip()
        if state in ("running", "degraded"):
            break
        time.sleep(1)
    else:
        raise RuntimeError(f"{name}: systemd not running ({state!r})")
    # The venv and interpreter live under /root: the service user needs to traverse it
    # (ProtectHome=read-only keeps it read-only for the service).
    lane.docker("exec", name, "chmod", "711", "/root", timeout=20)
    return name


def remove_host(name: str) -> None:
    lane.docker("exec", name, "systemctl", "stop", SERVICE, timeout=90, check=False)
    lane.docker("rm", "-f", name, timeout=90, check=False)


def server_env() -> dict:
    """vllm_server_environment: loopback only, offline, CPU platform, 1 GiB KV cache."""
    env = dict(lane.loopback_env())
    return env


def host_vars(name: str, venv: Path, models: Path, draft: str | None) -> dict:
    """Host vars of one real-vLLM host (draft: the speculative model's dir name)."""
    hv = {
        "ansible_connection": "community.docker.docker",
        "ansible_host": name,
        "ansible_python_interpreter": "/usr/bin/python3",
        "vllm_server_model": str(models / "target"),
        "vllm_server_served_model_name": lane.SERVED_NAME,
        "vllm_server_native_bin": str(venv / "bin" / "vllm"),
        "vllm_server_vllm_version": "0.32.0",
        "vllm_server_force_speculation": True,
        "vllm_server_num_speculative_tokens": 3,
        "vllm_server_dtype": "float32",
        "vllm_server_max_model_len": lane.MAX_MODEL_LEN,
        "vllm_server_enforce_eager": True,
        "vllm_server_gpu_memory_utilization": 0.75,
        "vllm_server_environment": server_env(),
        # The lane's venv and models live under /root: the unit's default ProtectHome=yes would hide them.
        "vllm_server_protect_home": "read-only",
        "vllm_server_extra_args": ["--chat-template", CHAT_TEMPLATE],
        "vllm_server_api_key": API_KEY,
        "vllm_server_port": PORT,
        "vllm_server_health_timeout": 300,
        "vllm_server_health_interval": 2,
        "rollout_reclaim_running_service": False,
    }
    if draft:
        hv.update(vllm_server_speculative_method="draft_model",
                  vllm_server_speculative_model=str(models / draft))
    return hv


def write_inventory(path: Path, hosts: dict) -> Path:
    path.write_text(json.dumps({"all": {"hosts": hosts}}, indent=2) + "\n")
    return path


def ansible_playbook(inventory: Path, playbook: Path, extra_vars: dict, *, log: Path,
                     timeout: float = 900, limit: str | None = None) -> tuple[int, str]:
    """Run ansible-playbook from the project venv; returns (rc, output)."""
    vars_file = log.with_suffix(".vars.json")
    vars_file.write_text(json.dumps(extra_vars))
    cmd = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(inventory),
           str(playbook), "-e", f"@{vars_file}"]
    if limit:
        cmd += ["--limit", limit]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".cache" / "collections"),
               ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", PYTHONUNBUFFERED="1")
    with open(log, "w") as fh:
        try:
            res = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                 timeout=timeout, cwd=str(REPO), check=False)
            rc = res.returncode
        except subprocess.TimeoutExpired:
            rc = None
    return rc, log.read_text(errors="replace")


def main_pid(name: str) -> int:
    out = lane.docker("exec", name, "systemctl", "show", "-p", "MainPID", "--value", SERVICE,
                      timeout=30).stdout.strip()
    return int(out or 0)


def cmdline(name: str, pid: int) -> list[str]:
    """The server's argv as the kernel has it (/proc/PID/cmdline, NUL-separated)."""
    out = subprocess.run(["docker", "exec", name, "cat", f"/proc/{pid}/cmdline"],
                         capture_output=True, timeout=30, check=True).stdout
    return out.decode().split("\0")[:-1]


def proc_env(name: str, pid: int) -> dict:
    out = subprocess.run(["docker", "exec", name, "cat", f"/proc/{pid}/environ"],
                         capture_output=True, timeout=30, check=True).stdout
    return dict(kv.split("=", 1) for kv in out.decode().split("\0") if "=" in kv)


def proc_user(name: str, pid: int) -> str:
    return lane.docker("exec", name, "ps", "-o", "user=", "-p", str(pid), timeout=30).stdout.strip()


def arg_value(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def spec_stream(name: str, api_key: str | None = API_KEY) -> dict:
    """From inside the container: spec-decode counters around one streamed completion."""
    args = ["exec", name, "python3", str(HERE / "lane.py"), "spec-stream", str(PORT)]
    if api_key:
        args.append(api_key)
    res = lane.docker(*args, timeout=300)
    return json.loads(res.stdout.strip().splitlines()[-1])


def contract(name: str, api_key: str | None = API_KEY) -> dict:
    """tests/simulator/endpoint_contract.py run inside the container against its server."""
    args = ["exec", name, "python3", str(REPO / "tests" / "simulator" / "endpoint_contract.py"),
            "--base-url", f"http://127.0.0.1:{PORT}", "--model", lane.SERVED_NAME]
    if api_key:
        args += ["--api-key", api_key]
    return json.loads(lane.docker(*args, timeout=300).stdout)


def read_json(name: str, path: str) -> dict:
    return json.loads(lane.docker("exec", name, "cat", path, timeout=30).stdout)


# ------------------------------------------------------------- the simulator's side of the contract

SIM_DIR = REPO / "tests" / "simulator"
SIM_MODEL = "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"
SIM_SPEC = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
            "num_speculative_tokens": 3}


def sim_contract(tmp: Path, *, api_key: str | None = None, speculative: bool = False) -> dict:
    """endpoint_contract.check_server against the stand-in (fast profile), on loopback."""
    import sys
    import urllib.request
    sys.path.insert(0, str(SIM_DIR))
    import endpoint_contract  # noqa: E402
    profile = json.loads((SIM_DIR / "profiles" / "agx_orin_64gb.json").read_text())
    profile.update({"time_scale": 0.01, "startup_s": 0.0})
    ppath = tmp / "sim-profile.json"
    ppath.write_text(json.dumps(profile))
    port = lane.free_port()
    argv = [sys.executable, str(SIM_DIR / "bin" / "vllm"), "serve", SIM_MODEL, "--host", "127.0.0.1",
            "--port", str(port), "--max-model-len", "4096"]
    if api_key:
        argv += ["--api-key", api_key]
    if speculative:
        argv += ["--speculative-config", json.dumps(SIM_SPEC)]
    env = dict(os.environ, JETSON_SIM_PROFILE=str(ppath))
    env.pop("JETSON_SIM_TIME_SCALE", None)
    log = open(tmp / f"sim-{port}.log", "w")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("simulator did not come up: " + (tmp / f"sim-{port}.log").read_text())
            try:
                if urllib.request.urlopen(base + "/health", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        return endpoint_contract.check_server(base, SIM_MODEL, api_key=api_key)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def contract_differences(real: dict, sim: dict) -> list[str]:
    import sys
    sys.path.insert(0, str(SIM_DIR))
    import endpoint_contract  # noqa: E402
    return endpoint_contract.differences(real, sim)


def contract_host(port: int, api_key: str | None = None) -> dict:
    """endpoint_contract.check_server against a server on this machine's loopback."""
    import sys
    sys.path.insert(0, str(SIM_DIR))
    import endpoint_contract  # noqa: E402
    return endpoint_contract.check_server(f"http://127.0.0.1:{port}", lane.SERVED_NAME, api_key=api_key)
