"""Command line: `spark-submit jobs/dedup_job.py ...`, `python -m simhash_udf.cli ...` or `simhash-dedup ...`."""
from __future__ import annotations

import json
import logging
import sys

from .config import load_config
from .errors import DedupError


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        cfg = load_config(argv)
    except DedupError as exc:
        print(f"simhash-dedup: error: {exc}", file=sys.stderr)
        return 2
    from .pipeline import run
    from .session import get_spark

    spark = get_spark()
    try:
        report = run(cfg, spark)
    except DedupError as exc:
        print(f"simhash-dedup: error: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    summary = {k: report[k] for k in ("input_rows", "kept", "duplicates", "exact_duplicates", "near_duplicates")}
    print("simhash-dedup: done " + json.dumps(summary) + f" -> {cfg.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
