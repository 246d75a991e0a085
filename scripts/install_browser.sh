#!/usr/bin/env bash
# Install Debian's chromium for the HTML report's browser test (tests/test_results_html.py).
# Idempotent: does nothing when /usr/bin/chromium already runs.  Needs root (CI runs as root);
# as another user it prints what to run and exits 0, and the browser test then skips (outside CI).
set -euo pipefail
if [ -x /usr/bin/chromium ] && /usr/bin/chromium --version >/dev/null 2>&1; then
    echo "install_browser: $(/usr/bin/chromium --version) already installed"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "install_browser: not root; run 'sudo apt-get update && sudo apt-get install -y chromium' for the browser test" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
/usr/bin/chromium --version
