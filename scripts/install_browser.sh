#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (services/web/tests/test_browser.py); install it
# when it is missing, so ./scripts/test still does every set-up step on a fresh machine.
set -euo pipefail
CHROMIUM="${ROOMTAX_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
echo "[roomtax] $CHROMIUM is missing: installing Debian's chromium package (apt)" >&2
# shellcheck source=scripts/_apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/_apt.sh"
apt_install chromium fonts-dejavu-core
[ -x "$CHROMIUM" ] || { echo "[roomtax] chromium did not install at $CHROMIUM" >&2; exit 1; }
