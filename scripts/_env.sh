# Sourced by demo.sh and test.sh: makes a fresh machine ready with no manual step.
#  - Python >= 3.11 and a virtualenv in .venv with the project installed (editable, with the dev extra)
#  - a Java that Spark 4 accepts (17 or 21): the system one, or Debian's openjdk-17-jre-headless when root
#  - SPARK_LOCAL_IP, JAVA_HOME, PYSPARK_PYTHON for local runs
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export SPARK_LOCAL_IP=127.0.0.1
say() { echo "[setup] $*" >&2; }
die() { echo "[setup] ERROR: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }
apt_install() {
  is_root && command -v apt-get >/dev/null || return 1
  say "installing $* with apt-get"
  [ -n "${_APT_UPDATED:-}" ] || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1; _APT_UPDATED=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

# --- Python -------------------------------------------------------------------------------------
py_ok() { "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
PYTHON=""
for cand in "${PYTHON_BIN:-}" python3.11 python3.12 python3.13 python3; do
  [ -n "$cand" ] && command -v "$cand" >/dev/null && py_ok "$cand" && { PYTHON="$(command -v "$cand")"; break; }
done
if [ -z "$PYTHON" ]; then
  apt_install python3 python3-venv || true
  py_ok python3 && PYTHON="$(command -v python3)" || die "Python >= 3.11 with venv is needed: install python3.11 and python3.11-venv"
fi

# --- virtualenv with the project ------------------------------------------------------------------
VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $PYTHON"
  "$PYTHON" -m venv "$VENV" || die "could not create a virtualenv with $PYTHON"
fi
STAMP="$VENV/.simhash-dedup-installed"
WANT="$(cat pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  say "installing the project and its dependencies into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  # --no-compile, then compileall on both cores: pip compiles the ~4,800 modules on one. The .pyc are needed: with
  # PYTHONDONTWRITEBYTECODE set (as on the CI machines) Python never writes them, and every Python process (a
  # Spark worker, a spark-submit's driver) would compile what it imports from source (docs/performance.md)
  "$VENV/bin/python" -m pip install -q --no-compile -e ".[dev]" >&2 || die "pip install failed (see above)"
  "$VENV/bin/python" -m compileall -q -j 0 "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
    simhash_udf jobs >/dev/null 2>&1 || say "some installed modules did not compile (they are compiled when imported)"
  echo "$WANT" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"

# --- Java 17 or 21 ------------------------------------------------------------------------------------
java_major() {  # prints the major version of the java binary $1
  "$1" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)\(\.[0-9]*\)*.*/\1/p' | head -n1
}
find_java() {
  local j major
  for j in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
    [ -n "$j" ] && [ -x "$j" ] || continue
    major="$(java_major "$j")"
    if [ "$major" = 17 ] || [ "$major" = 21 ]; then readlink -f "$j"; return 0; fi
  done
  return 1
}
JAVA_BIN="$(find_java || true)"
if [ -z "$JAVA_BIN" ]; then
  apt_install openjdk-17-jre-headless || true
  JAVA_BIN="$(find_java || true)"
fi
[ -n "$JAVA_BIN" ] || die "Spark 4 needs Java 17 or 21 and none was found or could be installed: install OpenJDK 17 (e.g. 'apt-get install openjdk-17-jre-headless') and set JAVA_HOME"
export JAVA_HOME="$(dirname "$(dirname "$JAVA_BIN")")"
export PATH="$JAVA_HOME/bin:$PATH"
say "python $("$VENV/bin/python" -V 2>&1 | cut -d' ' -f2), java $(java_major "$JAVA_BIN") at $JAVA_HOME"
