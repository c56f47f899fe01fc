#!/usr/bin/env bash
# Headless Chromium for tests/integration_py/test_report_browser.py (the HTML report in a
# real browser). Installs Debian's chromium when it is missing and this is root with apt-get,
# like tests/testbed/testbed.sh installs docker.io; otherwise says why the test will skip.
set -euo pipefail
for name in chromium chromium-browser google-chrome; do
    command -v "$name" >/dev/null 2>&1 && exit 0
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure_chromium: installing chromium from Debian packages (the browser test of the HTML report)" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2 \
        || { echo "ensure_chromium: apt-get could not install chromium; the browser test will skip" >&2; exit 0; }
    exit 0
fi
echo "ensure_chromium: no chromium and not root on Debian: the browser test will skip (apt-get install chromium)" >&2
