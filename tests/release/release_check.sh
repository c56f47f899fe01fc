#!/usr/bin/env bash
# `make release-check`: build the collection the way Galaxy users get it, install it into
# a clean collections path and run it from there, outside the repository.
#   1. galaxy.yml's version is the newest release of changelogs/changelog.yaml; fragments lint
#   2. ansible-galaxy collection build (honours build_ignore: no tests/, .venv, ...)
#   3. ansible-galaxy collection install into a temporary path (offline)
#   4. from a temporary folder, with ANSIBLE_COLLECTIONS_PATH = that path only:
#      ansible-doc lists the modules and roles; the installed playbook jetson.specdec.facts
#      reads a fixture board root and prints the board.
# Works from a fresh clone after `make venv`. Nothing outside a temporary folder is written.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$REPO/.venv/bin"
[ -x "$BIN/ansible-galaxy" ] || BIN="$(dirname "$(command -v ansible-galaxy)")"
PY="$BIN/python"; [ -x "$PY" ] || PY="$(command -v python3)"
FIXTURE="$REPO/tests/fixtures/boards/thor-t5000-devkit-r39.2/root"

fail() { printf 'release-check: FAIL: %s\n' "$*" >&2; exit 1; }
ok() { printf 'release-check: ok: %s\n' "$*"; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/specdec-release.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# 1. Version and changelog agree.
version=$("$PY" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["version"])' "$REPO/galaxy.yml")
released=$("$PY" - "$REPO/changelogs/changelog.yaml" <<'PYTHON'
import sys, yaml
from packaging.version import Version  # shipped with ansible-core's dependencies
releases = (yaml.safe_load(open(sys.argv[1])) or {}).get("releases") or {}
print(max(releases, key=Version) if releases else "none")
PYTHON
)
[ "$version" = "$released" ] \
    || fail "galaxy.yml says $version, changelogs/changelog.yaml's newest release is $released (antsibull-changelog release --version $version)"
(cd "$REPO" && "$BIN/antsibull-changelog" lint) || fail "antsibull-changelog lint"
ok "galaxy.yml version $version = newest changelog release; fragments lint clean"

# 2. Build.
(cd "$REPO" && "$BIN/ansible-galaxy" collection build --force --output-path "$WORK/dist" >/dev/null)
tarball="$WORK/dist/jetson-specdec-$version.tar.gz"
[ -f "$tarball" ] || fail "no $tarball after ansible-galaxy collection build"
listing=$(tar -tzf "$tarball")
for wanted in MANIFEST.json FILES.json meta/runtime.yml roles/pull_mode/meta/argument_specs.yml \
              roles/rollout/tasks/main.yml roles/vllm_server/tasks/main.yml playbooks/pull.yml \
              playbooks/rollout.yml plugins/modules/jetson_facts.py plugins/action/fleet_report.py \
              plugins/plugin_utils/templates/fleet_report.html.j2 changelogs/changelog.yaml docs/index.md; do
    grep -qx "$wanted" <<<"$listing" || fail "$wanted is missing from $(basename "$tarball")"
done
for unwanted in '^tests/' '^\.venv/' '^\.cache/' '^\.ci/' '^build/' '^Makefile$'; do
    if grep -qE "$unwanted" <<<"$listing"; then fail "$(basename "$tarball") ships files matching $unwanted"; fi
done
ok "built $(basename "$tarball") ($(wc -l <<<"$listing") entries, no tests or venv)"

# From here on: a temporary folder outside the repository (no ansible.cfg of the repo) and a
# collections path holding only the installed copy.
mkdir -p "$WORK/run"
cd "$WORK/run"
export ANSIBLE_COLLECTIONS_PATH="$WORK/collections" ANSIBLE_NOCOLOR=1 ANSIBLE_LOCAL_TEMP="$WORK/tmp" \
       ANSIBLE_HOME="$WORK/ansible-home"
unset ANSIBLE_CONFIG ANSIBLE_CALLBACKS_ENABLED

# 3. Install into the clean path (the collection has no dependencies: no Galaxy access).
"$BIN/ansible-galaxy" collection install --offline --force -p "$WORK/collections" "$tarball" >/dev/null
installed="$WORK/collections/ansible_collections/jetson/specdec"
manifest_version=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["collection_info"]["version"])' "$installed/MANIFEST.json")
[ "$manifest_version" = "$version" ] || fail "installed MANIFEST.json says $manifest_version"
ok "installed into $WORK/collections"

# 4. Run the installed copy from outside the repository.

modules=$("$BIN/ansible-doc" -t module -l jetson.specdec)
for module in jetson_facts rollout_state vllm_bench vllm_wait spec_headroom fleet_report; do
    grep -q "^jetson\.specdec\.$module " <<<"$modules" || fail "ansible-doc -l jetson.specdec does not list $module:
$modules"
done
source_path=$("$BIN/ansible-doc" -j jetson.specdec.jetson_facts \
    | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["jetson.specdec.jetson_facts"]["doc"]["filename"])')
case "$source_path" in "$installed"/*) ;; *) fail "ansible-doc read jetson_facts from $source_path, not the installed copy";; esac
roles=$("$BIN/ansible-doc" -t role -l jetson.specdec)
for role in pull_mode rollout vllm_server; do
    grep -q "jetson\.specdec\.$role" <<<"$roles" || fail "ansible-doc -t role -l does not list $role:
$roles"
done
ok "ansible-doc lists the modules and roles of the installed copy"

out=$("$BIN/ansible-playbook" -i localhost, -c local jetson.specdec.facts \
      -e jetson_specdec_hosts=localhost -e "jetson_specdec_root=$FIXTURE" -e "ansible_python_interpreter=$PY" 2>&1) \
    || fail "ansible-playbook jetson.specdec.facts failed:
$out"
grep -q "localhost | thor | " <<<"$out" || fail "the fleet table does not show localhost as a thor board:
$out"
grep -qE "localhost +: ok=[0-9]+ +changed=0 .*failed=0" <<<"$out" || fail "unexpected recap:
$out"
ok "ansible-playbook jetson.specdec.facts (installed copy) read the fixture board: $(grep -o 'localhost | thor | [^"]*' <<<"$out" | head -n 1)"
echo "release-check: PASS (jetson.specdec $version)"
