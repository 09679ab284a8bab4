#!/usr/bin/env bash
# The whole test suite: SQLite and PostgreSQL (127.0.0.1:5432, user postgres), headless Chromium.
# Three parts, each naming its slowest: the tests that measure no time on PYTEST_WORKERS workers
# (default 3, a test file to each: the tests wait on servers, browsers and subprocesses, so on 2
# cores a third worker keeps them busier; docs/results.md, "Test suite time"); those marked
# `cpu_time` (they judge the CPU time of one-thread processes, which a second such test on the other
# core leaves alone) two at once, in the two groups of about equal time their `xdist_group` marks
# name; those marked `serial` (they measure wall-clock time) alone.
set -euo pipefail
cd "$(dirname "$0")/.."
# bytecode caches on, whatever the environment says: the suite starts about 600 Python processes
# that import the project, and pytest collects it three times; without the caches each one
# compiles every module again (0.15 s a command, 6 s a collection, on 2 cores)
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh
part() {  # pytest's exit status, with 5 (none of the tests asked for is in this part) as 0
  local rc=0
  .venv/bin/python -m pytest -q "$@" || rc=$?
  [ "$rc" -eq 5 ] && rc=0
  return "$rc"
}
status=0
part -n "${PYTEST_WORKERS:-3}" --dist loadfile --durations=30 -m "not serial and not cpu_time" "$@" \
  || status=$?
rc=0
part -n 2 --dist loadgroup --durations=10 -m cpu_time "$@" || rc=$?
[ "$status" -eq 0 ] && status=$rc
rc=0
part --durations=15 -m serial "$@" || rc=$?
[ "$status" -eq 0 ] && status=$rc
exit "$status"
