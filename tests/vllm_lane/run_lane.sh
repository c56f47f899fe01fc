#!/usr/bin/env bash
# The real vLLM lane end to end (`make real-lane`): the lane venv, the local models, then every
# lane test with the real vLLM, and the lane's total time. Extra arguments go to pytest.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$REPO"
t0=$(date +%s)
# prepare.sh waits for a preparation `make test` started in the background, then reuses it
read -r venv models < <(bash "$HERE/prepare.sh" | tail -1) || true
[[ -n "${models:-}" ]] || { echo "lane: preparing the venv and models failed (tests/vllm_lane/prepare.sh)" >&2; exit 1; }
t1=$(date +%s)
echo "lane: venv $venv, models $models (prepared in $((t1 - t0)) s)"
rc=0
JETSON_SPECDEC_REAL_VLLM=1 JETSON_SPECDEC_LANE_VENV="$venv" JETSON_SPECDEC_LANE_MODELS="$models" \
    timeout "${JETSON_SPECDEC_LANE_TIMEOUT:-3600}" \
    "$REPO/.venv/bin/pytest" "$HERE" -q -s -p no:cacheprovider "$@" || rc=$?
t2=$(date +%s)
echo "lane: pytest rc=$rc in $((t2 - t1)) s; total lane time $((t2 - t0)) s ($(( (t2 - t0) / 60 )) min $(( (t2 - t0) % 60 )) s)"
exit "$rc"
