#!/usr/bin/env bash
# The whole test suite: SQLite and PostgreSQL (127.0.0.1:5432, user postgres), headless Chromium.
# Two parts: the tests that do not measure time on PYTEST_WORKERS workers (default 2, a test file
# to each), then those marked `serial` (they measure time or CPU) alone; each names its slowest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
status=0
.venv/bin/python -m pytest -q -n "${PYTEST_WORKERS:-2}" --dist loadfile --durations=30 -m "not serial" "$@" \
  || status=$?
[ "$status" -eq 5 ] && status=0  # nothing of the parallel part among the tests asked for
rc=0
.venv/bin/python -m pytest -q --durations=15 -m serial "$@" || rc=$?
[ "$rc" -eq 5 ] && rc=0
[ "$status" -ne 0 ] && exit "$status"
exit "$rc"
