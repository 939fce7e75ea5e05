"""Chance pairs at crawl scale, simulated on a small corpus: precision with and without verification.

    python scripts/bench_chance.py --corpus work/man20k --corpus work/gen100k [--at 1000000000]

Among N uniformly random 64-bit fingerprints a page has about (N - 1) * sum_{d<=k} C(64, d) / 2^64 chance
neighbours within k bits: 0.0045 at N = 10^9 and k = 6, 2.3e-7 at N = 20,000. Cutting every fingerprint to
b bits spread over the 64 (`--simulate-fingerprint-bits b`) before the pair search gives a corpus of N pages
the chance neighbours per page of a crawl of --at pages (b is the largest width that reaches that rate).
Each corpus (make_corpus.py output) is run six times, one job after another in one Spark session: the
full fingerprints and the cut ones, each with verification off (`--cluster-mode transitive --min-similarity
0`, the behaviour before signatures; the signature bands are then off too), verified without the bands, and
at the defaults; every run is scored against the character 5-gram oracle (quality.py) and one Markdown
table per corpus is printed. An untimed run on 1,000 pages of the first corpus goes first (a new JVM's
first run is ~1.5x slower).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from evaluate import build_oracle, job_labels, load_corpus  # noqa: E402

from simhash_udf.core.blocks import chance_pairs  # noqa: E402
from simhash_udf.job.config import DedupConfig, load_config  # noqa: E402
from simhash_udf.job.pipeline import run  # noqa: E402
from simhash_udf.spark.session import get_spark  # noqa: E402

# Verification off also turns the signature bands off (they are verified candidates), so the middle mode
# separates the two: what verification does to the SimHash pairs alone, and what the bands add.
MODES = {"no verification (transitive, --min-similarity 0; no bands)": ["--cluster-mode", "transitive",
                                                                        "--min-similarity", "0"],
         "verified, no bands (--signature-bands 0)": ["--signature-bands", "0"],
         "defaults (verified, with bands)": []}


def simulated_bits(n: int, at: int, k: int) -> int:
    """The largest fingerprint width at which n pages have the chance neighbours per page of `at` pages."""
    target = chance_pairs(at, k) / at
    for bits in range(64, k, -1):
        if chance_pairs(n, k, bits) / n >= target:
            return bits
    return k + 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="append", required=True, help="a make_corpus.py output directory")
    ap.add_argument("--at", type=float, default=1e9, help="the crawl size to simulate (pages)")
    args = ap.parse_args()
    k = DedupConfig().k
    spark = get_spark("bench-chance")
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="bench_chance_")
    try:
        warm = os.path.join(work, "warm-up.parquet")  # untimed: the JVM's first run
        load_corpus(os.path.join(args.corpus[0], "docs.parquet")).head(1000).to_parquet(warm)
        run(load_config(["--input", warm, "--output", os.path.join(work, "warm-up")]), spark)
        for corpus in args.corpus:
            path = os.path.join(corpus, "docs.parquet")
            docs = load_corpus(path)
            oracle = build_oracle(docs)
            bits = simulated_bits(len(docs), int(args.at), k)
            print(f"\n{corpus}: {len(docs):,} pages; fingerprints cut to {bits} bits give "
                  f"{chance_pairs(len(docs), k, bits):,.1f} expected chance pairs within k = {k} "
                  f"(as many per page as {args.at:,.0f} full fingerprints; {chance_pairs(len(docs), k):.2g} uncut)\n")
            print("| fingerprints | mode | long precision | long recall | short precision | short recall "
                  "| all precision | all recall | pairs accepted | pairs verified | job s |")
            print("|---|---|---|---|---|---|---|---|---|---|---|")
            for cut in (0, bits):
                for name, extra in MODES.items():
                    out = os.path.join(work, "out")
                    argv = ["--input", path, "--output", out, "--overwrite", *extra]
                    if cut:
                        argv += ["--simulate-fingerprint-bits", str(cut)]
                    t0 = time.perf_counter()
                    report = run(load_config(argv), spark)
                    seconds = time.perf_counter() - t0
                    rows = {r["bucket"]: r for r in oracle.evaluate(job_labels(docs, out)).rows}
                    c = report["candidates"]
                    print(f"| {'64 bits' if not cut else f'cut to {cut} bits'} | {name} | "
                          + " | ".join(f"{rows[b][m]:.3f}" for b in ("long", "short", "all") for m in ("precision", "recall"))
                          + f" | {c['pairs_accepted']:,} | {c['pairs_verified']:,} | {seconds:.0f} |", flush=True)
                    shutil.rmtree(out, ignore_errors=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
