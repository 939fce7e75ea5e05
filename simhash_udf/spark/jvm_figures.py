"""What the driver's JVM spent besides running tasks: the time of its JIT compilers and of its garbage collections,
from the JVM's own management beans (java.lang.management, read through the gateway; no agent, no log). In local
mode that JVM runs every task too, so the figures are the whole run's; on a cluster they are the driver's alone.

A cold run pays more of both than a run in a warm process: a new JVM compiles Spark's code as well as the run's
generated classes (its compiler threads take cores from the tasks on a small machine), and its heap starts small
and grows by collections. report.json's driver_jvm and the cold benchmarks print them beside the stage times."""
from __future__ import annotations

from pyspark.sql import SparkSession


def jvm_figures(spark: SparkSession) -> dict:
    """The driver JVM's totals since it started: compile_seconds (the JIT compilers' time, summed over their
    threads), gc_seconds and gc_collections (every collector's, summed: ParallelGC's young and full collections,
    G1's young and mixed pauses), heap_max_mb (the heap's limit) and uptime_seconds."""
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    compiler = management.getCompilationMXBean()
    timed = compiler is not None and compiler.isCompilationTimeMonitoringSupported()
    compile_ms = compiler.getTotalCompilationTime() if timed else 0
    gc_ms = gc_count = 0
    for bean in management.getGarbageCollectorMXBeans():
        gc_ms += max(0, bean.getCollectionTime())  # -1: not known for this collector
        gc_count += max(0, bean.getCollectionCount())
    heap = management.getMemoryMXBean().getHeapMemoryUsage()
    return {"compile_seconds": round(compile_ms / 1000, 3), "gc_seconds": round(gc_ms / 1000, 3),
            "gc_collections": int(gc_count), "heap_max_mb": round(heap.getMax() / 2**20),
            "uptime_seconds": round(management.getRuntimeMXBean().getUptime() / 1000, 3)}


def jvm_figures_since(spark: SparkSession, before: dict) -> dict:
    """jvm_figures less an earlier reading of the same JVM (`before`): what one run in a warm process added."""
    now = jvm_figures(spark)
    return {k: (now[k] if k == "heap_max_mb" else round(now[k] - before[k], 3)) for k in now}
