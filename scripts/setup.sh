#!/usr/bin/env bash
# Create .venv with PyTorch (CPU build from local disk where offered) and perfwarden with every extra.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "setup: installing torch==2.13.0 (CPU)" >&2
  .venv/bin/python -m pip install -q torch==2.13.0 2>&1 | grep -v '^WARNING: Location' || true
fi
echo "setup: installing perfwarden[all,test]" >&2
.venv/bin/python -m pip install -q -e ".[all,test]" 2>&1 | grep -v '^WARNING: Location' || true
.venv/bin/perfwarden --help >/dev/null
echo "setup: done (.venv/bin/perfwarden)" >&2
