#!/usr/bin/env bash
# The whole test suite: SQLite and PostgreSQL (127.0.0.1:5432, user postgres), headless Chromium.
# Three parts, each naming its slowest: the tests that measure no time on PYTEST_WORKERS workers
# (default 3, a test file to each: the tests wait on servers, browsers and subprocesses, so on 2
# cores a third worker keeps them busier; docs/results.md, "Test suite time"); those marked
# `cpu_time` (they judge the CPU time of one-thread processes, which a second such test on the other
# core leaves alone) in two pytest processes side by side, one for those also marked `cpu_b` and
# one for the rest, two groups of about equal time; those marked `serial` (they measure wall-clock
# time) alone.
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
# two processes, not xdist's groups: pytest 9.2 ignores the group name that `--dist loadgroup`
# adds to a test's id, and the tests were then dealt out one by one (113 s against 68 s)
temp=$(mktemp -d)
trap 'rm -rf "$temp"' EXIT
rc=0
part -p no:cacheprovider --basetemp "$temp/b" --durations=10 -m "cpu_time and cpu_b" "$@" \
  >"$temp/b.log" 2>&1 &
second=$!
echo "the cpu_time tests marked cpu_b run beside these; their report follows this one"
part -p no:cacheprovider --basetemp "$temp/a" --durations=10 -m "cpu_time and not cpu_b" "$@" \
  || rc=$?
[ "$status" -eq 0 ] && status=$rc
rc=0
wait "$second" || rc=$?
echo "the cpu_time tests marked cpu_b, side by side with those above:"
cat "$temp/b.log"
[ "$status" -eq 0 ] && status=$rc
rc=0
part --durations=15 -m serial "$@" || rc=$?
[ "$status" -eq 0 ] && status=$rc
exit "$status"
