"""Host-repeated lines (CCNet-style boilerplate lines) in a corpus of make_corpus.py, and the corpus without
them: what dropping a site's frame before fingerprinting would give (issue 58 item 4).

    python scripts/bench/host_lines.py --corpus work/man10k --out work/man10k-lines [--min-pages 3]
        [--scope host|corpus] [--edges-only]
    python -m simhash_udf.job.cli --input work/man10k-lines/docs.parquet --output OUT --sentence-keys 3 \\
        --min-containment 0.9
    python scripts/evaluate.py --input work/man10k/docs.parquet --output OUT --truth work/man10k/truth.parquet

Reads CORPUS/docs.parquet (id, text, lang, host) and CORPUS/truth.parquet; writes OUT/docs.parquet with each
page's host-repeated lines removed (simhash_udf/evaluation/host_lines.py: a normalised line on at least
--min-pages distinct pages of the host; a page made only of such lines is kept whole) and prints, per truth
variant, the pages that lost lines and the share of their characters removed; for framed copies also the
share of the frame removed. `--scope corpus` counts lines over the whole corpus as one host (CCNet's shard
statistics, no host needed). The job is then run on OUT/docs.parquet and scored against the corpus's own
texts (the oracle reads the unstripped pages).
"""
from __future__ import annotations

import argparse
import os
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import functions as F

from simhash_udf.evaluation.host_lines import without_host_repeated_lines
from simhash_udf.spark.session import get_spark


def variant_table(result: pd.DataFrame, docs: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    """Per truth variant: pages, the share of pages that lost a line, the share of characters removed; for
    framed copies the share of the frame removed (the frame: the copy's characters beyond its original's)."""
    t = truth.merge(result, on="id").merge(docs[["id", "text"]], on="id")
    original_chars = t.set_index("id")["chars"]
    t["frame_chars"] = (t["chars"] - t["cluster"].map(original_chars)).where(t["variant"] == "frame")
    rows = []
    for variant, g in t.groupby("variant"):
        row = {"variant": variant, "pages": len(g), "pages_with_lines_removed": round((g["removed_chars"] > 0).mean(), 3),
               "chars_removed": round(g["removed_chars"].sum() / max(1, g["chars"].sum()), 3)}
        if variant == "frame":
            row["frame_removed"] = round(g["removed_chars"].sum() / max(1, g["frame_chars"].sum()), 3)
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="make_corpus.py's output directory")
    p.add_argument("--out", required=True, help="writes OUT/docs.parquet (the pages without host-repeated lines)")
    p.add_argument("--min-pages", type=int, default=3, help="a line on this many pages of a host is dropped (3)")
    p.add_argument("--scope", choices=("host", "corpus"), default="host")
    p.add_argument("--edges-only", action="store_true",
                   help="drop only the runs of host-repeated lines at a page's top and bottom (where a frame is)")
    args = p.parse_args(argv)
    docs = pq.read_table(os.path.join(args.corpus, "docs.parquet")).to_pandas()
    truth = pq.read_table(os.path.join(args.corpus, "truth.parquet")).to_pandas()
    if "host" not in docs.columns:
        raise SystemExit(f"{args.corpus}/docs.parquet has no host column: write it again with scripts/make_corpus.py")
    spark = get_spark("host-lines")
    pages = spark.createDataFrame(docs[["id", "host", "text"]])
    if args.scope == "corpus":
        pages = pages.withColumn("host", F.lit("corpus"))
    result = without_host_repeated_lines(pages, args.min_pages, edges_only=args.edges_only).toPandas()
    spark.stop()
    print(f"{len(docs):,} pages, {docs['host'].nunique():,} hosts (scope {args.scope}); lines on >= "
          f"{args.min_pages} pages of a host removed from {int((result['removed_chars'] > 0).sum()):,} pages, "
          f"{result['removed_chars'].sum() / result['chars'].sum():.3f} of all characters")
    print(variant_table(result, docs, truth).to_string(index=False))
    out = docs.drop(columns=["text"]).merge(result[["id", "text"]], on="id").sort_values("id")
    os.makedirs(args.out, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(out[["id", "text", "lang", "host"]], preserve_index=False),
                   os.path.join(args.out, "docs.parquet"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
