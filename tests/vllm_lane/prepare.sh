#!/usr/bin/env bash
# Prepare the real vLLM lane (idempotent): the lane venv (setup_venv.sh) and the tiny local
# models (build_models.py). One preparation at a time: `make test` starts one in the background
# at its beginning and run_lane.sh calls this again, which waits for it and then reuses both.
# The last line of stdout is "<venv> <models>".
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${JETSON_SPECDEC_CACHE:-$HOME/.cache/jetson-specdec}"
mkdir -p "$cache"
exec 8>"$cache/.lane-prepare.lock"
if ! flock -w 3600 8; then
    echo "prepare: timed out waiting for another lane preparation" >&2; exit 1
fi
start=$SECONDS
venv=$(bash "$HERE/setup_venv.sh" | tail -1)
models=$("$venv/bin/python" "$HERE/build_models.py" | tail -1)
echo "prepare: venv and models ready in $((SECONDS - start)) s" >&2
echo "$venv $models"
