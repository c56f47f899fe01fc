#!/usr/bin/env bash
# promtool for tests/integration_py/test_dashboard_promql.py (the dashboard's PromQL evaluated
# against the metrics the collection writes). Installs Debian's prometheus package (which ships
# promtool) when it is missing and this is root with apt-get, like ensure_chromium.sh; otherwise
# says why the test will skip.
set -euo pipefail
command -v promtool >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure_promtool: installing prometheus from Debian packages (promtool for the dashboard test)" >&2
    apt-get update -qq >&2
    # policy-rc.d 101: the package must not start a Prometheus server on this machine (one the
    # machine already has is left as it is).
    ours=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && ours=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2 \
        || echo "ensure_promtool: apt-get could not install prometheus; the dashboard test will skip" >&2
    [ -z "$ours" ] || rm -f /usr/sbin/policy-rc.d
    exit 0
fi
echo "ensure_promtool: no promtool and not root on Debian: the dashboard test will skip (apt-get install prometheus)" >&2
