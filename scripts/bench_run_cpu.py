"""Where a small run's CPU goes: several runs of the same sample pages in one local session, one after another,
with the CPU seconds of the driver's Python, the JVM and the Python workers per run (from /proc, Linux), and at
the end the JVM's CPU seconds by thread name (JIT compiler, planning, tasks, collector).

    python scripts/bench_run_cpu.py                                   # 200 pages, 5 runs, Spark's defaults
    python scripts/bench_run_cpu.py --java-options "-XX:+UseParallelGC" --conf spark.sql.codegen.cache.maxEntries=5000
    python scripts/bench_run_cpu.py --runs 2 --input /work/bs/fps_4000000.parquet --job-args "--input-format fingerprints"
        # a large run (bench_scale.py's input, written by it with --workdir /work/bs); the threads of the last run too
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import sys
import tempfile
import time

import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from simhash_udf.evaluation.sample_corpus import make_sample_corpus  # noqa: E402
from simhash_udf.job.config import load_config  # noqa: E402
from simhash_udf.job.pipeline import run  # noqa: E402
from simhash_udf.spark.session import get_spark  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _stat(path: str) -> tuple[str, list[str]]:
    text = open(path).read()
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def descendants(pid: int) -> dict[int, str]:
    """pid -> command name of every process below pid."""
    parent, name = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                comm, fields = _stat(f"/proc/{entry}/stat")
            except OSError:
                continue
            parent[int(entry)], name[int(entry)] = int(fields[1]), comm
    found, frontier = {}, [pid]
    while frontier:
        p = frontier.pop()
        for child, par in parent.items():
            if par == p and child not in found:
                found[child] = name[child]
                frontier.append(child)
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (without its children's)."""
    try:
        fields = _stat(f"/proc/{pid}/stat")[1]
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:13]) / TICK


def by_process() -> dict[str, float]:
    out = {"driver": cpu_seconds(os.getpid()), "jvm": 0.0, "workers": 0.0}
    for pid, name in descendants(os.getpid()).items():
        out["jvm" if "java" in name else "workers"] += cpu_seconds(pid)
    return out


def jvm_threads() -> collections.Counter:
    """CPU seconds of the JVM's threads, by name with numbers folded ("C2 CompilerThre", "Executor task l")."""
    threads = collections.Counter()
    for pid, name in descendants(os.getpid()).items():
        if "java" not in name:
            continue
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                comm, fields = _stat(f"/proc/{pid}/task/{tid}/stat")
            except OSError:
                continue
            threads[re.sub(r"[0-9#]+", "N", comm)] += (int(fields[11]) + int(fields[12])) / TICK
    return threads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=200, help="originals of the sample corpus (~1.8 rows each: 200 -> ~366)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--java-options", default="", help="the driver JVM's options (spark.driver.extraJavaOptions)")
    ap.add_argument("--conf", action="append", default=[], help="KEY=VALUE, a setting of the new session")
    ap.add_argument("--input", default=None, help="the runs' input instead of --pages sample pages")
    ap.add_argument("--job-args", default="", help="more job options, e.g. '--input-format fingerprints'")
    args = ap.parse_args()
    conf = {"spark.ui.enabled": "false", **dict(kv.split("=", 1) for kv in args.conf)}
    if args.java_options:
        conf["spark.driver.extraJavaOptions"] = args.java_options
    spark = get_spark("bench-run-cpu", master="local[2]", conf=conf)
    if args.input is None:  # the sample's small runs: one shuffle partition per core
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="bench-run-cpu-")
    path = args.input
    if path is None:
        path = os.path.join(work, "in.parquet")
        pd.DataFrame(make_sample_corpus(args.pages, seed=17)).to_parquet(path)
    print(f"{path if args.input else f'{args.pages} pages'}, local[2], settings {conf}")
    print("| run | wall s | driver Python CPU s | JVM CPU s | Python workers CPU s |\n|---|---|---|---|---|")
    threads_before = collections.Counter()
    for i in range(args.runs):
        before, start, threads_before = by_process(), time.time(), jvm_threads()
        run(load_config(["--input", path, "--output", os.path.join(work, f"out{i}"), *args.job_args.split()]), spark)
        wall, after = time.time() - start, by_process()
        print(f"| {i + 1} | {wall:.1f} | " + " | ".join(f"{after[k] - before[k]:.1f}" for k in before) + " |")
    threads = jvm_threads()
    print("\nJVM CPU seconds by thread, all runs:")
    for name, seconds in threads.most_common(8):
        print(f"  {name:32s} {seconds:7.1f}")
    print("the last run:")
    for name, seconds in (threads - threads_before).most_common(8):
        print(f"  {name:32s} {seconds:7.1f}")
    shutil.rmtree(work, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
