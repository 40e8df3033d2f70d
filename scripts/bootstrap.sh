# Sourced by scripts/engine and scripts/test: install the project into .venv on first use.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ ! -x "$ROOT/.venv/bin/engine" ] || ! "$ROOT/.venv/bin/python" -c "import pytest_timeout" 2>/dev/null; then
  echo "installing the project into $ROOT/.venv (first run only) ..." >&2
  python3 -m venv "$ROOT/.venv"
  "$ROOT/.venv/bin/python" -m pip install -q --upgrade pip >&2
  "$ROOT/.venv/bin/python" -m pip install -q -e "$ROOT[test]" >&2
fi
