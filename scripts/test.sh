#!/usr/bin/env bash
# The whole test suite: SQLite and PostgreSQL (127.0.0.1:5432, user postgres), headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q "$@"
