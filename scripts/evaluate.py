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
import os
import sys
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simhash_udf.evaluation.quality import Oracle, found_by_variant  # noqa: E402


def read_table(path: str, columns: list[str] | None = None) -> pd.DataFrame:
    if path.endswith((".jsonl", ".json")):
        df = pd.read_json(path, lines=True, dtype=False)
        return df[[c for c in columns if c in df.columns]] if columns else df
    schema = pq.read_schema(path) if os.path.isfile(path) else None
    names = schema.names if schema is not None else pq.ParquetDataset(path).schema.names
    return pq.read_table(path, columns=[c for c in (columns or names) if c in names]).to_pandas()


def load_corpus(path: str, id_col: str = "id", text_col: str = "text", lang_col: str = "lang") -> pd.DataFrame:
    df = read_table(path, [id_col, text_col, lang_col])
    missing = {id_col, text_col} - set(df.columns)
    if missing:
        raise SystemExit(f"{path}: no column {', '.join(sorted(missing))} (use --id-col / --text-col)")
    return df.rename(columns={id_col: "id", text_col: "text", lang_col: "lang"}).reset_index(drop=True)


def job_labels(docs: pd.DataFrame, output_dir: str) -> np.ndarray:
    """The job's cluster_id of every corpus document, in corpus order (every document must be there)."""
    clusters = read_table(os.path.join(output_dir, "clusters"), ["id", "cluster_id"])
    merged = docs[["id"]].merge(clusters, on="id", how="left", validate="one_to_one")
    if merged["cluster_id"].isna().any():
        raise SystemExit(f"{output_dir}/clusters lacks {int(merged['cluster_id'].isna().sum())} corpus documents")
    return pd.factorize(merged["cluster_id"])[0]


def truth_labels(docs: pd.DataFrame, truth_path: str) -> np.ndarray:
    return truth_table(docs, truth_path)["cluster"].to_numpy()


def truth_table(docs: pd.DataFrame, truth_path: str) -> pd.DataFrame:
    """id, cluster (and variant when the truth has it) of every corpus document, in corpus order."""
    truth = read_table(truth_path, ["id", "cluster", "variant"])
    merged = docs[["id"]].merge(truth, on="id", how="left", validate="one_to_one")
    if merged["cluster"].isna().any():
        raise SystemExit(f"{truth_path} lacks {int(merged['cluster'].isna().sum())} corpus documents")
    return merged


def build_oracle(docs: pd.DataFrame) -> Oracle:
    langs = docs["lang"].tolist() if "lang" in docs.columns else None
    return Oracle(docs["text"].tolist(), langs)


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
