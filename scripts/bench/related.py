"""Related pages (--related N): the exact multi-index search against Spark ML's BucketedRandomProjectionLSH on the
same fingerprints, side by side in one session, each one's recall of the exact top N measured by brute force.

Fingerprints: uniformly random 64-bit values, plus topic families (a share of the pages sit in groups of 2-6
whose members are 0..D bits from the group's first page), so pages have true neighbours within D besides the
chance ones.

  a. ours: spark.related.related_pairs (the stage's search: the plan chosen from N, exact up to the planner's
     budget, approximate beyond; the run search, and with --join also the join search beside it);
  b. BucketedRandomProjectionLSH over the 64 bits as 0/1 vectors (Euclidean distance squared = Hamming
     distance), approxSimilarityJoin(threshold = sqrt(D)) of the pages with themselves, self pairs dropped,
     each page's top N by (distance, id) as ours;
  c. the whole near-duplicate step (near_duplicates on the fingerprints) with and without related=N: the
     added time of the related stage as a ratio.

Recall: of each sampled page's exact top N within D (brute force, numpy, over all pages), the share each
method lists for it.

    python scripts/bench/related.py --pages 20000 --sample 2000
    python scripts/bench/related.py --pages 200000 --plan-pages 1000000 --core --skip-brp --skip-step
"""
from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd
from pyspark.ml.feature import BucketedRandomProjectionLSH
from pyspark.ml.functions import array_to_vector
from pyspark.sql import Window
from pyspark.sql import functions as F

from simhash_udf.core.related import chance_neighbours, hamming, plan_related
from simhash_udf.core.related import related_pages as core_related_pages
from simhash_udf.core.signature import SignatureSpec
from simhash_udf.evaluation.benchmark import Tables, add_json_option, bench_session, best, take_turns
from simhash_udf.job.api import near_duplicates
from simhash_udf.spark.related import related_pairs


def topic_fingerprints(n: int, distance: int, topic_share: float, seed: int) -> np.ndarray:
    """n random int64 fingerprints; topic_share of them in families of 2-6 within `distance` of the first."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=n, dtype=np.int64, endpoint=True)
    u = fps.view(np.uint64)
    i = 0
    while i < int(n * topic_share):
        size = int(rng.integers(2, 7))
        for j in range(i + 1, min(i + size, n)):
            flips = rng.choice(64, size=int(rng.integers(0, distance + 1)), replace=False)
            u[j] = u[i] ^ np.uint64(sum(1 << int(b) for b in flips))
        i += size
    return fps


def bit_vectors(spark, ids: np.ndarray, fps: np.ndarray):
    """(id, v): the 64 bits of each fingerprint as a 0/1 vector (persisted), BucketedRandomProjectionLSH's input."""
    bits = [(fps.view(np.uint64) >> np.uint64(b)) & np.uint64(1) for b in range(64)]
    vectors = spark.createDataFrame(pd.DataFrame({"id": ids, "bits": list(np.stack(bits, 1).astype(float))})).select(
        "id", array_to_vector("bits").alias("v")).persist()
    vectors.count()
    return vectors


def brute_force_top(fps: np.ndarray, sample: np.ndarray, n: int, distance: int) -> dict[int, list[int]]:
    """Each sampled page's exact top n within distance (ids are positions), by (distance, id)."""
    out = {}
    for q in sample:
        d = hamming(fps, fps[q])
        d[q] = 99
        near = np.flatnonzero(d <= distance)
        order = np.lexsort((near, d[near]))
        out[int(q)] = near[order][:n].tolist()
    return out


def recall(found: dict[int, list[int]], truth: dict[int, list[int]]) -> float:
    want = sum(len(v) for v in truth.values())
    hit = sum(len(set(found.get(q, [])) & set(v)) for q, v in truth.items())
    return hit / want if want else 1.0


def lists_of(pairs: pd.DataFrame, sample: np.ndarray) -> dict[int, list[int]]:
    picked = pairs[pairs["id"].isin(set(sample.tolist()))].sort_values(["id", "rank"])
    return {int(q): g["related_id"].tolist() for q, g in picked.groupby("id")}


def step_ratio(spark, pdf: pd.DataFrame, args, tables: Tables) -> None:
    """The whole near-duplicate step (near_duplicates on the fingerprints) without and with related=N, taking
    turns for --rounds rounds: each one's least stage seconds and their ratio."""
    def step(related: int) -> dict:
        result = near_duplicates(spark.createDataFrame(pdf), fingerprint_col="fingerprint", min_similarity=0,
                                 signature_bands=0, related=related, related_distance=args.distance)
        seconds = {"stage seconds": sum(result.report["seconds"].values()),
                   "related seconds": result.report["seconds"].get("related", 0.0)}
        result.unpersist()
        return seconds

    runs = take_turns({"without related": lambda: step(0), f"with related={args.n}": lambda: step(args.n)},
                      args.rounds)
    (without, with_) = (best(r, "stage seconds") for r in runs.values())
    tables.table(["near_duplicates", "stage seconds", "of which related"],
                 [["without related", without["stage seconds"], 0.0],
                  [f"with related={args.n}", with_["stage seconds"], with_["related seconds"]],
                  ["ratio", with_["stage seconds"] / without["stage seconds"], "-"]], [None, "{:.2f}", "{:.2f}"],
                 title=f"best of {args.rounds} round(s), taking turns")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=20_000)
    ap.add_argument("--n", type=int, default=10, help="related pages per page")
    ap.add_argument("--distance", type=int, default=14)
    ap.add_argument("--topic-share", type=float, default=0.3)
    ap.add_argument("--sample", type=int, default=2000, help="pages whose recall is measured")
    ap.add_argument("--brp-tables", type=int, default=5)
    ap.add_argument("--brp-bucket", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--skip-brp", action="store_true")
    ap.add_argument("--skip-step", action="store_true", help="no near_duplicates with and without related=N")
    ap.add_argument("--plan-pages", type=int, help="use the plan the planner picks for this many pages (default "
                    "--pages): a smaller run measures the recall of a larger run's plan")
    ap.add_argument("--core", action="store_true", help="ours in numpy (core.related, one process) instead of Spark")
    ap.add_argument("--join", action="store_true", help="also the join search (spark.related.join_search)")
    add_json_option(ap)
    args = ap.parse_args()
    tables = Tables(args.json)
    spark = bench_session("bench-related")
    fps = topic_fingerprints(args.pages, args.distance, args.topic_share, seed=1)
    ids = np.arange(args.pages, dtype=np.int64)
    sample = np.random.default_rng(2).choice(args.pages, size=min(args.sample, args.pages), replace=False)
    truth = brute_force_top(fps, sample, args.n, args.distance)
    pdf = pd.DataFrame({"id": ids, "fingerprint": fps})
    pages = spark.createDataFrame(pdf).withColumn("cluster_id", F.col("id")).withColumn(
        "signature", F.lit(None).cast("binary")).persist()
    pages.count()
    vectors = None if args.skip_brp else bit_vectors(spark, ids, fps)
    plan = plan_related(args.plan_pages or args.pages, args.distance)
    got: dict[str, pd.DataFrame] = {}

    def ours(search="runs"):
        if args.core:
            got[search] = pd.DataFrame(core_related_pages(ids, fps, None, args.n, args.distance, plan))
        else:
            got[search] = related_pairs(pages, args.n, plan, SignatureSpec(), search).select(
                "id", "related_id", "rank").toPandas()
        return {"rows": len(got[search])}

    def brp():
        model = BucketedRandomProjectionLSH(inputCol="v", outputCol="h", bucketLength=args.brp_bucket,
                                            numHashTables=args.brp_tables, seed=3).fit(vectors)
        joined = model.approxSimilarityJoin(vectors, vectors, math.sqrt(args.distance) + 1e-9, "euclid")
        pairs = (joined.select(F.col("datasetA.id").alias("id"), F.col("datasetB.id").alias("related_id"),
                               F.round(F.col("euclid") ** 2).cast("int").alias("distance"))
                 .where(F.col("id") != F.col("related_id")))
        order = Window.partitionBy("id").orderBy("distance", "related_id")
        got["brp"] = (pairs.withColumn("rank", F.row_number().over(order)).where(F.col("rank") <= args.n)
                      .select("id", "related_id", "rank").toPandas())
        return {"rows": len(got["brp"])}

    kind = plan.describe()["kind"]
    variants = {f"ours ({kind} plan, {'numpy probes, one process' if args.core else 'run search'})": ours}
    keys = ["runs"]
    if args.join and not args.core:
        variants[f"ours ({kind} plan, join search)"] = lambda: ours("join")
        keys.append("join")
    if not args.skip_brp:
        variants[f"BucketedRandomProjectionLSH ({args.brp_tables} tables, bucket {args.brp_bucket})"] = brp
        keys.append("brp")
    results = take_turns(variants, args.rounds)
    rows = []
    for (name, runs), key in zip(results.items(), keys):
        b = best(runs)
        rows.append([name, b["seconds"], recall(lists_of(got[key], sample), truth), b["rows"]])
    base = rows[0][1]
    tables.table(["method", "seconds", f"recall of the exact top {args.n} (sample {len(sample)})", "rows",
                  "seconds / ours"], [r + [r[1] / base] for r in rows], [None, "{:.1f}", "{:.4f}", None, "{:.2f}"],
                 title=f"{args.pages:,} fingerprints, N = {args.n}, D = {args.distance}; plan "
                       f"{plan.tables} table(s) of {plan.describe()['block_bits']} bits within {plan.radius} bits (recall at D "
                       f"{plan.recall_at(args.distance):.3f}); chance neighbours per page "
                       f"{chance_neighbours(args.pages, args.distance):.3g}")
    if not args.skip_step:
        step_ratio(spark, pdf, args, tables)
    tables.write()


if __name__ == "__main__":
    main()
