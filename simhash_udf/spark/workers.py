"""Whether Spark's Python workers can import this package, asked before the API's first Spark job.

A session started by `SparkSession.builder` without PYSPARK_PYTHON runs its Python workers with `python3` from
PATH, which (without an activated virtualenv) is not the interpreter that has this package: the first job then
fails inside a worker with `ModuleNotFoundError: No module named 'simhash_udf'` under a long Java stack trace.
In local mode the workers run on this machine, so the same import can be tried here first, in a process started
as Spark starts a worker (its interpreter, environment and PYTHONPATH), and a failure becomes a one-line
DedupError with the fix. On a cluster the workers are elsewhere and only a job could ask them: the code and its
environment are shipped there as docs/operations.md describes."""
from __future__ import annotations

import os
import subprocess
import sys

from pyspark import SparkContext, SparkFiles

from ..errors import DedupError

# The module a worker imports to run the fingerprint pass (it pulls in pyspark, numpy, pyarrow and the tokenizers)
WORKER_MODULE = "simhash_udf.spark.fingerprint"
# (interpreter, PYTHONPATH) pairs that imported WORKER_MODULE in this process: asked once each
_IMPORTABLE: set[tuple[str, str]] = set()


def worker_environment(sc: SparkContext) -> dict[str, str]:
    """The environment Spark gives a local Python worker: this process's, the context's executor environment,
    and a PYTHONPATH of Spark's own Python (pyspark.zip, py4j) before the context's and this process's."""
    env = {**os.environ, **sc.environment}
    spark_path = sc._jvm.org.apache.spark.api.python.PythonUtils.sparkPythonPath()
    includes = [os.path.join(SparkFiles.getRootDirectory(), name) for name in sc._python_includes or []]
    parts = [spark_path, *includes, sc.environment.get("PYTHONPATH", ""), os.environ.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env


def import_failure(python: str, env: dict[str, str]) -> str | None:
    """The last line of the error of `python -c 'import WORKER_MODULE'` in env, or None when it imports."""
    try:
        proc = subprocess.run([python, "-c", f"import {WORKER_MODULE}"], env=env, capture_output=True, text=True,
                              timeout=300)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror}"
    except subprocess.TimeoutExpired:
        return None  # a slow start is not a missing package: the job goes on and shows what happens
    if proc.returncode == 0:
        return None
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit status {proc.returncode}"


def check_worker_python(sc: SparkContext, who: str) -> None:
    """Raise a one-line DedupError naming the fix when the session's local Python workers cannot import this
    package; nothing on a cluster (see the module's docstring) or once the same interpreter has imported it."""
    if not sc.master.startswith("local"):
        return
    python, env = sc.pythonExec, worker_environment(sc)
    key = (python, env["PYTHONPATH"])
    if key in _IMPORTABLE:
        return
    failure = import_failure(python, env)
    if failure is not None:
        source = "PYSPARK_PYTHON" if "PYSPARK_PYTHON" in os.environ else "PYSPARK_PYTHON unset"
        raise DedupError(f"{who}: Spark's Python workers run {python!r} ({source}), which cannot import "
                         f"{WORKER_MODULE} ({failure}): set PYSPARK_PYTHON={sys.executable} before the session "
                         "starts, or start it with simhash_udf.get_spark()")
    _IMPORTABLE.add(key)
