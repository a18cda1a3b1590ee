# Sourced by scripts/run and scripts/test: make sure uv and the locked environment exist.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if ! command -v uv >/dev/null 2>&1; then
  PY="$(command -v python3.11 || command -v python3)"
  "$PY" -m pip install --quiet --user uv 2>/dev/null || "$PY" -m pip install --quiet uv
  export PATH="$HOME/.local/bin:$PATH"
fi
uv sync --frozen --quiet --compile-bytecode  # compiled once: every service process starts faster
# our own packages are installed editable (not in site-packages), and PYTHONDONTWRITEBYTECODE
# may be set: compile them too, or every service process of a test stack compiles them again
uv run --frozen python -m compileall -q -j 0 libs services clients >/dev/null
"$ROOT/scripts/install_pango.sh"  # WeasyPrint (official documents) needs Pango and a font
