#!/usr/bin/env bash
# Airflow in environments of its own, so it never constrains the job's dependencies:
#   bash scripts/airflow_env.sh          # Airflow 3.x in .venv-airflow
#   bash scripts/airflow_env.sh 2        # Airflow 2.x in .venv-airflow2
#   bash scripts/airflow_env.sh 3 2      # both, installed at the same time
# Creates or updates each one and prints the path of its python, one line per version, in the order asked.
# Versions are pinned: no constraints file is needed (and none could be fetched from GitHub here). The same
# Spark provider serves both (6.3.4 accepts apache-airflow >= 2.11 and needs only pyspark-client).
# Installs with uv (from PyPI, unpacked into .venv-uv): with no cache about a minute for both at once, uv included,
# where pip took 4.7 min for Airflow 3 and 8.6 min for Airflow 2 (docs/operations.md, "Airflow"); pip is the fallback.
# With the modules' .pyc (--compile-bytecode): every Airflow command imports thousands of modules, and with
# PYTHONDONTWRITEBYTECODE set Python would compile them from source in each process.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# One at a time (scripts/test.sh starts one in the background, the tests call it too): a second waits, then finds
# the environments installed.
mkdir -p "$ROOT/build"
exec 9>"$ROOT/build/airflow-env.lock"
if command -v flock >/dev/null; then flock 9; fi
UV_PIN="uv==0.13.9"
SPARK_PROVIDER="apache-airflow-providers-apache-spark==6.3.4"
pins_for() {
  case "$1" in
    3) echo "apache-airflow==3.3.2 $SPARK_PROVIDER" ;;
    2) echo "apache-airflow==2.11.2 $SPARK_PROVIDER" ;;
    *) echo "[airflow] ERROR: unknown Airflow major version '$1' (use 2 or 3)" >&2; return 1 ;;
  esac
}
venv_for() {
  case "$1" in
    3) echo "${AIRFLOW_VENV:-$ROOT/.venv-airflow}" ;;
    2) echo "${AIRFLOW2_VENV:-$ROOT/.venv-airflow2}" ;;
  esac
}
say() { echo "[airflow] $*" >&2; }
quiet() { grep -v "is ignored: it is neither a file nor a directory" >&2 || true; }  # pip's noise about absent local indexes

PYTHON=""
for cand in "${PYTHON_BIN:-}" python3.11 python3.12 python3; do
  [ -n "$cand" ] && command -v "$cand" >/dev/null && "$cand" -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null \
    && { PYTHON="$(command -v "$cand")"; break; }
done
[ -n "$PYTHON" ] || { echo "[airflow] ERROR: Python >= 3.10 with venv is needed" >&2; exit 1; }

VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(3)
TODO=()
for v in "${VERSIONS[@]}"; do
  pins="$(pins_for "$v")"
  venv="$(venv_for "$v")"
  [ -f "$venv/.pins" ] && [ "$(cat "$venv/.pins")" = "$pins" ] && [ -x "$venv/bin/python" ] || TODO+=("$v")
done

UV=""
if [ ${#TODO[@]} -gt 0 ]; then
  UV_DIR="$ROOT/.venv-uv"  # uv's wheel unpacked with pip --target (quicker than a venv); a venv where pip can't
  if [ -x "$UV_DIR/bin/uv" ] \
      || PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip install -q --target "$UV_DIR" "$UV_PIN" 2>&1 | quiet \
      || { rm -rf "$UV_DIR" && "$PYTHON" -m venv "$UV_DIR" && "$UV_DIR/bin/python" -m pip install -q "$UV_PIN" 2>&1 | quiet; }; then
    [ -x "$UV_DIR/bin/uv" ] && UV="$UV_DIR/bin/uv"
  fi
  [ -n "$UV" ] || say "uv could not be installed; installing with pip (slower)"
fi

install() {  # install Airflow major version $1 into its venv
  local v="$1" pins venv start
  pins="$(pins_for "$v")"
  venv="$(venv_for "$v")"
  start=$SECONDS
  say "installing $pins into $venv"
  rm -f "$venv/.pins"
  # shellcheck disable=SC2086
  if [ -n "$UV" ] && { [ -x "$venv/bin/python" ] || UV_PYTHON_DOWNLOADS=never "$UV" venv -q -p "$PYTHON" "$venv"; } \
      && UV_PYTHON_DOWNLOADS=never "$UV" pip install -q --compile-bytecode -p "$venv/bin/python" $pins; then
    :
  else
    [ -x "$venv/bin/python" ] && "$venv/bin/python" -m pip --version >/dev/null 2>&1 || { rm -rf "$venv"; "$PYTHON" -m venv "$venv"; }
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install -q $pins 2>&1 | quiet || { say "ERROR: pip install $pins failed"; return 1; }
  fi
  echo "$pins" > "$venv/.pins"
  say "Airflow $v ready in $((SECONDS - start)) s"
}

pids=()
for v in "${TODO[@]}"; do install "$v" & pids+=($!); done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
[ "$status" = 0 ] || exit 1
for v in "${VERSIONS[@]}"; do echo "$(venv_for "$v")/bin/python"; done
