"""A one-off local run's Python workers started while the driver reads the input (start_worker_warm_up).

A new run's first fingerprint task waits for Spark to start the workers' daemon, fork a worker, import numpy, pyarrow,
this package and the segmenter, and build the pass's character tables in its first batch: about a second in which
the task holds a core, on the critical path of a small run. Meanwhile the read stage keeps the driver busy planning
its few small jobs and leaves a task slot idle. A Spark job of one task started beside it (in a thread) runs the
fingerprint pass on a few sample pages in a worker that then returns, ready, to the pool the fingerprint stage
takes its workers from: a mapInArrow like the stage's, since Spark keeps the workers of SQL's Python functions and
those of RDDs in separate pools (their environments differ). One worker first, so that the other task slots stay
with the read stage's jobs; then one per task slot, in a barrier job whose tasks run at once (each on a worker of its
own): an input of one Parquet row group is split by one task, which leaves the other cores idle while the new
workers start, and the fingerprint stage's first tasks then all find a worker ready."""
from __future__ import annotations

import dataclasses
import logging
import os
import re
import time
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa
from pyspark import InheritableThread
from pyspark.sql import SparkSession

from ..core.fingerprint import FeatureSpec
from .fingerprint import fingerprint_record_batches

log = logging.getLogger("simhash_dedup")

# Pages that take every path of the pass: Han runs for the segmenter, ASCII words, full-width text, sentences for
# the keys, a short page, and a null text
SAMPLE_PAGES = ["重复的网页在这里。A copy of a page, 中文和English混排：ＡＢＣ１２３！第二句话也在这里，还有第三句。",
                "短页", None]
WARM_UP_GROUP = "simhash-dedup-worker-warm-up"
WARM_UP_DESCRIPTION = "simhash-dedup: a Python worker started for the fingerprint stage"


def warm_up_batches(batches: Iterator[pa.RecordBatch], specs: tuple) -> Iterator[pa.RecordBatch]:
    """One batch holding this worker's process id, after the fingerprint pass (specs: with_fingerprints' arguments
    after the text column) has run once on SAMPLE_PAGES here: its imports done, its tables built."""
    for _ in batches:
        pass
    sample = pa.record_batch({"text": pa.array(SAMPLE_PAGES, pa.string()),
                              "invalid_utf8": pa.array([False] * len(SAMPLE_PAGES))})
    for _ in fingerprint_record_batches(iter([sample]), "text", *specs):
        pass
    yield pa.record_batch({"pid": pa.array([os.getpid()], pa.int64())})


def warm_up_specs(specs: tuple) -> tuple:
    """with_fingerprints' arguments after the text column as a warm-up can take them before the run's corpus idf
    table exists: features of weighting "tfidf-corpus" as "tfidf" (the same tokenizer and segmenter, so the same
    imports), the others as they are."""
    spec: FeatureSpec = specs[0]
    if spec.weighting == "tfidf-corpus":
        spec = dataclasses.replace(spec, weighting="tfidf", idf=None)
    return (spec, *specs[1:])


@dataclass
class WorkerWarmUp:
    """A started warm-up: its thread, and once its job has ended the process id of the worker it made ready (none
    when it failed)."""

    thread: InheritableThread
    worker_pids: list[int] = field(default_factory=list)

    def join(self, timeout: float | None = None) -> list[int]:
        self.thread.join(timeout)
        return self.worker_pids


def local_task_slots(master: str, available_cores: int, task_cpus: int = 1) -> int:
    """The task slots of a local master (local, local[N], local[*], local[N, F]: N threads, or available_cores,
    the JVM's count, for *), each task taking task_cpus; 0 for any other master. A barrier job of more tasks than
    there are slots is refused, and Spark retries its submission for minutes: its tasks are these slots, not the
    session's default parallelism, which a setting may raise above them."""
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if m is None:
        return 0
    cores = 1 if m.group(1) is None else available_cores if m.group(1) == "*" else int(m.group(1))
    return cores // max(1, task_cpus)


def warm_up_job(spark: SparkSession, tasks: int, specs: tuple, barrier: bool = False) -> list:
    """A Spark job of `tasks` warm_up_batches tasks (barrier: all at once, in a barrier stage); their rows."""
    return spark.range(0, tasks, 1, tasks).mapInArrow(lambda batches: warm_up_batches(batches, specs), "pid long",
                                                      barrier=barrier).collect()


def start_worker_warm_up(spark: SparkSession, specs: tuple) -> WorkerWarmUp | None:
    """Start the warm-up jobs (warm_up_batches in one task, then in one per task slot at once, local_task_slots; job
    group WARM_UP_GROUP) in a thread, for a local session of two or more cores (None otherwise: on a cluster the task
    would warm one executor's worker of many, and with one core it would take the read stage's only slot). specs:
    with_fingerprints' arguments after the text column. A failure is only logged: the fingerprint stage starts its
    own workers and reports its own errors."""
    sc = spark.sparkContext
    if not sc.master.startswith("local") or sc.defaultParallelism < 2:
        return None
    specs = warm_up_specs(specs)
    slots = local_task_slots(sc.master, sc._jvm.java.lang.Runtime.getRuntime().availableProcessors(),
                             int(sc.getConf().get("spark.task.cpus", "1")))

    def warm_up() -> None:
        sc.setJobGroup(WARM_UP_GROUP, WARM_UP_DESCRIPTION)
        start = time.perf_counter()
        try:
            rows = warm_up_job(spark, 1, specs)
            # then every slot's worker, in one barrier job: its tasks run at once, so each takes a worker of its
            # own (the first one ready, the others new); it waits for slots the read stage leaves free, and its
            # new workers start while the fingerprint stage's first task (the input's split) holds one core
            if slots >= 2:
                rows += warm_up_job(spark, slots, specs, barrier=True)
        except Exception as exc:  # e.g. the session stopped by a failed run before the task ran
            log.debug("the Python workers' warm-up failed: %s", exc)
            return
        started.worker_pids.extend(sorted({row.pid for row in rows}))
        log.debug("Python worker %s ready in %.1f s", started.worker_pids, time.perf_counter() - start)

    started = WorkerWarmUp(InheritableThread(target=warm_up, daemon=True))
    started.thread.start()
    return started
