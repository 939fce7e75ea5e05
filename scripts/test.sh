#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: bash scripts/test.sh [pytest args]
# (lint first: ruff with the configuration in pyproject.toml; then pytest)
# When the whole suite runs, the two Airflow environments of tests/test_airflow.py (scripts/airflow_env.sh 3 2:
# downloads and unpacking, ~40 s) are installed in the background while the job's environment is made ready; the
# tests' own call of airflow_env.sh waits for it (its lock) and finds them installed. Its output: build/airflow-env.log.
whole_suite=1
for arg in "$@"; do case "$arg" in -m|-k|tests*|*.py*) whole_suite=0 ;; esac; done
if [ "$whole_suite" = 1 ]; then
  mkdir -p "$(dirname "$0")/../build"
  bash "$(dirname "$0")/airflow_env.sh" 3 2 > "$(dirname "$0")/../build/airflow-env.log" 2>&1 &
fi
source "$(dirname "$0")/_env.sh"
"$VENV/bin/ruff" check --quiet "$ROOT" || die "ruff found problems (above): fix them, or run $VENV/bin/ruff check --fix"
# The test files in two processes (pytest-xdist; a file's tests stay in one process, with its module fixtures and
# one Spark session per process). Two keep the 2-core CI machine's cores busy: one process is 1.2-1.4x slower,
# and with three the JVMs compete for the cores and are slower too (docs/performance.md). TEST_PROCESSES=0 runs
# in this process alone; pytest's own -n overrides. The files go out longest first (tests/conftest.py, FILE_SECONDS).
exec "$VENV/bin/python" -m pytest -n "${TEST_PROCESSES:-2}" --dist loadfile --no-loadscope-reorder "$@"
