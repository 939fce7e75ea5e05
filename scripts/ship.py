"""Everything spark-submit ships to a cluster, built in one step into dist/:

    bash scripts/ship.sh [--dist DIR] [--no-env] [--python-prefix PREFIX]   # (sets up .venv, then runs this)

  dist/simhash_udf.zip  the job's code, for --py-files (scripts/build_pyfiles.py; reproducible)
  dist/env.tar.gz       the job's third-party packages (jieba, rjieba, mmh3, numpy, pandas, pyarrow, ...) in a
                        virtualenv packed with venv-pack, for --archives dist/env.tar.gz#env together with
                        --conf spark.pyspark.python=./env/bin/python

pyspark is not in the packed environment: every Spark installation puts its own pyspark on its Python workers'
path ($SPARK_HOME/python/lib/pyspark.zip), the version that matches its JVM. venv-pack does not copy the Python
interpreter: ./env/bin/python links to the interpreter this environment was built with (or to
PREFIX/bin/python with --python-prefix), which the cluster's machines must have at that path, same minor version.

The packed environment depends only on the dependency list of pyproject.toml and the Python version, so it is
rebuilt only when one of them changes (its key is kept beside it, in env.tar.gz.key; the virtualenv is built in
build/); the zip is rebuilt every time (it takes a fraction of a second). Two builds at the same time wait for
each other (a lock in build/). Prints the paths of what it wrote, one a line.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib

from build_pyfiles import build as build_zip  # a sibling script: run as a script, its folder is on the path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST = os.path.join(ROOT, "dist")
BUILD = os.path.join(ROOT, "build")
VENV_PACK = "venv-pack==0.2.0"
# Spark brings its own pyspark to every Python worker; one from the pack would shadow it, at another version
LEFT_OUT = {"pyspark"}


def runtime_requirements() -> list[str]:
    """The job's dependencies from pyproject.toml, minus those the cluster has already (LEFT_OUT)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    return [d for d in deps if re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower() not in LEFT_OUT]


def env_key(requirements: list[str], python_prefix: str | None) -> str:
    """What the packed environment depends on: the requirements, this Python's version, venv-pack's and the
    interpreter path the pack links to."""
    parts = [*sorted(requirements), sys.version.split()[0], VENV_PACK, python_prefix or sys.base_prefix]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _run(cmd: list[str], **kw) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"[ship] ERROR: {' '.join(cmd[:4])} ... exited {proc.returncode}:\n{proc.stderr[-3000:]}")


def build_env(out: str, python_prefix: str | None = None) -> str:
    """out (a .tar.gz): a fresh virtualenv with runtime_requirements(), packed by venv-pack; kept as it is when
    its key (env_key) has not changed."""
    requirements = runtime_requirements()
    key = env_key(requirements, python_prefix)
    key_file = out + ".key"
    if os.path.exists(out) and os.path.exists(key_file) and open(key_file).read().strip() == key:
        return out
    venv_dir, tool_dir = os.path.join(BUILD, "env"), os.path.join(BUILD, "venv-pack")
    shutil.rmtree(venv_dir, ignore_errors=True)  # build/ holds only what this script makes
    print(f"[ship] building the packed environment {out} (once per dependency change; about a minute)",
          file=sys.stderr)
    _run([sys.executable, "-m", "venv", venv_dir])
    # --no-compile: the executors write the .pyc of the modules they import, where they unpacked the archive
    _run([os.path.join(venv_dir, "bin", "python"), "-m", "pip", "install", "-q", "--no-compile",
          "--disable-pip-version-check", *requirements])
    if not os.path.isdir(os.path.join(tool_dir, "venv_pack")):
        _run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", tool_dir,
              VENV_PACK])
    tmp = os.path.join(os.path.dirname(out), ".packing-" + os.path.basename(out))  # moved into place when whole
    pack = [sys.executable, "-m", "venv_pack", "--prefix", venv_dir, "--output", tmp, "--format", "tar.gz",
            "--force", "--quiet"]
    _run(pack + (["--python-prefix", python_prefix] if python_prefix else []),
         env=dict(os.environ, PYTHONPATH=tool_dir))
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    with open(key_file, "w") as f:
        f.write(key + "\n")
    return out


def ship(dist: str = DIST, env: bool = True, python_prefix: str | None = None) -> dict[str, str]:
    """Build the zip and (env=True) the packed environment into dist; {"py_files": ..., "archive": ...}."""
    os.makedirs(dist, exist_ok=True)
    os.makedirs(BUILD, exist_ok=True)
    with open(os.path.join(BUILD, "ship.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another build (a second test process) finishes first
        built = {"py_files": build_zip(os.path.join(dist, "simhash_udf.zip"))}
        if env:
            built["archive"] = build_env(os.path.join(dist, "env.tar.gz"), python_prefix)
    return built


def main() -> None:
    ap = argparse.ArgumentParser(prog="scripts/ship.sh", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dist", default=DIST, help="where to write simhash_udf.zip and env.tar.gz (default: dist/)")
    ap.add_argument("--no-env", action="store_true",
                    help="the zip only (executors whose image has the packages already)")
    ap.add_argument("--python-prefix",
                    help="the prefix of Python 3.x on the cluster's machines, when it is not where this one is "
                         f"({sys.base_prefix})")
    args = ap.parse_args()
    for path in ship(os.path.abspath(args.dist), not args.no_env, args.python_prefix).values():
        print(path)


if __name__ == "__main__":
    main()
