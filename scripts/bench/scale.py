"""How the near-duplicate stages grow with N: synthetic fingerprints with ~10% planted near-duplicate
groups, run through the real job (--input-format fingerprints, local mode), one size after another in
one process, after an untimed run on --warm-up fingerprints. Prints seconds per stage, rows exploded, pairs
compared, the JVM's peak memory so far and t(N)/t(N/10).

Beside the job, on the same distinct fingerprints, the single-core C++ peer `find_all` of simhash-cpp (the
library in PyPI's simhash-py 0.4.0, peer_find_all.py beside this script; built with g++ on first use into
--peer-cache) with the job's blocks and k: its seconds, and whether it finds the same pairs within k as the
job's table search (which accepts each such pair once). The peer has no verification, no signature bands
and no clusters: its time is that of the candidate search alone.

    python scripts/bench/scale.py                      # 100k, 1M, 10M
    python scripts/bench/scale.py --sizes 100000,1000000
    python scripts/bench/scale.py --no-peer            # without the peer
    python scripts/bench/scale.py --java-options=-XX:CompileThresholdScaling=3   # session.LARGE_RUN_JAVA_OPTIONS

--warm-runs N: N timed runs of each size in the session (after the warm-up), the best one kept.

--cold R: each size is also run R times as a user runs the job once a day, a plain `spark-submit
jobs/dedup_job.py` (no options: the job chooses its own settings; local[*], every core) in a new process, no
warm-up, after this process's session and its JVM have ended; printed beside the warm figure: the command's wall
time (the JVM's start included), report.json's total and stage seconds, the ratio cold wall / warm, and the
peak resident memory of the JVM and of the Python processes (driver and workers together) of each.

    python scripts/bench/scale.py --sizes 4000000 --warm-runs 3 --cold 1 --no-peer \
        --job-args '--min-similarity 0'                 # issue 60's cold 4M figure beside the warm one

With --cold and --warm-runs 0 only the cold runs are made (no session in this process, no warm-up, no warm
figure), e.g. for 10M, whose warm run alone takes two minutes. --reuse-inputs reads an fps_N.parquet already in
--workdir as it is (written there by an earlier run with the same --k, --dup-share and --far-share), so that the
inputs of a timed run can be written beforehand.

With --compare DIR (another checkout, e.g. `git worktree add /tmp/before <commit>`), each size is also run by
the job of DIR and again by this checkout, each in a new process, taking turns on the same input: with --cold,
the cold spark-submit runs of both; otherwise python -m simhash_udf.job.cli (a new JVM, the local entry point),
--compare-runs rounds. A second table prints both, side by side, with the ratios of their seconds and whether
their pairs and clusters are the same, then a table of their seconds per stage; each checkout's best run by job
seconds.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import peer_find_all as peer  # beside this script
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import functions as F

from simhash_udf.core.signature import SignatureSpec, to_arrow
from simhash_udf.evaluation.benchmark import (
    CHECKOUT,
    ProcessWatch,
    Tables,
    add_json_option,
    bench_session,
    best,
    run_job_process,
    stop_jvm,
    take_turns,
)
from simhash_udf.evaluation.outputs import cluster_rows
from simhash_udf.job.config import DedupConfig, load_config
from simhash_udf.job.pipeline import run
from simhash_udf.spark.jvm_figures import jvm_figures, jvm_figures_since

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


def write_fingerprints(path: str, n: int, args: argparse.Namespace) -> np.ndarray:
    """synthetic_fingerprints of n documents as the job's fingerprints input (id, fingerprint, group, signature);
    the fingerprints, for the peer."""
    ids, fps, group, sigs = synthetic_fingerprints(n, args.k, args.dup_share, far_share=args.far_share)
    pq.write_table(pa.table({"id": ids, "fingerprint": fps, "group": group,
                             "signature": to_arrow(sigs, np.ones(n, dtype=bool))}), path)
    return fps


def input_fingerprints(path: str, n: int, args: argparse.Namespace) -> np.ndarray:
    """write_fingerprints, or with --reuse-inputs the fingerprints of the file already at path."""
    if args.reuse_inputs and os.path.exists(path):
        return pq.read_table(path, columns=["fingerprint"]).column("fingerprint").to_numpy()
    return write_fingerprints(path, n, args)


def job_argv(path: str, args: argparse.Namespace) -> list[str]:
    """The job's options for one size, without --output."""
    return ["--input", path, "--input-format", "fingerprints", "--k", str(args.k), "--overwrite", *args.job_args.split()]


def planted_groups_found(spark, path: str, out: str) -> tuple[int, int]:
    """(planted groups split over clusters, clusters mixing groups): a cluster with two planted groups, a planted
    group plus another page, or two unplanted pages. Both 0 when every planted group is found exactly."""
    clusters = spark.read.parquet(os.path.join(out, "clusters"))
    joined = clusters.join(spark.read.parquet(path).select("id", "group"), "id")
    split = (joined.where("group >= 0").groupBy("group").agg(F.countDistinct("cluster_id").alias("c"))
             .where("c > 1").count())
    mixed = (joined.groupBy("cluster_id")
             .agg(F.countDistinct("group").alias("g"), F.max("group").alias("mg"), F.count("*").alias("n"))
             .where("g > 1 or (n > 1 and mg < 0)").count())
    return split, mixed


def measure_size(spark, n: int, work: str, args: argparse.Namespace, binary: str | None) -> dict:
    """One size in this process's session: the input written, the job timed --warm-runs times (the best run
    kept, with the peak memory of the processes under this one while it ran), its clusters checked against the
    planted groups, then the peer alone on the machine."""
    t0 = time.perf_counter()
    path = os.path.join(work, f"fps_{n}.parquet")
    fps = input_fingerprints(path, n, args)
    gen = time.perf_counter() - t0
    out = os.path.join(work, f"out_{n}")
    cfg = load_config([*job_argv(path, args), "--output", out])
    runs = []
    for _ in range(max(1, args.warm_runs)):
        t0, jvm_before = time.perf_counter(), jvm_figures(spark)
        with ProcessWatch() as watch:
            report = run(cfg, spark)
        runs.append({"wall": time.perf_counter() - t0, "report": report, **watch.peak_mb,
                     "jvm_spent": jvm_figures_since(spark, jvm_before)})
    fastest = best(runs, key="wall")
    report, wall = fastest["report"], fastest["wall"]
    split, mixed = planted_groups_found(spark, path, out)
    c = report["candidates"]
    r = {"n": n, "path": path, "wall": wall, "gen": gen, "seconds": report["seconds"], "jvm_spent": fastest["jvm_spent"],
         "rows": n and report["distinct_fingerprints"] * report["table_plan"]["tables"]
         + ((c.get("signature_bands") or {}).get("rows") or 0),
         "compared": c["pairs_compared"], "accepted": c["pairs_accepted"], "verified": c["pairs_verified"],
         "rounds": c["component_rounds"], "tables": report["table_plan"]["tables"], "split": split, "mixed": mixed,
         "jvm_mb": fastest["jvm"], "py_mb": fastest["python"],
         # unrelated random fingerprints are within k by chance (blocks.chance_pairs, in the job's report): their
         # signatures are independent, so verification rejects them (with --min-similarity 0 they are joined)
         "chance": c["chance_pairs_uniform"], "peer": None}
    if binary:
        r["peer"] = peer.find_all(binary, fps, report["table_plan"]["blocks"], args.k, work)
        r["peer"]["same"] = r["peer"]["by_distance"] == [c["pairs_accepted_by_distance"][str(d)] for d in range(args.k + 1)]
    print(f"n={n:>10,}: {wall:7.1f} s (best of {len(runs)})  rows exploded {r['rows']:,}  pairs compared "
          f"{r['compared']:,}  groups split {split}  clusters mixing {mixed} (chance pairs within k expected "
          f"{r['chance']:.1f})", flush=True)
    return r


def compare_checkouts(others: list[str], path: str, n: int, work: str, args: argparse.Namespace,
                      cold: bool = False) -> list[dict]:
    """The other checkouts and this one (last) on one input, in new processes taking turns: with `cold`, --cold
    rounds of a plain spark-submit jobs/dedup_job.py; otherwise --compare-runs rounds of python -m
    simhash_udf.job.cli. Per checkout its run of the fewest job seconds (with its wall time and peak memory),
    and whether its pairs and clusters are this one's."""
    codes = [*(os.path.abspath(c) for c in others), CHECKOUT]
    java_options = None if cold else os.environ.get("SIMHASH_DEDUP_JAVA_OPTIONS")  # --java-options, the caller's

    def one_run(i: int, code: str):
        out = os.path.join(work, f"cmp_{n}_{i}")

        def run_once() -> dict:
            try:
                result = run_job_process(out, job_argv(path, args), code=code, master=None, submit=cold,
                                         java_options=java_options)
            except SystemExit as failure:  # e.g. a driver out of heap: reported in the tables, the others go on
                print(str(failure)[:3000], flush=True)
                return {"failed": 1}
            return {**result, "clusters": cluster_rows(out) if others else None}
        return run_once

    names = [code if i < len(codes) - 1 else "this" for i, code in enumerate(codes)]
    names = [name if name not in names[:i] else f"{name} #{i + 1}" for i, name in enumerate(names)]
    turns = take_turns({name: one_run(i, code) for i, (name, code) in enumerate(zip(names, codes))},
                       args.cold if cold else args.compare_runs)
    rows = []
    for name in names:
        done = [r for r in turns[name] if "job" in r]
        if not done:
            rows.append({"code": name, "n": n, "failed": True})
            continue
        r = best(done, key="job")
        report = r["report"]
        rows.append({"code": name, "n": n, "job": r["job"], "wall": r["wall"], "stages": r["stages"],
                     "seconds": report["seconds"], "candidates": report["seconds"].get("candidates", 0.0),
                     "accepted": report["candidates"]["pairs_accepted"], "verified": report["candidates"]["pairs_verified"],
                     "jvm_mb": r["peak_mb_jvm"], "py_mb": r["peak_mb_python"], "clusters": r["clusters"],
                     "jvm_spent": report.get("driver_jvm") or {}})
    mine = rows[-1]
    for r in rows:
        if not r.get("failed"):
            r["same"] = "-" if mine.get("failed") else (r["clusters"], r["accepted"], r["verified"]) == (
                mine["clusters"], mine["accepted"], mine["verified"])
            del r["clusters"]
    return rows


def warm_results(work: str, args: argparse.Namespace, binary: str | None) -> list[dict]:
    """measure_size of each size in one session of this process, after the warm-up run; the session's JVM ends
    afterwards (the cold and --compare checkouts run after it: each new JVM takes half the RAM by default)."""
    spark = bench_session("bench-scale")
    if args.warm_up:  # untimed: a new JVM's first run is ~1.5x slower
        warm = os.path.join(work, "warm-up.parquet")
        write_fingerprints(warm, args.warm_up, args)
        run(load_config([*job_argv(warm, args), "--output", os.path.join(work, "out_warm-up")]), spark)
    results = [measure_size(spark, int(n), work, args, binary) for n in args.sizes.split(",")]
    stop_jvm(spark)
    return results


def print_sizes(tables: Tables, results: list[dict]) -> None:
    stages = list(dict.fromkeys(s for r in results for s in r["seconds"]))
    tables.table(["N", *stages, "total s", "tables", "rows exploded", "pairs compared", "pairs accepted", "pairs verified",
                  "rounds", "planted groups split", "mixed clusters", "expected chance pairs", "JVM peak MB",
                  "Python peak MB"],
                 [[r["n"], *(r["seconds"].get(s, 0) for s in stages), r["wall"], r["tables"], r["rows"], r["compared"],
                   r["accepted"], r["verified"], r["rounds"], r["split"], r["mixed"], r["chance"], r["jvm_mb"],
                   r["py_mb"]] for r in results],
                 [None, *["{:.1f}"] * (len(stages) + 1), None, None, None, None, None, None, None, None, "{:.1f}", "{:.0f}",
                  "{:.0f}"], title="Warm: in this process's session, after a warm-up run (best of --warm-runs):")
    for a, b in zip(results, results[1:]):
        tables.note(f"t({b['n']:,}) / t({a['n']:,}) = {b['wall'] / a['wall']:.2f}   (N ratio {b['n'] / a['n']:.0f})")


def print_peer(tables: Tables, results: list[dict]) -> None:
    rows = []
    for r in results:
        p = r["peer"]
        secs = max(p["seconds"], 1e-3)  # a tiny N can take "0.000"
        rows.append([r["n"], p["fingerprints"], p["seconds"], sum(p["by_distance"]), r["accepted"], p["same"],
                     r["seconds"].get("candidates", 0) / secs, r["wall"] / secs])
    tables.table(["N", "distinct fingerprints", "peer find_all s", "peer pairs within k", "job's accepted pairs",
                  "same pairs by distance", "job's candidates s / peer s", "job total s / peer s"], rows,
                 [None, None, "{:.3f}", None, None, None, None, None],
                 title="The C++ peer on the same distinct fingerprints (find_all of simhash-cpp, one core, the job's "
                       "blocks and k):")


def print_compared(tables: Tables, compared: list[dict]) -> None:
    for r in compared:
        if r.get("failed"):
            tables.note(f"N {r['n']:,}, {r['code']}: every run failed (its error is printed above)")
    compared = [r for r in compared if not r.get("failed")]
    rows = []
    for r in compared:
        mine = next((c for c in compared if c["n"] == r["n"] and c["code"] == "this"), None)
        if mine is None:
            continue
        rows.append([r["n"], r["code"], r["wall"], r["job"], r["candidates"], r["accepted"], r["verified"], r["same"],
                     mine["job"] / r["job"], mine["candidates"] / max(r["candidates"], 1e-3)])
    tables.table(["N", "checkout", "wall s (new JVM)", "job s", "candidates s", "pairs accepted", "pairs verified",
                  "same pairs and clusters as this checkout", "job s: this / it", "candidates s: this / it"], rows,
                 [None, None, "{:.1f}", "{:.1f}", "{:.1f}", None, None, None, None, None],
                 title="Each checkout in a new process, taking turns on the same inputs (job s: report.json's "
                       "total_seconds; ratios: this checkout's seconds / the other's):")
    stages = list(dict.fromkeys(s for r in compared for s in r["seconds"]))
    tables.table(["N", "checkout", *stages, "job s"],
                 [[r["n"], r["code"], *(r["seconds"].get(s, 0) for s in stages), r["job"]] for r in compared],
                 [None, None, *["{:.1f}"] * (len(stages) + 1)],
                 title="The same runs' seconds per stage (best by job s):")


def print_cold(tables: Tables, cold: list[dict], results: list[dict]) -> None:
    """The cold spark-submit runs beside the warm runs of the same sizes."""
    warm = {r["n"]: r for r in results}
    for r in cold:
        if r.get("failed"):
            tables.note(f"N {r['n']:,}, {r['code']}: the cold spark-submit failed (its error is printed above)")
    cold = [r for r in cold if not r.get("failed")]
    tables.table(["N", "checkout", "cold wall s (spark-submit)", "cold job s", "cold stages s", "warm s",
                  "cold wall / warm", "cold JVM peak MB", "cold Python peak MB", "warm JVM peak MB",
                  "warm Python peak MB"],
                 [[r["n"], r["code"], r["wall"], r["job"], r["stages"], *warm_columns(r, warm.get(r["n"], {}))]
                  for r in cold],
                 [None, None, "{:.1f}", "{:.1f}", "{:.1f}", "{:.1f}", "{:.2f}", "{:.0f}", "{:.0f}", "{:.0f}", "{:.0f}"],
                 title="Cold: a plain spark-submit jobs/dedup_job.py per run, a new JVM and new Python workers, no "
                       "warm-up (best by job s), beside this checkout's warm figure:")
    tables.table(["N", "checkout", "cold JIT compile s", "cold GC s", "cold collections", "warm JIT compile s",
                  "warm GC s", "warm collections"],
                 [[r["n"], r["code"], *jvm_spent_columns(r.get("jvm_spent") or {}),
                   *jvm_spent_columns(warm.get(r["n"], {}).get("jvm_spent") or {})] for r in cold],
                 [None, None, "{:.1f}", "{:.1f}", None, "{:.1f}", "{:.1f}", None],
                 title="The same runs' JVM: its JIT compilers' time (summed over their threads) and its garbage "
                       "collections' (report.json's driver_jvm; warm: what the run added to its session's JVM):")


def jvm_spent_columns(spent: dict) -> list:
    """JIT compile s, GC s and collections of one run ("-" when not known: no such run, or an older report)."""
    return [spent.get(k, "-") for k in ("compile_seconds", "gc_seconds", "gc_collections")]


def warm_columns(cold: dict, warm: dict) -> list:
    """warm s, cold wall / warm, cold JVM and Python peak MB, warm JVM and Python peak MB ("-" without a warm run)."""
    if "wall" not in warm:
        return ["-", "-", cold["jvm_mb"], cold["py_mb"], "-", "-"]
    return [warm["wall"], cold["wall"] / warm["wall"], cold["jvm_mb"], cold["py_mb"], warm["jvm_mb"], warm["py_mb"]]


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000,10000000")
    ap.add_argument("--k", type=int, default=DedupConfig().k, help="default: the job's default k")
    ap.add_argument("--dup-share", type=float, default=0.1)
    ap.add_argument("--far-share", type=float, default=0.3, help="share of the copies with a random fingerprint "
                    "(found by the signature bands only)")
    ap.add_argument("--warm-up", type=int, default=20_000, help="fingerprints of an untimed run before the sizes "
                    "(0: none; the first size then pays for the JVM's first run)")
    ap.add_argument("--workdir", default=None, help="inputs and outputs are kept here (default: a temporary directory)")
    ap.add_argument("--job-args", default="", help="more job options, e.g. '--min-similarity 0'")
    ap.add_argument("--peer-cache", default=os.path.join(CHECKOUT, ".cache", "peers"), help="where the peer is built")
    ap.add_argument("--no-peer", action="store_true", help="do not run the C++ peer")
    ap.add_argument("--compare", nargs="*", default=[], help="other checkouts to run beside this one, each in a "
                    "new process on the same inputs")
    ap.add_argument("--compare-runs", type=int, default=1, help="rounds of --compare runs; each checkout's best")
    ap.add_argument("--warm-runs", type=int, default=1, help="timed runs of each size in the session; the best "
                    "(0 with --cold: the cold runs alone)")
    ap.add_argument("--reuse-inputs", action="store_true", help="an fps_N.parquet already in --workdir is used as it is")
    ap.add_argument("--cold", type=int, default=0, metavar="R", help="R cold spark-submit runs of each size (and "
                    "of each --compare checkout, taking turns), beside the warm figure")
    ap.add_argument("--java-options", default=None, help="JVM options of the runs' JVMs (SIMHASH_DEDUP_JAVA_OPTIONS; "
                    "a --compare checkout older than it ignores them), e.g. session.LARGE_RUN_JAVA_OPTIONS; "
                    "default: the environment's")
    add_json_option(ap)
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    if args.java_options is not None:
        os.environ["SIMHASH_DEDUP_JAVA_OPTIONS"] = args.java_options
    binary = None
    if not args.no_peer:
        try:
            binary = peer.build(args.peer_cache)
        except RuntimeError as e:
            print(f"the C++ peer is left out: {e}", flush=True)
    work = args.workdir or tempfile.mkdtemp(prefix="bench_scale_")
    os.makedirs(work, exist_ok=True)  # a --workdir that does not exist yet
    if args.cold and not args.warm_runs:  # the cold runs alone
        results = [{"n": int(n), "path": os.path.join(work, f"fps_{n}.parquet"), "peer": None}
                   for n in args.sizes.split(",")]
        for r in results:
            input_fingerprints(r["path"], r["n"], args)
    else:
        results = warm_results(work, args, binary)
    cold = [row for r in results if args.cold for row in compare_checkouts(args.compare, r["path"], r["n"], work,
                                                                            args, cold=True)]
    compared = cold if args.cold else [row for r in results if args.compare
                                       for row in compare_checkouts(args.compare, r["path"], r["n"], work, args)]
    tables = Tables(args.json)
    if "wall" in results[0]:
        print_sizes(tables, results)
    if binary and results[0]["peer"] is not None:
        print_peer(tables, results)
    if cold:
        print_cold(tables, cold, results)
    if compared and args.compare:
        print_compared(tables, compared)
    tables.write()
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
