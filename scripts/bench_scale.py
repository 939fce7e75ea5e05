"""How the near-duplicate stages grow with N: synthetic fingerprints with ~10% planted near-duplicate
groups, run through the real job (--input-format fingerprints, local mode), one size after another in
one process, after an untimed run on --warm-up fingerprints. Prints seconds per stage, rows exploded, pairs
compared, the JVM's peak memory so far and t(N)/t(N/10).

Beside the job, on the same distinct fingerprints, the single-core C++ peer `find_all` of simhash-cpp (the
library in PyPI's simhash-py 0.4.0, scripts/_peer_find_all.py; built with g++ on first use into
--peer-cache) with the job's blocks and k: its seconds, and whether it finds the same pairs within k as the
job's table search (which accepts each such pair once). The peer has no verification, no signature bands
and no clusters: its time is that of the candidate search alone.

    python scripts/bench_scale.py                      # 100k, 1M, 10M
    python scripts/bench_scale.py --sizes 100000,1000000
    python scripts/bench_scale.py --no-peer            # without the peer
    python scripts/bench_scale.py --java-options=-XX:CompileThresholdScaling=3   # session.LARGE_RUN_JAVA_OPTIONS

With --compare DIR (another checkout, e.g. `git worktree add /tmp/before <commit>`), each size is also run by
the job of DIR and again by this checkout, each in a new process (spark-submit-like: a new JVM), taking
turns on the same input; a second table prints both, side by side, with the ratios of their seconds and
whether their pairs and clusters are the same, then a table of their seconds per stage. --compare-runs R: R
such rounds, each checkout's best run by job seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import functions as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import _peer_find_all as peer  # noqa: E402
from same_clusters import cluster_rows  # noqa: E402

from simhash_udf.core.signature import SignatureSpec, to_arrow  # noqa: E402
from simhash_udf.job.config import DedupConfig, load_config  # noqa: E402
from simhash_udf.job.pipeline import run  # noqa: E402
from simhash_udf.spark.session import get_spark  # noqa: E402

MAX_REDRAWN = 6  # signature bins a planted copy redraws at most (5% of 128)


def synthetic_fingerprints(n: int, k: int, dup_share: float, seed: int = 0, far_share: float = 0.0):
    """(ids, fingerprints, group, signatures): random fingerprints and signatures; dup_share of the documents
    sit in groups of 2-5 whose members are within k bits of the group's first member and share its signature
    but for up to MAX_REDRAWN of its bins, redrawn (group = -1 for the rest): planted copies verify, chance pairs of
    unrelated fingerprints do not. far_share of the copies get a random fingerprint instead (an edited copy
    far from its original in bits): only the signature bands can find those."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=n, dtype=np.int64, endpoint=True)
    group = np.full(n, -1, dtype=np.int64)
    n_dup = int(n * dup_share)
    sizes = rng.integers(2, 6, size=n_dup // 2)
    sizes = sizes[np.cumsum(sizes) <= n_dup]
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    members = np.arange(int(sizes.sum()))
    owner = np.repeat(np.arange(len(sizes)), sizes)
    is_centre = members == starts[owner]
    group[members] = owner
    # flip 0..k random bits of the centre for every non-centre member
    u = fps.view(np.uint64)
    for j in np.flatnonzero(~is_centre):
        v = u[starts[owner[j]]]
        for b in rng.choice(64, size=int(rng.integers(0, k + 1)), replace=False):
            v ^= np.uint64(1) << np.uint64(b)
        u[j] = v
    non_centres = np.flatnonzero(~is_centre)
    far = non_centres[rng.random(len(non_centres)) < far_share]
    fps[far] = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=len(far), dtype=np.int64)
    spec = SignatureSpec()
    sigs = rng.integers(0, 256, size=(n, spec.bins), dtype=np.uint8)
    copies = np.flatnonzero(~is_centre)
    sigs[copies] = sigs[starts[owner[copies]]]
    # each copy redraws 0..MAX_REDRAWN of its group's bins (<= 5%): any two copies of a group then differ in at
    # most 2 * MAX_REDRAWN bins (similarity >= ~0.9), so a planted group is always a group the verified policy
    # must join, and a split group is a fault of the job. (A redraw with a probability per bin, as before,
    # has a binomial tail: at 10M, 2 of ~330,000 groups had two copies 0.797 similar, rightly kept apart.)
    n_redrawn = rng.integers(0, MAX_REDRAWN + 1, size=len(copies))
    bins = rng.integers(0, spec.bins, size=(len(copies), MAX_REDRAWN))
    r, c = np.nonzero(np.arange(MAX_REDRAWN) < n_redrawn[:, None])
    sigs[copies[r], bins[r, c]] = rng.integers(0, 256, size=len(r), dtype=np.uint8)
    ids = rng.permutation(n).astype(np.int64)
    return ids, fps, group, sigs


def jvm_peak_mb(spark) -> float:
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_checkout(code: str, path: str, out: str, k: int, job_args: list[str]) -> dict:
    """The job of the checkout at `code` on `path`, in a new Python process and JVM; its seconds from
    report.json, its wall time with the JVM's start, and its clusters' rows (same_clusters.cluster_rows)."""
    cmd = [sys.executable, "-m", "simhash_udf.job.cli", "--input", path, "--input-format", "fingerprints",
           "--output", out, "--k", str(k), "--overwrite", *job_args]
    env = {**os.environ, "PYTHONPATH": code}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"the job of {code} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    with open(os.path.join(out, "report.json")) as fh:
        report = json.load(fh)
    return {"wall": wall, "job": report["total_seconds"], "candidates": report["seconds"].get("candidates", 0.0),
            "seconds": report["seconds"],
            "accepted": report["candidates"]["pairs_accepted"], "verified": report["candidates"]["pairs_verified"],
            "clusters": cluster_rows(out)}


def stop_jvm(spark) -> None:
    """Stop the session and end the JVM that pyspark started for it (spark.stop() leaves it running)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        proc.terminate()
        proc.wait(timeout=120)
    SparkContext._gateway = SparkContext._jvm = None


def compare_checkouts(others: list[str], path: str, work: str, n: int, k: int, job_args: list[str],
                      runs: int = 1) -> list[dict]:
    """This checkout and each of `others` on one input, in new processes taking turns (others first), `runs`
    rounds; per checkout its run of the fewest job seconds (best of runs)."""
    codes = [*others, ROOT]
    tries: list[list[dict]] = [[] for _ in codes]
    for _ in range(runs):
        for i, code in enumerate(codes):
            tries[i].append(run_checkout(code, path, os.path.join(work, f"cmp_{n}_{i}"), k, job_args))
    rows = [{"code": code, "n": n, "runs": runs, **min(t, key=lambda r: r["job"])} for code, t in zip(codes, tries)]
    mine = rows[-1]
    mine["code"] = "this"  # also when an other checkout is this one (a run of the same code twice)
    for r in rows:
        r["same"] = r["clusters"] == mine["clusters"] and (r["accepted"], r["verified"]) == (mine["accepted"], mine["verified"])
        del r["clusters"]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000,10000000")
    ap.add_argument("--k", type=int, default=DedupConfig().k, help="default: the job's default k")
    ap.add_argument("--dup-share", type=float, default=0.1)
    ap.add_argument("--far-share", type=float, default=0.3, help="share of the copies with a random fingerprint "
                    "(found by the signature bands only)")
    ap.add_argument("--warm-up", type=int, default=20_000, help="fingerprints of an untimed run before the sizes "
                    "(0: none; the first size then pays for the JVM's first run)")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--job-args", default="", help="more job options, e.g. '--min-similarity 0'")
    ap.add_argument("--peer-cache", default=os.path.join(ROOT, ".cache", "peers"), help="where the peer is built")
    ap.add_argument("--no-peer", action="store_true", help="do not run the C++ peer")
    ap.add_argument("--compare", nargs="*", default=[], help="other checkouts to run beside this one, each in a "
                    "new process on the same inputs")
    ap.add_argument("--compare-runs", type=int, default=1, help="rounds of --compare runs; each checkout's best")
    ap.add_argument("--java-options", default=None, help="JVM options of the runs' JVMs (SIMHASH_DEDUP_JAVA_OPTIONS; "
                    "a --compare checkout older than it ignores them), e.g. session.LARGE_RUN_JAVA_OPTIONS; "
                    "default: the environment's")
    args = ap.parse_args()
    if args.java_options is not None:
        os.environ["SIMHASH_DEDUP_JAVA_OPTIONS"] = args.java_options
    binary = None
    if not args.no_peer:
        try:
            binary = peer.build(args.peer_cache)
        except RuntimeError as e:
            print(f"the C++ peer is left out: {e}", flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    work = args.workdir or tempfile.mkdtemp(prefix="bench_scale_")
    os.makedirs(work, exist_ok=True)  # a --workdir that does not exist yet
    spark = get_spark("bench-scale")
    spark.sparkContext.setLogLevel("ERROR")
    results, compared, to_compare = [], [], []
    if args.warm_up:  # untimed: a new JVM's first run is ~1.5x slower (20k fingerprints: 23.6 s, then 10.3 and 9.9 s)
        ids, fps, group, sigs = synthetic_fingerprints(args.warm_up, args.k, args.dup_share, far_share=args.far_share)
        warm = os.path.join(work, "warm-up.parquet")
        pq.write_table(pa.table({"id": ids, "fingerprint": fps, "group": group,
                                 "signature": to_arrow(sigs, np.ones(args.warm_up, dtype=bool))}), warm)
        run(load_config(["--input", warm, "--input-format", "fingerprints", "--output", os.path.join(work, "out_warm-up"),
                         "--k", str(args.k), "--overwrite", *args.job_args.split()]), spark)
    for n in sizes:
        t0 = time.perf_counter()
        ids, fps, group, sigs = synthetic_fingerprints(n, args.k, args.dup_share, far_share=args.far_share)
        path = os.path.join(work, f"fps_{n}.parquet")
        pq.write_table(pa.table({"id": ids, "fingerprint": fps, "group": group,
                                 "signature": to_arrow(sigs, np.ones(n, dtype=bool))}), path)
        del sigs
        gen = time.perf_counter() - t0
        out = os.path.join(work, f"out_{n}")
        cfg = load_config(["--input", path, "--input-format", "fingerprints", "--output", out,
                           "--k", str(args.k), "--overwrite", *args.job_args.split()])
        t0 = time.perf_counter()
        report = run(cfg, spark)
        wall = time.perf_counter() - t0
        # every planted group found exactly: one cluster per group, no planted member joined elsewhere
        clusters = spark.read.parquet(os.path.join(out, "clusters"))
        truth = spark.read.parquet(path).select("id", "group")
        joined = clusters.join(truth, "id")
        split_groups = (
            joined.where("group >= 0").groupBy("group").agg(F.countDistinct("cluster_id").alias("c")).where("c > 1").count()
        )
        # a cluster with two planted groups, a planted group plus another page, or two unplanted pages
        mixed = (
            joined.groupBy("cluster_id")
            .agg(F.countDistinct("group").alias("g"), F.max("group").alias("mg"), F.count("*").alias("n"))
            .where("g > 1 or (n > 1 and mg < 0)")
            .count()
        )
        results.append({
            "n": n, "wall": wall, "gen": gen, "seconds": report["seconds"],
            "rows": n and report["distinct_fingerprints"] * report["table_plan"]["tables"]
            + ((report["candidates"].get("signature_bands") or {}).get("rows") or 0),
            "compared": report["candidates"]["pairs_compared"], "accepted": report["candidates"]["pairs_accepted"],
            "verified": report["candidates"]["pairs_verified"],
            "rounds": report["candidates"]["component_rounds"], "tables": report["table_plan"]["tables"],
            "split": split_groups, "mixed": mixed, "jvm_mb": jvm_peak_mb(spark),
            "py_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        })
        r = results[-1]
        # unrelated random fingerprints are within k by chance (blocks.chance_pairs, in the job's report): their
        # signatures are independent, so verification rejects them (with --min-similarity 0 they are joined)
        r["chance"] = report["candidates"]["chance_pairs_uniform"]
        r["peer"] = None
        if binary:  # after the job, alone on the machine
            r["peer"] = peer.find_all(binary, fps, report["table_plan"]["blocks"], args.k, work)
            r["peer"]["same"] = (r["peer"]["by_distance"] == [report["candidates"]["pairs_accepted_by_distance"][str(d)]
                                                            for d in range(args.k + 1)])
        if args.compare:
            to_compare.append((path, n))
        print(f"n={n:>10,}: {wall:7.1f} s  rows exploded {r['rows']:,}  pairs compared {r['compared']:,}  "
              f"groups split {split_groups}  clusters mixing {mixed} (chance pairs within k expected {r['chance']:.1f})",
              flush=True)
    # after this session and its JVM ended: each checkout's JVM takes half the RAM by default, and at 10M
    # fingerprints the kernel killed this session's JVM (12.5 GB) while a checkout's job ran beside it; after
    # spark.stop() alone the JVM lives on with its heap, and the kernel killed a checkout's JVM instead
    stop_jvm(spark)
    for path, n in to_compare:
        compared += compare_checkouts([os.path.abspath(c) for c in args.compare], path, work, n, args.k,
                                      args.job_args.split(), args.compare_runs)

    stages = list(dict.fromkeys(s for r in results for s in r["seconds"]))
    print("\n| N | " + " | ".join(stages) + " | total s | tables | rows exploded | pairs compared | pairs accepted "
          "| pairs verified | rounds | planted groups split | mixed clusters | expected chance pairs | JVM peak MB so far |")
    print("|" + "---|" * (len(stages) + 12))
    for r in results:
        print(f"| {r['n']:,} | " + " | ".join(f"{r['seconds'].get(s, 0):.1f}" for s in stages)
              + f" | {r['wall']:.1f} | {r['tables']} | {r['rows']:,} | {r['compared']:,} | {r['accepted']:,} | {r['verified']:,}"
              f" | {r['rounds']} | {r['split']} | {r['mixed']} | {r['chance']:.1f} | {r['jvm_mb']:.0f} |")
    for a, b in zip(results, results[1:]):
        print(f"t({b['n']:,}) / t({a['n']:,}) = {b['wall'] / a['wall']:.2f}   (N ratio {b['n'] / a['n']:.0f})")
    if binary:
        print("\nThe C++ peer on the same distinct fingerprints (find_all of simhash-cpp, one core, the job's blocks and k):")
        print("| N | distinct fingerprints | peer find_all s | peer pairs within k | job's accepted pairs "
              "| same pairs by distance | job's candidates s / peer s | job total s / peer s |")
        print("|---|---|---|---|---|---|---|---|")
        for r in results:
            p = r["peer"]
            secs = max(p["seconds"], 1e-3)  # printed in ms: a tiny N can take "0.000"
            print(f"| {r['n']:,} | {p['fingerprints']:,} | {p['seconds']:.3f} | {sum(p['by_distance']):,} | {r['accepted']:,} "
                  f"| {'yes' if p['same'] else 'NO'} | {r['seconds'].get('candidates', 0) / secs:.2f} "
                  f"| {r['wall'] / secs:.2f} |")
    if compared:
        print("\nEach checkout in a new process, taking turns on the same inputs (job s: report.json's total_seconds; "
              "ratios: this checkout's seconds / the other's):")
        print("| N | checkout | wall s (new JVM) | job s | candidates s | pairs accepted | pairs verified "
              "| same pairs and clusters as this checkout | job s: this / it | candidates s: this / it |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in compared:
            mine = next(c for c in compared if c["n"] == r["n"] and c["code"] == "this")
            print(f"| {r['n']:,} | {r['code']} | {r['wall']:.1f} | {r['job']:.1f} "
                  f"| {r['candidates']:.1f} | {r['accepted']:,} | {r['verified']:,} | {'yes' if r['same'] else 'NO'} "
                  f"| {mine['job'] / r['job']:.2f} | {mine['candidates'] / max(r['candidates'], 1e-3):.2f} |")
        cmp_stages = list(dict.fromkeys(s for r in compared for s in r["seconds"]))
        print(f"\nThe same runs' seconds per stage (best of {compared[0]['runs']} by job s):")
        print("| N | checkout | " + " | ".join(cmp_stages) + " | job s |")
        print("|" + "---|" * (len(cmp_stages) + 3))
        for r in compared:
            print(f"| {r['n']:,} | {r['code']} | " + " | ".join(f"{r['seconds'].get(s, 0):.1f}" for s in cmp_stages)
                  + f" | {r['job']:.1f} |")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
