#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (services/web/tests/test_browser.py); install it
# when it is missing, so ./scripts/test still does every set-up step on a fresh machine.
set -euo pipefail
CHROMIUM="${ROOMTAX_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
echo "[roomtax] $CHROMIUM is missing: installing Debian's chromium package (apt)" >&2
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
[ -x "$CHROMIUM" ] || { echo "[roomtax] chromium did not install at $CHROMIUM" >&2; exit 1; }
