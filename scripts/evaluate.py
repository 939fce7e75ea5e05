"""Precision and recall of a dedup run against the Jaccard oracle (and the generator's truth when given).

    python scripts/evaluate.py --input CORPUS --output JOB_OUTPUT_DIR [--truth TRUTH] [--json FILE]

CORPUS: Parquet (file or directory) or JSON Lines with an id and a text column (and a lang column, else the
language is guessed from the share of Han characters). JOB_OUTPUT_DIR: the job's output (its clusters/ is
read). TRUTH: Parquet with id and cluster (scripts/make_corpus.py writes OUT/truth.parquet); with its variant
column the copies found per edit kind are printed, with its related column the negatives removed per kind
(pages merged with a page they are no copy of, simhash_udf/evaluation/corpus.py). The oracle and the way pairs
are counted are described in simhash_udf/evaluation/quality.py.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import pandas as pd

from simhash_udf.evaluation.outputs import (
    build_oracle,
    job_cluster_ids,
    kept_positions,
    load_corpus,
    truth_labels,
    truth_table,
)
from simhash_udf.evaluation.quality import found_by_variant, length_bucket, negatives_joined, unlike_kept


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
    cluster_ids = job_cluster_ids(docs, args.output)  # read once: the labels and the kept pages come from it
    labels = pd.factorize(cluster_ids)[0]
    result = oracle.evaluate(labels, truth_labels(docs, args.truth) if args.truth else None)
    print(f"{len(docs):,} documents; oracle: {len(oracle.pos_a):,} pairs with Jaccard >= 0.9 "
          f"(char 5-grams after normalize_text) in {oracle_s:.1f} s; total {time.perf_counter() - start:.1f} s")
    print(result.table())
    print_removed(result.rows, oracle, kept_positions(docs, cluster_ids))
    if args.truth:
        print_truth_tables(result.rows, truth_table(docs, args.truth), labels, docs)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result.rows, fh, indent=1)
    return 0


def print_removed(out: list, oracle, kept) -> None:
    """The pages removed, and those removed for a kept page they are not like (the job's promise, per page:
    quality.unlike_kept), by the removed page's length; appended to `out` (the JSON rows)."""
    removed = kept != range(len(kept))
    unlike = unlike_kept(oracle.sets, oracle.lengths, kept)
    bucket = pd.Series([length_bucket(n) for n in oracle.lengths])
    table = pd.DataFrame({"removed": removed, "unlike_kept": unlike}).groupby(bucket).sum()
    table.loc["all"] = table.sum()
    print("\nremoved pages, and those not like the page kept for them (5-gram Jaccard < 0.5, and neither 0.9 "
          "inside the other within 1.6x its characters; should be 0)")
    print(table.to_string())
    out.append({"removed_unlike_kept": {k: {c: int(v) for c, v in r.items()} for k, r in table.iterrows()}})


def print_truth_tables(out: list, truth: pd.DataFrame, labels, docs: pd.DataFrame) -> None:
    """The copies found per edit kind and length (and over all lengths), and the negatives removed per kind;
    both appended to `out` (the JSON rows)."""
    if "variant" not in truth.columns:
        return
    variant = truth["variant"].to_numpy()
    rows = found_by_variant(variant, truth["cluster"].to_numpy(), labels, docs["text"].fillna("").str.len().to_numpy())
    table = pd.DataFrame(rows)
    shares = table.pivot(index="variant", columns="length", values="share")
    totals = table.groupby("variant")[["copies", "found"]].sum()
    shares["all"], shares["copies"] = totals["found"] / totals["copies"], totals["copies"]
    for lang in sorted(docs["lang"].dropna().unique()) if "lang" in docs.columns else []:
        mine = (docs["lang"] == lang).to_numpy()  # a copy has its original's language
        by_lang = pd.DataFrame(found_by_variant(variant[mine], truth["cluster"].to_numpy()[mine], labels[mine],
                                                docs["text"].fillna("").str.len().to_numpy()[mine]))
        if len(by_lang):
            sums = by_lang.groupby("variant")[["copies", "found"]].sum()
            shares[f"{lang} (all lengths)"] = sums["found"] / sums["copies"]
    print("\ncopies found per edit kind (truth recall: in the cluster of their original)")
    print(shares.round(3).to_string())
    out.append({"found_by_variant": rows})
    if "related" in truth.columns:
        negatives = negatives_joined(variant, truth["id"].to_numpy(), truth["related"].to_numpy(dtype=float), labels)
        print("\nnegatives removed (merged with the page they are no copy of; should be 0)")
        print(pd.DataFrame(negatives, columns=["variant", "negatives", "removed"]).to_string(index=False))
        out.append({"negatives_removed": negatives})


if __name__ == "__main__":
    sys.exit(main())
