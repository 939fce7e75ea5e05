"""Related pages against brute force on an evaluation corpus (scripts/make_corpus.py's docs.parquet): the job's
related lists (--related N at --related-distance D) beside the exact top N of every kept page within D,
outside its own cluster, counted over all kept pages in numpy; and the checks that every listed pair is within
D, no page lists itself and no pair is inside one cluster.

    python scripts/make_corpus.py --out work/corpus-gen --n 10000 --seed 1
    python scripts/bench/related_recall.py --corpus work/corpus-gen --n 10 --distance 14
"""
from __future__ import annotations

import argparse
import os

import numpy as np
import pandas as pd

from simhash_udf.core.related import hamming
from simhash_udf.evaluation.benchmark import Tables, add_json_option, bench_session
from simhash_udf.job.api import related_pages


def exact_top(kept: pd.DataFrame, n: int, distance: int) -> dict[int, list[int]]:
    """Every kept page's exact top n within distance, other clusters only, by (distance, id)."""
    fps, ids, clusters = (kept[c].to_numpy() for c in ("fingerprint", "id", "cluster_id"))
    out = {}
    for i in range(len(kept)):
        d = hamming(fps, fps[i])
        near = np.flatnonzero((d <= distance) & (clusters != clusters[i]))
        order = np.lexsort((ids[near], d[near]))
        out[int(ids[i])] = ids[near][order][:n].tolist()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="a directory with docs.parquet")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--distance", type=int, default=14)
    add_json_option(ap)
    args = ap.parse_args()
    tables = Tables(args.json)
    spark = bench_session("bench-related-recall")
    docs = spark.read.parquet(os.path.join(args.corpus, "docs.parquet")).select("id", "text")
    result = related_pages(docs, n=args.n, distance=args.distance)
    # pages without a fingerprint (no text) are in no related list; a null would make the column float
    kept = (result.clusters.where("not is_duplicate and fingerprint is not null")
            .select("id", "fingerprint", "cluster_id").toPandas())
    listed = result.related.select("id", "related_id", "distance", "rank").toPandas()
    plan = result.report["related"]["plan"]
    result.unpersist()
    truth = exact_top(kept, args.n, args.distance)
    fp, cluster = kept.set_index("id")["fingerprint"], kept.set_index("id")["cluster_id"]
    true_distance = hamming(listed["id"].map(fp).to_numpy(), listed["related_id"].map(fp).to_numpy())
    found = {int(q): g.sort_values("rank")["related_id"].tolist() for q, g in listed.groupby("id")}
    want = sum(len(v) for v in truth.values())
    hit = sum(len(set(found.get(q, [])) & set(v)) for q, v in truth.items())
    rows = [["kept pages", len(kept)], ["rows listed", len(listed)], ["exact top-N rows", want],
            ["recall of the exact top N", hit / want if want else 1.0],
            ["rows beyond D or with a wrong distance",
             int(((true_distance > args.distance) | (true_distance != listed["distance"].to_numpy())).sum())],
            ["self pairs", int((listed["id"] == listed["related_id"]).sum())],
            ["pairs inside one cluster", int((listed["id"].map(cluster) == listed["related_id"].map(cluster)).sum())],
            ["pages with a related page", len(found)]]
    tables.table(["", "value"], rows, [None, "{:.4g}"],
                 title=f"{args.corpus}: N = {args.n}, D = {args.distance}, {plan['kind']} plan, recall at D "
                       f"{plan['expected_recall']:.3f}")
    tables.write()


if __name__ == "__main__":
    main()
