#!/usr/bin/env bash
# Create .venv with PyTorch (CPU build from local disk where offered) and perfwarden with every
# extra. Fails, with pip's own message, when any install fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$PY" -m venv .venv
fi
pip_install() {  # quiet unless it fails; pip's noise about unused local indexes is dropped
  local log
  log=$(mktemp)
  if ! .venv/bin/python -m pip install -q "$@" >"$log" 2>&1; then
    grep -v '^WARNING: Location' "$log" >&2 || true
    rm -f "$log"
    echo "setup: pip install $* failed" >&2
    return 1
  fi
  rm -f "$log"
}
pip_install --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "setup: installing torch==2.13.0 (CPU)" >&2
  pip_install torch==2.13.0
fi
echo "setup: installing perfwarden[all,test]" >&2
pip_install -e ".[all,test]"
# the project's own modules as bytecode, as pip compiles an installed package's: an editable
# install reads them from the tree, and where PYTHONDONTWRITEBYTECODE is set every command
# would compile them again (about 0.1 s of each command's start)
.venv/bin/python -m compileall -q collectors service dashboards migrations >/dev/null
.venv/bin/perfwarden --help >/dev/null
echo "setup: done (.venv/bin/perfwarden)" >&2
