#!/usr/bin/env bash
# Official documents are rendered by WeasyPrint (servicekit.documents), which needs Pango
# and a font; install Debian's packages when they are missing, so ./scripts/test and
# ./scripts/run still do every set-up step on a fresh machine.
set -euo pipefail
if ldconfig -p 2>/dev/null | grep -q "libpangoft2-1.0.so.0" && fc-list 2>/dev/null | grep -qi "DejaVu Sans"; then
  exit 0
fi
echo "[roomtax] Pango or the DejaVu fonts are missing: installing Debian's packages (apt)" >&2
# shellcheck source=scripts/_apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/_apt.sh"
apt_install libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core
ldconfig -p | grep -q "libpangoft2-1.0.so.0" || { echo "[roomtax] Pango did not install" >&2; exit 1; }
