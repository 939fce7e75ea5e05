"""spark-submit entry point: spark-submit jobs/dedup_job.py --input PATH --output DIR [options]"""
import os
import sys


def installed_pyspark_first() -> None:
    """Under the spark-submit of a pip-installed pyspark, SPARK_HOME is that package and PYTHONPATH puts its
    python/lib/pyspark.zip (and py4j's zip) before site-packages: the same modules, but a zip holds no compiled
    ones, so the driver compiled all of pyspark it imports at every run (~0.4 s). When this Python's own path holds
    that very package, the zips go last and the package is imported with its compiled modules. A Spark
    distribution (SPARK_HOME not a Python package) or another Python keeps the zips first."""
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


installed_pyspark_first()

try:
    import simhash_udf  # noqa: F401  (installed, or shipped with --py-files)
except ImportError:  # running from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simhash_udf.job.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(script=os.path.abspath(__file__)))
