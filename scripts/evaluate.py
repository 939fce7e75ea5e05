"""Precision and recall of a dedup run against the Jaccard oracle (and the generator's truth when given).

    python scripts/evaluate.py --input CORPUS --output JOB_OUTPUT_DIR [--truth TRUTH] [--json FILE]

CORPUS: Parquet (file or directory) or JSON Lines with an id and a text column (and a lang column, else the
language is guessed from the share of Han characters). JOB_OUTPUT_DIR: the job's output (its clusters/ is
read). TRUTH: Parquet with id and cluster (scripts/make_corpus.py writes OUT/truth.parquet). The oracle and
the way pairs are counted are described in simhash_udf/evaluation/quality.py.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import pandas as pd

from simhash_udf.evaluation.outputs import build_oracle, job_labels, load_corpus, truth_labels, truth_table
from simhash_udf.evaluation.quality import found_by_variant


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", required=True, help="the corpus the job read")
    p.add_argument("--output", required=True, help="the job's output directory")
    p.add_argument("--truth", help="Parquet with id and cluster (the generator's truth)")
    p.add_argument("--id-col", default="id")
    p.add_argument("--text-col", default="text")
    p.add_argument("--lang-col", default="lang")
    p.add_argument("--json", help="also write the table as JSON to this file")
    args = p.parse_args(argv)
    start = time.perf_counter()
    docs = load_corpus(args.input, args.id_col, args.text_col, args.lang_col)
    oracle = build_oracle(docs)
    oracle_s = time.perf_counter() - start
    result = oracle.evaluate(job_labels(docs, args.output), truth_labels(docs, args.truth) if args.truth else None)
    print(f"{len(docs):,} documents; oracle: {len(oracle.pos_a):,} pairs with Jaccard >= 0.9 "
          f"(char 5-grams after normalize_text) in {oracle_s:.1f} s; total {time.perf_counter() - start:.1f} s")
    print(result.table())
    if args.truth:
        truth = truth_table(docs, args.truth)
        if "variant" in truth.columns:
            rows = found_by_variant(truth["variant"].to_numpy(), truth["cluster"].to_numpy(), job_labels(docs, args.output),
                                    docs["text"].fillna("").str.len().to_numpy())
            print("\ncopies found per edit kind (truth recall: in the cluster of their original)")
            print(pd.DataFrame(rows).pivot(index="variant", columns="length", values="share").round(3).to_string())
            result.rows.append({"found_by_variant": rows})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result.rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
