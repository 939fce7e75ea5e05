"""spark-submit entry point: spark-submit jobs/dedup_job.py --input PATH --output DIR [options]"""
import os
import sys

try:
    import simhash_udf  # noqa: F401  (installed, or shipped with --py-files)
except ImportError:  # running from a checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simhash_udf.job.cli import main

if __name__ == "__main__":
    sys.exit(main(script=os.path.abspath(__file__)))
