"""Where the short-run JVM options stop paying: the job's local entry point (python -m simhash_udf.job.cli on
local[2], a new JVM each run: bench_small_run.one_run) on sample corpora of several sizes, with Spark's default
JVM options and with session.SHORT_RUN_JAVA_OPTIONS (both chosen through SIMHASH_DEDUP_JAVA_OPTIONS, so the
job's own choice by size, session.small_run_conf, is out of the way), the two taking turns. Prints the best
wall and job seconds (report.json total_seconds) of each.

    python scripts/bench_jvm_options.py                       # 200, 5000 and 40000 originals, 2 runs each
    python scripts/bench_jvm_options.py --originals 200,5000 --runs 3
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_small_run import one_run  # noqa: E402

from simhash_udf.evaluation.sample_corpus import make_sample_corpus  # noqa: E402
from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS  # noqa: E402

VARIANTS = {"default": "", "short-run options": SHORT_RUN_JAVA_OPTIONS}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--originals", default="200,5000,40000", help="originals of the sample corpus (~1.8x rows)")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-jvm-")
    table = []
    for n in [int(x) for x in args.originals.split(",")]:
        sample = os.path.join(work, f"sample-{n}.parquet")
        pd.DataFrame(make_sample_corpus(n, seed=5)).to_parquet(sample)
        mb = os.path.getsize(sample) / 1e6
        best = {}
        for i in range(args.runs):
            for name, options in VARIANTS.items():  # taking turns
                result = one_run(ROOT, sample, os.path.join(work, "run"), [], local=True, java_options=options)
                wall, job = result["wall"], result["job"]
                print(f"{n} originals ({mb:.1f} MB), run {i + 1}, {name}: wall {wall:.1f} s, job {job:.1f} s", flush=True)
                old = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(old[0], wall), min(old[1], job))
        table.append((n, mb, best))
    print(f"\nbest of {args.runs}, new JVMs (python -m simhash_udf.job.cli, local[2]):\n")
    print("| originals | MB | default wall s | default job s | short-run wall s | short-run job s | job default / short |")
    print("|---|---|---|---|---|---|---|")
    for n, mb, best in table:
        (dw, dj), (sw, sj) = best["default"], best["short-run options"]
        print(f"| {n:,} | {mb:.1f} | {dw:.1f} | {dj:.1f} | {sw:.1f} | {sj:.1f} | {dj / sj:.2f} |")


if __name__ == "__main__":
    main()
