"""spark-submit entry point: spark-submit jobs/dedup_job.py --input PATH --output DIR [options]"""
import os
import sys

try:
    import simhash_udf  # noqa: F401  (installed, or shipped with --py-files; imports no pyspark)
except ImportError:  # running from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Under the spark-submit of a pip-installed pyspark the zips of that same pyspark come first on the path: imported from
# them, the driver compiled all of pyspark it imports at every run (~0.4 s). The installed package goes first.
from simhash_udf.spark.worker_daemon import installed_pyspark_first  # noqa: E402

installed_pyspark_first()

from simhash_udf.job.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(script=os.path.abspath(__file__)))
