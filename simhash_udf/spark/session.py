"""SparkSession for the job: whatever spark-submit configured, or local mode on every core."""
from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def under_spark_submit() -> bool:
    """spark-submit starts Python with a gateway to its own JVM; plain `python -m` has none."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _half_of_ram() -> str:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "2g"
    return f"{max(1, total // 2**31)}g"


def get_spark(app_name: str = "simhash-dedup", master: str | None = None) -> SparkSession:
    builder = SparkSession.builder.appName(app_name)
    if master or not under_spark_submit():
        # Local workers must run this interpreter (the one with our dependencies), not the system python.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(master or os.environ.get("SIMHASH_DEDUP_MASTER", "local[*]"))
        builder = builder.config("spark.ui.showConsoleProgress", "false")
        # Local mode runs everything in the driver JVM: Spark's default of 1g is too small past ~10^6 pages.
        builder = builder.config("spark.driver.memory", os.environ.get("SIMHASH_DEDUP_DRIVER_MEMORY", _half_of_ram()))
    spark = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate()
    sc = spark.sparkContext
    if sc.master.startswith("local") and not sc.getConf().contains("spark.sql.shuffle.partitions"):
        # One machine: Spark's default of 200 shuffle partitions only adds task overhead.
        spark.conf.set("spark.sql.shuffle.partitions", str(max(4, 2 * sc.defaultParallelism)))
    return spark
