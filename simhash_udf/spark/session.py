"""SparkSession for the job: whatever spark-submit configured, or local mode on every core."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

from pyspark.sql import SparkSession

# JVM options for a JVM that lives for one small run (a test's spark-submit, a cluster test's executors): the
# client compiler only and the parallel collector. Such a JVM spends more CPU compiling and collecting than
# running tasks; on the 2-core machine the cluster test's run took 117 -> 65 s with them. Not for real runs:
# the optimising compiler pays off within minutes of work, and the job never sets them itself.
SHORT_RUN_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"

# JVM option for a large run on few cores (millions of pages): the JIT compiles a method only after 3x the usual
# invocations. A large run's hot loops reach that at once, while many generated classes that stay lukewarm are
# no longer compiled by C2, whose threads took ~25% of the JVM's CPU on 2 cores (4M stored fingerprints in a new
# JVM: 118-126 s instead of 133-136 s). Not the default: the test suite's many small runs in one JVM took 7%
# longer with it. For spark-submit pass it with --driver-java-options (and spark.executor.extraJavaOptions on a
# cluster); a local run started with `python -m` takes it from SIMHASH_DEDUP_JAVA_OPTIONS.
LARGE_RUN_JAVA_OPTIONS = "-XX:CompileThresholdScaling=3"


def under_spark_submit() -> bool:
    """spark-submit starts Python with a gateway to its own JVM; plain `python -m` has none."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _half_of_ram() -> str:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "2g"
    return f"{max(1, total // 2**31)}g"


def with_java_options(conf: dict[str, str] | None) -> dict[str, str]:
    """conf with SIMHASH_DEDUP_JAVA_OPTIONS (e.g. LARGE_RUN_JAVA_OPTIONS) before the caller's own
    spark.driver.extraJavaOptions, for a JVM that pyspark starts; without either, the key is left unset (a
    spark-defaults.conf value stays)."""
    conf = dict(conf or {})
    options = " ".join(filter(None, (os.environ.get("SIMHASH_DEDUP_JAVA_OPTIONS", "").strip(),
                                     conf.get("spark.driver.extraJavaOptions", "").strip())))
    if options:
        conf["spark.driver.extraJavaOptions"] = options
    return conf


def get_spark(app_name: str = "simhash-dedup", master: str | None = None,
              conf: dict[str, str] | None = None) -> SparkSession:
    """The active session as it is (a caller's: never reconfigured), or a new one for the job (with `conf`
    added to its settings)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    if master or not under_spark_submit():
        # Local workers must run this interpreter (the one with our dependencies), not the system python.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(master or os.environ.get("SIMHASH_DEDUP_MASTER", "local[*]"))
        builder = builder.config("spark.ui.showConsoleProgress", "false")
        # Local mode runs everything in the driver JVM: Spark's default of 1g is too small past ~10^6 pages.
        builder = builder.config("spark.driver.memory", os.environ.get("SIMHASH_DEDUP_DRIVER_MEMORY", _half_of_ram()))
        conf = with_java_options(conf)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate()
    sc = spark.sparkContext
    if sc.master.startswith("local") and not sc.getConf().contains("spark.sql.shuffle.partitions"):
        # One machine: Spark's default of 200 shuffle partitions only adds task overhead.
        spark.conf.set("spark.sql.shuffle.partitions", str(max(4, 2 * sc.defaultParallelism)))
    return spark


# Spark aggregates in two phases: each map task pre-aggregates its rows in a hash map before the shuffle. Grouped
# by a column that is nearly unique (the ids, the fingerprints), that map holds every row and saves nothing.
# Spark 4.3's setting skips the phase (older versions ignore it). 10M stored pages, same session: the id check
# 6.2-8.2 -> 4.3-4.9 s, the count of pages per fingerprint 7.0-7.3 -> 4.6-5.1 s.
UNIQUE_KEY_SETTINGS = {"spark.sql.execution.bypassPartialAggregation": "true"}


@contextmanager
def unique_key_aggregation(spark: SparkSession):
    """Plan the aggregations of the block in one phase (UNIQUE_KEY_SETTINGS): for groups by a nearly unique key.
    A DataFrame persisted in the block keeps that plan. A global aggregation (no key, e.g. a count) planned in
    the block would bring every row to one task, so count outside it."""
    with scoped_settings(spark, UNIQUE_KEY_SETTINGS):
        yield


def checkpoint_dir(spark: SparkSession) -> str | None:
    """The SparkContext's checkpoint directory, or None when it has none."""
    option = spark.sparkContext._jsc.sc().getCheckpointDir()
    return option.get() if option.isDefined() else None


@contextmanager
def scoped_settings(spark: SparkSession, conf: dict[str, str], checkpoints: str | None = None):
    """Run the block with these session settings (and checkpoint directory), then put back what the caller
    had: the job and the API never leave a caller's session changed, nor pointing into a removed directory."""
    before = {key: spark.conf.get(key, None) for key in conf}
    before_dir = checkpoint_dir(spark)
    for key, value in conf.items():
        spark.conf.set(key, value)
    if checkpoints:
        spark.sparkContext.setCheckpointDir(checkpoints)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        if checkpoints:
            _set_checkpoint_dir(spark, before_dir)


def _set_checkpoint_dir(spark: SparkSession, path: str | None) -> None:
    """Put the checkpoint directory back as it was, or unset it: setCheckpointDir would add a new random
    subdirectory and cannot unset (the SparkContext's own setter is reached through the JVM gateway)."""
    jvm = spark.sparkContext._jvm
    getattr(spark.sparkContext._jsc.sc(), "checkpointDir_$eq")(jvm.scala.Option.apply(path))
