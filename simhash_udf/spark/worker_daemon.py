"""The Python workers' daemon of a local run (spark.python.daemon.module): pyspark's own daemon, imported from the
installed pyspark rather than from the zip of the same pyspark that Spark puts first on the workers' PYTHONPATH.

A zip holds no compiled modules, so the daemon and each worker compiled what they import of pyspark at every run
(0.7 s against 0.26 s for the daemon's and a worker's imports, here). The path is reordered only where the zip is
that very package (installed_pyspark_first); this module imports nothing else before it, so nothing of pyspark is
imported from the zip. Used only where the workers can import this package at their start (daemon_conf)."""
from __future__ import annotations

import os
import sys

MODULE = "simhash_udf.spark.worker_daemon"


def installed_pyspark_first() -> None:
    """Under a pip-installed pyspark, SPARK_HOME is that package and PYTHONPATH puts its python/lib/pyspark.zip
    (and py4j's zip) before site-packages: the same modules, but a zip holds no compiled ones. When this Python's
    own path holds that very package, the zips go last and the package is imported with its compiled modules. A
    Spark distribution (SPARK_HOME not a Python package) or another Python keeps the zips first."""
    home = os.environ.get("SPARK_HOME", "")
    if not os.path.isfile(os.path.join(home, "__init__.py")):
        return
    own = {os.path.realpath(p) for p in sys.path if p}
    if os.path.realpath(os.path.dirname(home)) not in own:
        return
    lib = os.path.realpath(os.path.join(home, "python", "lib"))
    zips = [p for p in sys.path if p.endswith(".zip") and os.path.realpath(os.path.dirname(p)) == lib]
    for path in zips:
        sys.path.remove(path)
        sys.path.append(path)


def daemon_conf(master: str, worker_python: str) -> dict[str, str]:
    """{"spark.python.daemon.module": MODULE} for a local master whose workers run this very interpreter (the same
    path, not merely the same binary: a virtualenv's python links to its base) and find this package installed in
    it (its distribution's metadata, as pip or an editable install leaves it): they import it before any task, when
    Spark's per-task path additions (--py-files) are not there yet. Otherwise nothing (Spark's daemon)."""
    if not master.startswith("local") or os.path.abspath(worker_python) != os.path.abspath(sys.executable):
        return {}
    from importlib import metadata, util

    try:
        metadata.distribution("simhash-dedup")
    except metadata.PackageNotFoundError:
        return {}
    spec = util.find_spec("simhash_udf")
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):  # e.g. a package inside a zip
        return {}
    return {"spark.python.daemon.module": MODULE}


if __name__ == "__main__":
    installed_pyspark_first()
    from pyspark.daemon import manager

    manager()
