#!/usr/bin/env bash
# Airflow in an environment of its own (.venv-airflow), so it never constrains the job's dependencies.
#   bash scripts/airflow_env.sh          # create or update it; prints the path of its python
# Versions are pinned: no constraints file is needed (and none could be fetched from GitHub here).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AIRFLOW_VENV="${AIRFLOW_VENV:-$ROOT/.venv-airflow}"
PINS=("apache-airflow==3.3.2" "apache-airflow-providers-apache-spark==6.3.4")
PYTHON=""
for cand in "${PYTHON_BIN:-}" python3.11 python3.12 python3; do
  [ -n "$cand" ] && command -v "$cand" >/dev/null && "$cand" -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null \
    && { PYTHON="$(command -v "$cand")"; break; }
done
[ -n "$PYTHON" ] || { echo "[airflow] ERROR: Python >= 3.10 with venv is needed" >&2; exit 1; }
STAMP="$AIRFLOW_VENV/.pins"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "${PINS[*]}" ]; then
  echo "[airflow] installing ${PINS[*]} into $AIRFLOW_VENV" >&2
  [ -x "$AIRFLOW_VENV/bin/python" ] || "$PYTHON" -m venv "$AIRFLOW_VENV"
  "$AIRFLOW_VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$AIRFLOW_VENV/bin/python" -m pip install -q "${PINS[@]}" >&2
  echo "${PINS[*]}" > "$STAMP"
fi
echo "$AIRFLOW_VENV/bin/python"
