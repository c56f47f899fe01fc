#!/usr/bin/env bash
# `make demo`: a simulated fleet (systemd containers with the vLLM stand-in on board
# profiles), today's deployment without speculation, then the rollout and its report.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
WORK="$REPO/.cache/demo"
INV="$WORK/inventory"
export JETSON_SPECDEC_BOARD_IMAGE="$(bash tests/testbed/testbed.sh board-image | tail -n 1)"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.cache/collections" ANSIBLE_CONFIG="$REPO/ansible.cfg"
PY="$REPO/.venv/bin/python"; PLAYBOOK="$REPO/.venv/bin/ansible-playbook"

step() { printf '\n=== %s\n' "$*"; }

HOSTS=$(python3 -c 'import json,sys;print(",".join(b["name"] for b in json.load(open(sys.argv[1]))["boards"]))' tests/demo/fleet.json)
step "Simulated fleet: ${HOSTS//,/, } (SIMULATED boards)"
rm -rf "$INV" && mkdir -p "$INV"
"$PY" tests/testbed/fleet.py up tests/demo/fleet.json "$INV" >/dev/null
ln -sfn "$REPO/inventories/example/group_vars" "$INV/group_vars"

step "Today's fleet: vLLM without speculation on every board"
"$PLAYBOOK" -i "$INV" playbooks/deploy.yml -e vllm_server_speculation=false >"$WORK/deploy.log"

step "Rollout: benchmark, decide, keep or revert (ansible-playbook jetson.specdec.rollout; each host's progress below, every task in $WORK/rollout.log)"
start=$(date +%s)
"$PLAYBOOK" -i "$INV" playbooks/rollout.yml -e rollout_report_dir="$WORK/reports" ${JETSON_SPECDEC_DEMO_ARGS:-} | tee "$WORK/rollout.log" \
    | awk -v hosts="$HOSTS" -f tests/demo/progress.awk
report=$(ls -d "$WORK"/reports/*/ | sort | tail -n 1)
step "Fleet report ($report)"
cat "$report/report.md"
echo "Rollout took $(( $(date +%s) - start )) s.  Logs and reports: $WORK"
echo "The fleet keeps running; remove it with: python3 tests/testbed/fleet.py down tests/demo/fleet.json"
