#!/usr/bin/env bash
# The containerised Jetson test bed: a Docker engine, a Debian systemd image built
# from the machine's own apt mirror, and a board image with the vLLM stand-in.
#
#   testbed.sh engine        make sure a Docker engine answers (install/start it when root)
#   testbed.sh image         build or reuse the systemd base image; prints its tag last
#   testbed.sh board-image   build or reuse the board image (base + vLLM stand-in); prints its tag last
#   testbed.sh all           engine + base image + board image
#   testbed.sh mirror        print the apt mirror the base image is built from
#
# Idempotent: images are tagged with a hash of what goes into them, so a second
# run only checks that the tags exist (seconds).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${JETSON_SPECDEC_CACHE:-$HOME/.cache/jetson-specdec}"
BASE_PACKAGES="python3,systemd,systemd-sysv,procps,dbus,git,gpg,ca-certificates,libnuma1"

say() { printf 'testbed: %s\n' "$*" >&2; }
die() { printf 'testbed: ERROR: %s\n' "$*" >&2; exit 2; }

engine_answers() { docker info >/dev/null 2>&1; }

start_dockerd() {
    # No bridge and no iptables rules: containers get only their own loopback,
    # Ansible reaches them with `docker exec`, and nothing leaves this machine.
    mkdir -p "$CACHE"
    say "starting dockerd (no bridge network, no iptables rules)"
    nohup dockerd --bridge=none --iptables=false --ip-masq=false >"$CACHE/dockerd.log" 2>&1 &
    for _ in $(seq 1 60); do
        engine_answers && return 0
        sleep 1
    done
    die "dockerd did not answer within 60 s; see $CACHE/dockerd.log"
}

cmd_engine() {
    if engine_answers; then
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        if command -v docker >/dev/null 2>&1; then
            die "the Docker engine does not answer ('docker info' failed) and this is not root. Start dockerd (or join the docker group), or run as root on Debian/Ubuntu so this script can install and start it."
        fi
        die "no Docker engine and not root. Install docker.io and debootstrap (apt-get install docker.io debootstrap) or run this as root on Debian/Ubuntu."
    fi
    if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
        command -v apt-get >/dev/null 2>&1 || die "no dockerd/debootstrap and no apt-get: install a Docker engine and debootstrap yourself, then re-run."
        say "installing docker.io and debootstrap from Debian packages"
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io debootstrap >&2 \
            || die "apt-get could not install docker.io debootstrap"
    fi
    engine_answers || start_dockerd
}

apt_mirror() {
    # The machine's own mirror, read from its apt configuration (never a host name in the repo).
    if [ -n "${JETSON_SPECDEC_APT_MIRROR:-}" ]; then
        echo "$JETSON_SPECDEC_APT_MIRROR"; return
    fi
    local uri="" etc="${JETSON_SPECDEC_APT_ETC:-/etc/apt}"   # JETSON_SPECDEC_APT_ETC: for tests
    if compgen -G "$etc/sources.list.d/*.sources" >/dev/null; then
        uri=$(awk '/^URIs:/ {print $2}' "$etc"/sources.list.d/*.sources | grep -v -- '-security' | head -n 1 || true)
    fi
    if [ -z "$uri" ] && [ -f "$etc/sources.list" ]; then
        uri=$(awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' "$etc/sources.list" | grep -v -- '-security' | head -n 1 || true)
    fi
    [ -n "$uri" ] || die "no apt mirror found in $etc/sources.list.d/*.sources or $etc/sources.list; set JETSON_SPECDEC_APT_MIRROR=<mirror URL>"
    echo "$uri"
}

apt_suite() {
    if [ -n "${JETSON_SPECDEC_APT_SUITE:-}" ]; then echo "$JETSON_SPECDEC_APT_SUITE"; return; fi
    # shellcheck disable=SC1091
    (. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
}

hash_of() { sha256sum | cut -c1-12; }

cmd_image() {
    mkdir -p "$CACHE"
    cmd_engine
    local mirror suite key tag rootfs
    mirror=$(apt_mirror)
    suite=$(apt_suite)
    key=$(printf '%s\n' "$suite" "$BASE_PACKAGES" "$(sed -n '/^build_base_rootfs()/,/^}/p' "$0")" | hash_of)
    tag="jetson-specdec/base:$key"
    if docker image inspect "$tag" >/dev/null 2>&1; then
        say "base image $tag is cached"
        echo "$tag"; return
    fi
    command -v debootstrap >/dev/null 2>&1 || die "debootstrap is missing: apt-get install debootstrap (as root)"
    rootfs=$(mktemp -d "${TMPDIR:-/tmp}/specdec-rootfs.XXXXXX")
    trap 'rm -rf "$rootfs"' EXIT
    build_base_rootfs "$rootfs" "$suite" "$mirror"
    tar -C "$rootfs" -c . | docker import -c 'CMD ["/lib/systemd/systemd"]' -c 'ENV container=docker' - "$tag" >/dev/null
    rm -rf "$rootfs"; trap - EXIT
    say "built base image $tag"
    echo "$tag"
}

build_base_rootfs() {
    local rootfs="$1" suite="$2" mirror="$3"
    say "debootstrap $suite from the machine's apt mirror (about a minute)"
    debootstrap --variant=minbase --include="$BASE_PACKAGES" "$suite" "$rootfs" "$mirror" >"$CACHE/debootstrap.log" 2>&1 \
        || die "debootstrap failed; see $CACHE/debootstrap.log (mirror: $mirror, suite: $suite)"
    # Units that cannot work in a container without devices or a network would only
    # make `systemctl is-system-running` report degraded.
    for unit in systemd-udevd.service systemd-udev-trigger.service systemd-networkd.service \
                systemd-resolved.service getty@tty1.service console-getty.service systemd-timesyncd.service; do
        ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
    done
    echo 'jetson-sim' >"$rootfs/etc/hostname"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
}

cmd_board_image() {
    local base key tag ctx
    base=$(cmd_image | tail -n 1)
    [ -x "$REPO/tests/simulator/bin/vllm" ] || die "the vLLM stand-in is missing at tests/simulator/bin/vllm"
    key=$( (echo "$base"; sed -n '/^cmd_board_image()/,/^}/p' "$0"; cd "$REPO/tests/simulator" && find bin vllm_sim profiles -type f ! -name '*.pyc' | sort | xargs sha256sum) | hash_of)
    tag="jetson-specdec/board:$key"
    if docker image inspect "$tag" >/dev/null 2>&1; then
        say "board image $tag is cached"
        echo "$tag"; return
    fi
    ctx=$(mktemp -d "${TMPDIR:-/tmp}/specdec-board.XXXXXX")
    mkdir -p "$ctx/vllm-sim"
    (cd "$REPO/tests/simulator" && cp -r bin vllm_sim profiles "$ctx/vllm-sim/")
    find "$ctx" -name '__pycache__' -prune -exec rm -rf {} +
    cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $base
COPY vllm-sim /opt/vllm-sim
RUN ln -sf /opt/vllm-sim/bin/vllm /usr/local/bin/vllm && mkdir -p /etc/jetson-sim /opt/jetson-sim /opt/vllm/bin && ln -sf /opt/vllm-sim/bin/vllm /opt/vllm/bin/vllm && ln -sf /opt/vllm-sim/bin/hf /opt/vllm/bin/hf && ln -sf /opt/vllm-sim/bin/hf /usr/local/bin/hf
DOCKERFILE
    docker build --network none -q -t "$tag" "$ctx" >/dev/null || die "docker build of the board image failed"
    rm -rf "$ctx"
    say "built board image $tag"
    echo "$tag"
}

case "${1:-all}" in
    engine) cmd_engine ;;
    image) cmd_image ;;
    mirror) apt_mirror ;;
    board-image) cmd_board_image ;;
    all) cmd_engine; cmd_board_image ;;
    *) die "usage: $0 engine|image|board-image|all|mirror" ;;
esac
