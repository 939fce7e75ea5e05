"""The worker warm-up of a one-off local run (spark.warm_workers): its worker is one the fingerprint stage's tasks
take (the pool of SQL's Python functions), it runs the run's own pass, and every feature choice the job accepts
warms without an error (a failed warm-up is only logged, so the job would not show it)."""
import os

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from simhash_udf.core.fingerprint import WEIGHTINGS
from simhash_udf.core.text import SEGMENTERS, TOKENIZERS
from simhash_udf.job.config import load_config
from simhash_udf.job.stages import pass_specs
from simhash_udf.spark.fingerprint import with_fingerprints
from simhash_udf.spark.warm_workers import (
    SAMPLE_PAGES,
    WARM_UP_GROUP,
    local_task_slots,
    start_worker_warm_up,
    warm_up_batches,
    warm_up_specs,
)


def specs_of(tmp_path, *options):
    (tmp_path / "in.parquet").touch()  # the configuration asks for an input that exists
    cfg = load_config(["--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "out"), *options])
    return pass_specs(cfg, cfg.features)


def parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the processes' parents from /proc")
def test_the_warm_up_readies_a_worker_of_the_fingerprint_stage_s_pool(spark, tmp_path):
    """Two jobs in WARM_UP_GROUP that succeed (one task, then one per core at once) and leave a worker per core;
    these stay alive, and their daemon is the one whose workers run
    SQL's mapInArrow (the fingerprint pass's kind): Spark keeps RDD workers in a pool of their own, whose daemon
    differs, and a worker warmed there would never serve the fingerprint stage."""
    def daemons_of_workers(batches):  # mapInArrow: the parent (the workers' daemon) of the task's worker
        for _ in batches:
            pass
        yield pa.record_batch({"daemon": pa.array([os.getppid()], pa.int64())})

    specs = specs_of(tmp_path)
    pages = spark.createDataFrame([(1, SAMPLE_PAGES[0], False)], "id long, text string, invalid_utf8 boolean")
    assert with_fingerprints(pages, "text", *specs).where(F.col("fingerprint").isNotNull()).count() == 1
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(WARM_UP_GROUP))
    warm_up = start_worker_warm_up(spark, specs)
    assert warm_up is not None  # the suite's session is local[2]
    pids = warm_up.join(300)
    cores = spark.sparkContext.defaultParallelism
    # a worker per task slot at least, each a process of its own (the barrier job's tasks ran at once; in this
    # session other tests' idle workers may serve it besides the first job's)
    assert not warm_up.thread.is_alive() and len(set(pids)) >= cores, (pids, cores)
    jobs = set(tracker.getJobIdsForGroup(WARM_UP_GROUP)) - before
    assert len(jobs) == 2 and all(tracker.getJobInfo(j).status == "SUCCEEDED" for j in jobs)
    sql_daemons = {row.daemon for row in spark.range(0, 2, 1, 2).mapInArrow(daemons_of_workers, "daemon long").collect()}
    for pid in pids:
        assert os.path.isdir(f"/proc/{pid}"), "a warmed worker did not stay"
        assert parent_pid(pid) in sql_daemons, (pids, sql_daemons)


@pytest.mark.parametrize("options", [
    *(["--tokenizer", t] for t in TOKENIZERS), *(["--segmenter", s] for s in SEGMENTERS),
    *(["--weighting", w] for w in WEIGHTINGS), ["--sentence-keys", "3"], ["--short-text-chars", "0"],
    ["--min-similarity", "0"],
])
def test_every_feature_choice_warms_without_an_error(tmp_path, options):
    """warm_up_batches with the specifications of the run's options: the pass runs on SAMPLE_PAGES (tfidf-corpus as
    tfidf, its idf table not made yet), and the task's one row is this process's id."""
    specs = warm_up_specs(specs_of(tmp_path, *options))
    if "tfidf-corpus" in options:
        assert specs[0].weighting == "tfidf" and specs[0].tokenizer == specs_of(tmp_path)[0].tokenizer
    out = list(warm_up_batches(iter([pa.record_batch({"id": pa.array([0], pa.int64())})]), specs))
    assert len(out) == 1 and out[0].to_pylist() == [{"pid": os.getpid()}]


def test_the_barrier_job_takes_the_local_masters_task_slots():
    """The warm-up's barrier job has one task per slot of the local master, never more (Spark would refuse it and
    retry its submission for minutes), and there is none on another master."""
    assert local_task_slots("local", 8) == 1 and local_task_slots("local[2]", 8) == 2
    assert local_task_slots("local[*]", 6) == 6 and local_task_slots("local[4, 3]", 8) == 4
    assert local_task_slots("local[*,2]", 3) == 3 and local_task_slots("local[4]", 8, task_cpus=2) == 2
    for master in ("local-cluster[2,1,1024]", "spark://127.0.0.1:7077", "yarn"):
        assert local_task_slots(master, 8) == 0
