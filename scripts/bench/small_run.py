"""The fixed cost of a run: the job on a small sample, each run in a new process (a new JVM and new Python
workers), by default the documented command (spark-submit jobs/dedup_job.py, local[2]), for this checkout and
optionally other checkouts (e.g. a `git worktree` of an earlier commit), the runs taking turns. Prints per
variant: wall seconds of the command, the job's own seconds (report.json total_seconds: from the session's
start of the run to its end, i.e. after the JVM started), the sum of the stage seconds, the CPU seconds of all
its processes, the peak resident memory of its JVM and of its Python processes together, and the Spark jobs
the run started (from the event log of one more, untimed run per variant: writing the event log costs a cold
run ~1 s, so the timed runs write none). Each figure is its best over the runs. Beside them, unless --no-warm,
the same input warm: runs of this checkout in one local[2] session of this process after an untimed run, best of
--runs (job s: the run's seconds; Spark jobs: those the run started). When this environment has the driver's class
archive (scripts/ship.sh writes it), the plain command runs with it, and a variant without it beside.

    python scripts/bench/small_run.py                         # 200 originals (~366 pages), 3 runs
    git worktree add /tmp/before ceaf7dc && python scripts/bench/small_run.py --compare /tmp/before
    python scripts/bench/small_run.py --java-options          # also with the short-run JVM options and a class archive
    python scripts/bench/small_run.py --local                 # also through python -m simhash_udf.job.cli (local[2])
    python scripts/bench/small_run.py --pages 200,5000,40000 --local-java-options --runs 2
        # where the short-run JVM options stop paying: python -m runs with Spark's default JVM options and with
        # session.SHORT_RUN_JAVA_OPTIONS (SIMHASH_DEDUP_JAVA_OPTIONS set to each, so the job's own choice by
        # size, session.small_run_conf, is out of the way), at several sizes
    python scripts/bench/small_run.py --in-session --runs 5   # where the CPU of runs in one session goes

--in-session: the runs one after another in one local[2] session in this process instead (the first run pays
for the JVM's start and its compiling), each with the CPU seconds of the driver's Python, the JVM and the
Python workers (from /proc), and at the end the JVM's CPU seconds by thread name (JIT compilers, planning,
tasks, collector), of all runs and of the last one. --conf KEY=VALUE and --driver-java-options set up its
session. With --input (e.g. scale.py's fps_4000000.parquet, kept by its --workdir) and --job-args
"--input-format fingerprints" it shows where a large run's CPU goes.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import tempfile
import time

from simhash_udf.evaluation.benchmark import (
    ProcessWatch,
    Tables,
    add_json_option,
    bench_session,
    best_each,
    checkout_name,
    checkouts,
    jvm_threads,
    run_job_process,
    stop_jvm,
    take_turns,
    write_sample_corpus,
)
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import run
from simhash_udf.spark import class_archive
from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS


def variants(args: argparse.Namespace, sample: str, work: str) -> dict[str, dict]:
    """name -> the run_job_process options of each variant the arguments ask for."""
    common = shlex.split(args.submit_args)
    out: dict[str, dict] = {checkout_name(code): {"code": code, "submit": True, "submit_args": common}
                            for code in checkouts(args.compare)}
    if class_archive.usable_archive():  # the same command without the class archive (scripts/ship.sh writes it)
        out["this checkout, without the class archive"] = {"submit": True, "submit_args": common,
                                                           "env": {class_archive.ARCHIVE_ENV: ""}}
    if args.local:
        out.update({f"{checkout_name(code)}, python -m (local)": {"code": code, "submit": False}
                    for code in checkouts(args.compare)})
    if args.java_options:
        # Java's application class-data sharing: one untimed run writes an archive of the classes it loaded
        archive = os.path.join(work, "spark-classes.jsa")
        run_job_process(os.path.join(work, "run"), job_argv(args, sample), submit=True,
                        submit_args=[*common, "--driver-java-options", f"-XX:ArchiveClassesAtExit={archive}"])
        out["short-run options"] = {"submit": True,
                                    "submit_args": [*common, "--driver-java-options", SHORT_RUN_JAVA_OPTIONS]}
        out["short-run options + class archive"] = {
            "submit": True,
            "submit_args": [*common, "--driver-java-options", f"{SHORT_RUN_JAVA_OPTIONS} -XX:SharedArchiveFile={archive}"]}
    if args.local_java_options:
        out["python -m, Spark's default JVM options"] = {"submit": False, "java_options": ""}
        out["python -m, short-run options"] = {"submit": False, "java_options": SHORT_RUN_JAVA_OPTIONS}
    return out


def job_argv(args: argparse.Namespace, path: str) -> list[str]:
    return ["--input", path, *shlex.split(args.job_args)]


def cold_runs(args: argparse.Namespace, tables: Tables, path: str, label: str, work: str) -> None:
    """The variants on one input, taking turns, best of --runs each; then one run each with the event log."""
    chosen = variants(args, path, work)
    out = os.path.join(work, "run")
    turns = take_turns({name: lambda v=v: run_job_process(out, job_argv(args, path), **v) for name, v in chosen.items()},
                       args.runs)
    best = {name: best_each(results) for name, results in turns.items()}
    for name, v in chosen.items():
        best[name]["spark_jobs"] = run_job_process(out, job_argv(args, path), event_log=True, **v)["spark_jobs"]
    if args.warm:
        best["this checkout, warm (one local[2] session, after an untimed run)"] = warm_runs(args, path, work)
    tables.table(["variant", "wall s (the command)", "job s (report total_seconds)", "stages s", "CPU s (all processes)",
                  "JVM peak MB", "Python peak MB", "Spark jobs"],
                 [[name, b["wall"], b["job"], b["stages"], b["cpu"], b["peak_mb_jvm"], b["peak_mb_python"], b["spark_jobs"]]
                  for name, b in best.items()],
                 [None, "{:.1f}", "{:.1f}", "{:.1f}", "{:.1f}", "{:.0f}", "{:.0f}", None],
                 title=f"{label}, local[2], new processes, best of {args.runs} (Spark jobs: one more run with the "
                       "event log; warm: the run's own):")
    first, *others = best
    for name in others:
        tables.note(f"{first} / {name}: wall {best[first]['wall'] / best[name]['wall']:.2f}, "
                    f"job {best[first]['job'] / best[name]['job']:.2f}")


def warm_runs(args: argparse.Namespace, path: str, work: str) -> dict:
    """This checkout's job on `path` in one local[2] session of this process (the job's own local settings), an
    untimed run first, then --runs timed ones: each figure's best (as best_each), the Spark jobs a run started
    (the session's job ids) and the peak memory by kind of process. The session and its JVM end afterwards."""
    spark = bench_session("bench-small-run-warm", master="local[2]")
    tracker, results = spark.sparkContext.statusTracker(), []
    for i in range(args.runs + 1):
        before = set(tracker.getJobIdsForGroup(None))
        start = time.perf_counter()
        with ProcessWatch() as watch:
            report = run(load_config([*job_argv(args, path), "--output", os.path.join(work, f"warm{i}")]), spark)
        seconds = time.perf_counter() - start
        if i:  # the first run compiles the JVM's code: untimed
            results.append({"wall": seconds, "job": seconds, "stages": sum(report["seconds"].values()),
                            "cpu": sum(watch.cpu.values()), **watch.figures(),
                            "spark_jobs": len(set(tracker.getJobIdsForGroup(None)) - before)})
    stop_jvm(spark)
    return best_each(results)


def in_session_runs(args: argparse.Namespace, tables: Tables, path: str, label: str, work: str) -> None:
    """--runs runs one after another in one local[2] session of this process, with their CPU by process."""
    conf = {"spark.ui.enabled": "false", **dict(kv.split("=", 1) for kv in args.conf)}
    if args.driver_java_options:
        conf["spark.driver.extraJavaOptions"] = args.driver_java_options
    spark = bench_session("bench-small-run", master="local[2]", conf=conf)
    if args.input is None:  # the sample's small runs: one shuffle partition per core
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    rows, threads_before = [], None
    for i in range(args.runs):
        threads_before = jvm_threads(os.getpid())
        start = time.perf_counter()
        with ProcessWatch() as watch:
            run(load_config([*job_argv(args, path), "--output", os.path.join(work, f"out{i}")]), spark)
        cpu, peak = watch.cpu, watch.peak_mb
        rows.append([i + 1, time.perf_counter() - start, cpu["driver"], cpu["jvm"], cpu["workers"], peak["jvm"],
                     peak["python"]])
        print(f"run {i + 1}: {rows[-1][1]:.1f} s", flush=True)
    threads = jvm_threads(os.getpid())
    spark.stop()
    tables.table(["run", "wall s", "driver Python CPU s", "JVM CPU s", "Python workers CPU s", "JVM peak MB",
                  "Python peak MB"], rows, [None, "{:.1f}", "{:.1f}", "{:.1f}", "{:.1f}", "{:.0f}", "{:.0f}"],
                 title=f"{label}, one local[2] session in this process, settings {conf}:")
    tables.table(["JVM thread", "CPU s"], [[n, s] for n, s in threads.most_common(8)], [None, "{:.1f}"],
                 title="The JVM's CPU by thread, all runs:")
    tables.table(["JVM thread", "CPU s"], [[n, s] for n, s in (threads - threads_before).most_common(8)],
                 [None, "{:.1f}"], title="The JVM's CPU by thread, the last run:")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", default="200", help="originals of the sample corpus, one or more sizes (with their "
                    "copies ~1.8x as many rows: 200 -> ~366)")
    ap.add_argument("--seed", type=int, default=3, help="the sample corpus's seed")
    ap.add_argument("--input", help="the runs' input instead of the sample")
    ap.add_argument("--job-args", default="", help="more job options for every run, e.g. '--input-format fingerprints'")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--compare", nargs="*", default=[], help="other checkouts to run beside this one")
    ap.add_argument("--submit-args", default="", help="more spark-submit arguments for every run, e.g. "
                    "'--conf spark.sql.codegen.wholeStage=false'")
    ap.add_argument("--local", action="store_true", help="also run each checkout through its own local entry "
                    "point (python -m simhash_udf.job.cli, local[2]), which starts the JVM itself")
    ap.add_argument("--java-options", action="store_true", help="also run this checkout with the short-run JVM "
                    "options (session.SHORT_RUN_JAVA_OPTIONS), and with them and a class archive of Spark's classes "
                    "(Java's application class-data sharing: one untimed run writes it first)")
    ap.add_argument("--local-java-options", action="store_true", help="also run this checkout through python -m "
                    "with Spark's default JVM options and with the short-run ones (SIMHASH_DEDUP_JAVA_OPTIONS)")
    ap.add_argument("--no-warm", dest="warm", action="store_false", help="no warm runs beside the cold ones")
    ap.add_argument("--in-session", action="store_true", help="the runs in one session of this process instead, "
                    "with their CPU by process and the JVM's CPU by thread")
    ap.add_argument("--conf", action="append", default=[], help="KEY=VALUE, a setting of the --in-session session")
    ap.add_argument("--driver-java-options", default="", help="the --in-session JVM's options")
    add_json_option(ap)
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    work = tempfile.mkdtemp(prefix="bench-small-")
    tables = Tables(args.json)
    measure = in_session_runs if args.in_session else cold_runs
    if args.input:
        measure(args, tables, os.path.abspath(args.input), args.input, work)
    for n in [] if args.input else [int(p) for p in args.pages.split(",")]:
        sample = os.path.join(work, f"sample-{n}.parquet")
        rows = write_sample_corpus(sample, n, args.seed)
        label = f"{n} originals of the sample ({rows} pages with their copies, {os.path.getsize(sample) / 1e6:.1f} MB)"
        measure(args, tables, sample, label, work)
    tables.write()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
