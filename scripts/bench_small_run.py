"""The fixed cost of a run: the documented command (spark-submit jobs/dedup_job.py, local[2]) on a small
sample, for this checkout and optionally other checkouts (e.g. a `git worktree` of an earlier commit), the
runs taking turns. Prints per code: wall seconds of spark-submit, the job's own seconds (report.json
total_seconds: from the session's start of the run to its end, i.e. after the JVM started), the sum of the
stage seconds, and the Spark jobs the run started (from the event log of one more, untimed run per code: writing
the event log costs a cold run ~1 s, so the timed runs write none).

    python scripts/bench_small_run.py                         # 200 originals (~366 pages), 3 runs
    git worktree add /tmp/before ceaf7dc && python scripts/bench_small_run.py --compare /tmp/before
    python scripts/bench_small_run.py --java-options          # also with the short-run JVM options and a class archive
    python scripts/bench_small_run.py --local                 # also through python -m simhash_udf.job.cli (local[2])
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from simhash_udf.evaluation.sample_corpus import make_sample_corpus  # noqa: E402
from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS  # noqa: E402


def spark_jobs(event_dir: str) -> int:
    """Spark jobs started by the application whose event log is in event_dir."""
    n = 0
    for path in glob.glob(os.path.join(event_dir, "**", "*"), recursive=True):
        if os.path.isdir(path):
            continue
        with open(path, errors="replace") as fh:
            n += sum('"Event":"SparkListenerJobStart"' in line for line in fh)
    return n


def one_run(code: str, sample: str, work: str, extra: list[str], event_log: bool = False, local: bool = False,
            java_options: str | None = None) -> dict:
    """One run in a new JVM: spark-submit jobs/dedup_job.py with `extra` arguments, or (local) the job's own local
    entry point, `python -m simhash_udf.job.cli` on local[2], which starts its JVM itself with `java_options`
    (SIMHASH_DEDUP_JAVA_OPTIONS), or with None with the options it chooses (session.small_run_conf)."""
    out, events = os.path.join(work, "out"), os.path.join(work, "events")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(events)
    event_args = ["--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.compress=false",
                  "--conf", "spark.eventLog.rolling.enabled=false", "--conf", f"spark.eventLog.dir=file://{events}"]
    env = dict(os.environ, PYTHONPATH=code, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SIMHASH_DEDUP_JAVA_OPTIONS", None)
    if java_options is not None:
        env["SIMHASH_DEDUP_JAVA_OPTIONS"] = java_options
    if local:
        env["SIMHASH_DEDUP_MASTER"] = "local[2]"
        if event_log:
            env["PYSPARK_SUBMIT_ARGS"] = shlex.join([*event_args, "pyspark-shell"])
        command = [sys.executable, "-m", "simhash_udf.job.cli"]
    else:
        command = [os.path.join(os.path.dirname(sys.executable), "spark-submit"), "--master", "local[2]",
                   *(event_args if event_log else []), *extra, os.path.join(code, "jobs", "dedup_job.py")]
    start = time.perf_counter()
    proc = subprocess.run([*command, "--input", sample, "--output", out], capture_output=True, text=True, env=env,
                          cwd=code)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{code}: {command[-1]} failed\n{proc.stderr[-3000:]}")
    with open(os.path.join(out, "report.json")) as fh:
        report = json.load(fh)
    result = {"wall": wall, "job": report["total_seconds"], "stages": sum(report["seconds"].values())}
    if event_log:
        result["spark_jobs"] = spark_jobs(events)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=200, help="originals of the sample corpus (with their copies ~1.8x "
                    "as many rows: 200 -> ~366)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--compare", nargs="*", default=[], help="other checkouts to run beside this one")
    ap.add_argument("--submit-args", default="", help="more spark-submit arguments for every run, e.g. "
                    "'--conf spark.sql.codegen.wholeStage=false'")
    ap.add_argument("--local", action="store_true", help="also run each checkout through its own local entry "
                    "point (python -m simhash_udf.job.cli, local[2]), which starts the JVM itself")
    ap.add_argument("--java-options", action="store_true", help="also run this checkout with the short-run JVM "
                    "options (session.SHORT_RUN_JAVA_OPTIONS), and with them and a class archive of Spark's classes "
                    "(Java's application class-data sharing: one untimed run writes it first)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-small-")
    sample = os.path.join(work, "sample.parquet")
    rows = make_sample_corpus(args.pages, seed=3)  # --pages originals and their copies (~1.8 rows an original)
    pd.DataFrame(rows).to_parquet(sample)
    common = shlex.split(args.submit_args)
    variants = {code: (code, common, False) for code in [ROOT, *args.compare]}
    if args.local:
        variants.update({f"{code}, python -m (local)": (code, [], True) for code in [ROOT, *args.compare]})
    if args.java_options:
        archive = os.path.join(work, "spark-classes.jsa")
        one_run(ROOT, sample, os.path.join(work, "run"),
                [*common, "--driver-java-options", f"-XX:ArchiveClassesAtExit={archive}"])
        variants["short-run options"] = (ROOT, [*common, "--driver-java-options", SHORT_RUN_JAVA_OPTIONS], False)
        variants["short-run options + class archive"] = (
            ROOT, [*common, "--driver-java-options", f"{SHORT_RUN_JAVA_OPTIONS} -XX:SharedArchiveFile={archive}"], False)
    results = {name: [] for name in variants}
    for i in range(args.runs):
        for name, (code, extra, local) in variants.items():  # taking turns: a slower spell hits all alike
            results[name].append(one_run(code, sample, os.path.join(work, "run"), extra, local=local))
            print(f"run {i + 1}, {name}: {results[name][-1]}", flush=True)
    jobs = {name: one_run(code, sample, os.path.join(work, "run"), extra, event_log=True, local=local)["spark_jobs"]
            for name, (code, extra, local) in variants.items()}
    print(f"\n{args.pages} originals of the sample ({len(rows)} pages with their copies), local[2], best of {args.runs} "
          "(Spark jobs: one more run with the event log):\n")
    print("| code | wall s (the command) | job s (report total_seconds) | stages s | Spark jobs |")
    print("|---|---|---|---|---|")
    best = {}
    for name, rows in results.items():
        best[name] = {k: min(r[k] for r in rows) for k in rows[0]}
        best[name]["spark_jobs"] = jobs[name]
        b = best[name]
        print(f"| {name} | {b['wall']:.1f} | {b['job']:.1f} | {b['stages']:.1f} | {b['spark_jobs']} |")
    for name in list(variants)[1:]:
        print(f"\nthis checkout / {name}: wall {best[ROOT]['wall'] / best[name]['wall']:.2f}, "
              f"job {best[ROOT]['job'] / best[name]['job']:.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
