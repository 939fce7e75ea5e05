"""A small notebook call of the Python API (`near_duplicates` on 32 rows) on a session with Spark's default
settings, beside the same call with tuned settings and the call as it ran before the API sized its own shuffles
(the session's 200 partitions), side by side in one run. Two figures per variant:

- cold: the first call in a new process (a new JVM and new Python workers), each variant in its own process,
  as a notebook user meets it after starting the kernel; wall seconds of the call (the session's start not
  counted, it is the same for every variant);
- warm: best of --rounds calls in one session, the variants taking turns.

    python scripts/bench/api_small.py                 # 32 rows, 3 warm rounds
    python scripts/bench/api_small.py --rows 1000 --rounds 5

Each call collects clusters and counts kept rows, so the whole computation is timed.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import pandas as pd

from simhash_udf.evaluation.benchmark import Tables, add_json_option, bench_session, best, take_turns
from simhash_udf.evaluation.sample_corpus import make_sample_corpus

VARIANTS = {
    "default session (API sizes its shuffles)": {},
    "tuned (shuffle_partitions=4)": {"shuffle_partitions": 4},
    "session's 200 partitions (the API before)": {"shuffle_partitions": 200},
}


def one_call(spark, rows: int, options: dict) -> dict:
    """One near_duplicates call on `rows` sample rows in two input partitions; its seconds and task count."""
    from simhash_udf.job.api import near_duplicates

    df = spark.createDataFrame(pd.DataFrame(make_sample_corpus(rows, seed=5)).head(rows)).repartition(2)
    sc = spark.sparkContext
    group = f"api-bench-{time.monotonic_ns()}"  # this call's jobs only
    sc.setJobGroup(group, "timed call")
    start = time.perf_counter()
    result = near_duplicates(df, **options)
    clusters = result.clusters.toPandas()
    kept = result.kept.count()
    seconds = time.perf_counter() - start
    sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    tasks = sum(tracker.getStageInfo(s).numTasks for j in tracker.getJobIdsForGroup(group)
                for s in tracker.getJobInfo(j).stageIds if tracker.getStageInfo(s) is not None)
    result.unpersist()
    assert len(clusters) == rows and 0 < kept <= rows
    return {"seconds": seconds, "tasks": tasks}


def session():
    # Spark's defaults for the settings the API sizes (200 shuffle partitions), as a fresh notebook session has
    return bench_session("api-small-bench", master="local[2]", conf={"spark.sql.shuffle.partitions": "200"})


def cold(rows: int, name: str) -> dict:
    """The variant's first call in a new process."""
    out = subprocess.run([sys.executable, __file__, "--rows", str(rows), "--child", name],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    add_json_option(ap)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one_call(session(), args.rows, VARIANTS[args.child])))
        return
    cold_runs = {name: cold(args.rows, name) for name in VARIANTS}
    spark = session()
    warm = take_turns({name: (lambda o=options: one_call(spark, args.rows, o)) for name, options in VARIANTS.items()},
                      args.rounds)
    tables = Tables(args.json)
    base_cold = cold_runs["tuned (shuffle_partitions=4)"]["seconds"]
    base_warm = best(warm["tuned (shuffle_partitions=4)"])["seconds"]
    rows = []
    for name in VARIANTS:
        c, w = cold_runs[name], best(warm[name])
        rows.append([name, c["seconds"], c["seconds"] / base_cold, w["seconds"], w["seconds"] / base_warm,
                     w["tasks"]])
    tables.table(["variant", "cold s", "cold / tuned", f"warm s (best of {args.rounds})", "warm / tuned",
                  "tasks"], rows, [None, "{:.1f}", "{:.2f}x", "{:.1f}", "{:.2f}x", None],
                 title=f"near_duplicates on {args.rows} rows, local[2]")
    tables.write()


if __name__ == "__main__":
    main()
