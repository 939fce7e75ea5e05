"""This environment's class archive of the driver's JVM (simhash_udf/spark/class_archive.py), written by a run of the
job (jobs/dedup_job.py of this checkout) on a small sample, unless one with this Java's and these jars' stamp is there.
scripts/ship.sh runs it once per installation; a failure leaves the job as fast as it was without one.

    python scripts/class_archive.py [--force]
"""
from __future__ import annotations

import os
import sys
import tempfile

import pandas as pd

from simhash_udf.evaluation.sample_corpus import make_sample_corpus
from simhash_udf.spark.class_archive import ARCHIVE_ENV, archive_path, usable_archive, write_archive

JOB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "jobs", "dedup_job.py")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = archive_path()
    if not path:
        print(f"class archive: {ARCHIVE_ENV} is empty, none written")
        return 0
    if "--force" not in argv and usable_archive():
        print(f"class archive: {path} is up to date")
        return 0
    with tempfile.TemporaryDirectory(prefix="simhash-dedup-archive-") as work:
        sample = os.path.join(work, "sample.parquet")
        pd.DataFrame(make_sample_corpus(100, seed=5)).to_parquet(sample)
        try:
            write_archive([JOB, "--input", sample, "--output", os.path.join(work, "out")], path)
        except RuntimeError as exc:  # speed only: the job runs without it
            print(f"class archive: not written: {exc}", file=sys.stderr)
            return 0
    print(f"class archive: {path} written ({os.path.getsize(path) / 2**20:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
