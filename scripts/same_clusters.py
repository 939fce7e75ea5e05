"""Are two runs' clusters the same? Compares clusters/ (id, cluster_id, is_duplicate) of two output
directories row for row; exits 1 when they differ. Used to check that a refactoring changes no result:

    PYTHONPATH=<old checkout> python -m simhash_udf.job.cli --input IN --output /tmp/a
    python -m simhash_udf.job.cli --input IN --output /tmp/b
    python scripts/same_clusters.py /tmp/a /tmp/b
"""
from __future__ import annotations

import sys

from simhash_udf.evaluation.outputs import cluster_rows


def main(a: str, b: str) -> int:
    rows_a, rows_b = cluster_rows(a), cluster_rows(b)
    dups = sum(1 for r in rows_b if r[2])
    print(f"{len(rows_a):,} and {len(rows_b):,} rows ({dups:,} duplicates in the second); "
          f"only in the first {len(rows_a - rows_b):,}, only in the second {len(rows_b - rows_a):,}")
    return 0 if rows_a == rows_b else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/same_clusters.py OUTPUT_A OUTPUT_B")
    sys.exit(main(sys.argv[1], sys.argv[2]))
