#!/usr/bin/env bash
# The AWX path, proven on the test bed (slow; not part of `make test`):
#   1. an EE base image derived from the test bed's Debian image (no registry),
#   2. the execution environment built with ansible-builder from the repository's
#      execution-environment.yml (the collection tarball installed in it),
#   3. the rollout run on a small simulated fleet inside it with ansible-runner
#      (--process-isolation, the way AWX and ansible-navigator run an EE),
#   4. each host's result read from the run's job events; the fleet report from its artifacts.
# Usage: bash tests/ee/run_ee.sh          (root, or a Docker engine you may use; PyPI through pip's settings)
# Keeps: .cache/ee/ (the runner's private data dir with artifacts). Removes the fleet at the end.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
WORK="$REPO/.cache/ee"
BIN="$REPO/.venv/bin"
IDENT=ee-rollout
export ANSIBLE_COLLECTIONS_PATH="$REPO/.cache/collections" ANSIBLE_CONFIG="$REPO/ansible.cfg"
T0=$(date +%s); LAST=$T0
step() { local now; now=$(date +%s); printf '\n=== [%4d s, +%d s] %s\n' $((now - T0)) $((now - LAST)) "$*"; LAST=$now; }

step "tools: ansible-builder and ansible-runner in .venv (only for this script)"
"$BIN/python" -c "import ansible_builder, ansible_runner" 2>/dev/null \
    || "$BIN/pip" install -q --disable-pip-version-check ansible-builder ansible-runner
TESTBED_IMAGE=$(bash tests/testbed/testbed.sh image | tail -n 1)
export JETSON_SPECDEC_BOARD_IMAGE="${JETSON_SPECDEC_BOARD_IMAGE:-$(bash tests/testbed/testbed.sh board-image | tail -n 1)}"
rm -rf "$WORK" && mkdir -p "$WORK/base-ctx/wheels" "$WORK/collections"

step "EE base image from the test bed's $TESTBED_IMAGE (python3 + pip)"
cp tests/ee/base.Dockerfile tests/ee/ee-pkgmgr "$WORK/base-ctx/"
cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$WORK/base-ctx/ca-certificates.crt"
"$BIN/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$WORK/base-ctx/wheels" pip
BASE_TAG="jetson-specdec/ee-base:$(cat tests/ee/base.Dockerfile tests/ee/ee-pkgmgr <(echo "$TESTBED_IMAGE") | sha256sum | cut -c1-12)"
docker build -q --network host --build-arg "TESTBED_IMAGE=$TESTBED_IMAGE" -f "$WORK/base-ctx/base.Dockerfile" \
    -t "$BASE_TAG" "$WORK/base-ctx" >/dev/null
echo "$BASE_TAG"

step "collection tarball (ansible-galaxy collection build)"
"$BIN/ansible-galaxy" collection build --force --output-path "$WORK/collections" . | tail -n 1

step "execution environment (ansible-builder build, docker, --network host for pip)"
read -r -a PIP_ARGS <<<"$("$BIN/python" tests/ee/ee_tools.py definition "$WORK/execution-environment.yml" "$BASE_TAG" "$WORK/collections")"
EE_TAG=jetson-specdec/ee:test
# JETSON_SPECDEC_EE_REUSE=1 keeps an existing image (a rerun of the rollout part only).
[ "${JETSON_SPECDEC_EE_REUSE:-0}" = 1 ] && docker image inspect "$EE_TAG" >/dev/null 2>&1 && echo "reusing $EE_TAG" \
|| "$BIN/ansible-builder" build -f "$WORK/execution-environment.yml" --context "$WORK/context" -t "$EE_TAG" \
    --container-runtime docker --extra-build-cli-args="--network host" "${PIP_ARGS[@]}" -v 1 >"$WORK/builder.log" 2>&1 \
    || { tail -n 40 "$WORK/builder.log"; echo "ansible-builder failed; log: $WORK/builder.log" >&2; exit 1; }
docker run --rm "$EE_TAG" ansible-galaxy collection list jetson.specdec | tail -n 1
docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' "$EE_TAG"

step "simulated fleet: $("$BIN/python" -c 'import sys;sys.path.insert(0,"tests/ee");import ee_tools;print(", ".join(ee_tools.FLEET_BOARDS))')"
"$BIN/python" tests/ee/ee_tools.py fleet "$WORK/fleet.json"
trap '"$BIN/python" tests/testbed/fleet.py down "$WORK/fleet.json" >/dev/null 2>&1 || true' EXIT
"$BIN/python" tests/testbed/fleet.py up "$WORK/fleet.json" "$WORK/fleet-inventory" >/dev/null
ln -sfn "$REPO/inventories/example/group_vars" "$WORK/fleet-inventory/group_vars"
PDD="$WORK/runner"
"$BIN/python" tests/ee/ee_tools.py private-data "$PDD" "$WORK/fleet-inventory" "$IDENT"
HOSTS=$("$BIN/python" -c 'import json,sys;print(" ".join(b["name"] for b in json.load(open(sys.argv[1]))["boards"]))' "$WORK/fleet.json")

step "rollout inside the EE with ansible-runner (process isolation, docker)"
# The test bed's boards are reached with `docker exec` (community.docker.docker): the EE gets the
# engine's socket, the docker CLI and community.docker from the controller venv, and runs as root
# to use the socket. A real fleet uses SSH and needs none of these mounts.
COMMUNITY_DOCKER=$("$BIN/python" -c 'import ansible_collections.community.docker as m, os;print(os.path.dirname(m.__file__))' 2>/dev/null \
    || ls -d "$REPO"/.venv/lib/python3*/site-packages/ansible_collections/community/docker | head -n 1)
set +e
"$BIN/ansible-runner" run "$PDD" -p rollout.yml --ident "$IDENT" \
    --process-isolation --process-isolation-executable docker --container-image "$EE_TAG" \
    --container-volume-mount /var/run/docker.sock:/var/run/docker.sock \
    --container-volume-mount "$(command -v docker):/usr/bin/docker:ro" \
    --container-volume-mount "$COMMUNITY_DOCKER:/usr/share/ansible/collections/ansible_collections/community/docker:ro" \
    --container-option=--network=host --container-option=--user=0 >"$WORK/runner-stdout.log" 2>&1
RC=$?
set -e
sed -n '/^PLAY RECAP/,$p' "$WORK/runner-stdout.log"
echo "ansible-runner rc=$RC, status $(cat "$PDD/artifacts/$IDENT/status" 2>/dev/null)"

step "job events and fleet report from the artifacts ($PDD/artifacts/$IDENT)"
# shellcheck disable=SC2086
"$BIN/python" tests/ee/ee_tools.py events "$PDD/artifacts/$IDENT" "$PDD/artifacts/$IDENT/reports" $HOSTS
step "done: EE $EE_TAG, rollout in it with ansible-runner; total $(( $(date +%s) - T0 )) s"
