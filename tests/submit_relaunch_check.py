"""A spark-submit application for tests/test_api.py: does what the job's entry point does before its session starts
for the input given (session.relaunch_if_faster: spark-submit run again with the large-run driver when
relaunch_wanted), then, in whichever JVM it ends up with, prints one JSON object: whether it was relaunched, the
JVM's largest heap, launch arguments and flags in effect (vmFlags), its configuration, this script's arguments and the
bytes of the class archives it mapped. No SparkContext is started.
`python submit_relaunch_check.py --own-jvm INPUT` (not under spark-submit): the JVM a `python -m` run of the job
would start for INPUT (session.small_run_conf), its launch arguments and mapped archive bytes."""
import json
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark import SparkConf, SparkContext  # noqa: E402
from pyspark.java_gateway import launch_gateway  # noqa: E402

from simhash_udf.spark.session import (  # noqa: E402
    RELAUNCHED_ENV,
    diagnostic_command,
    relaunch_if_faster,
    small_run_conf,
    spark_submit_conf,
)


def cds_mapped_bytes(gateway) -> int:
    """The bytes of the class-data sharing archives the JVM mapped ("size N" of HotSpot's vmInfo): the JDK's own and a
    given one."""
    vm_info = diagnostic_command(gateway, "vmInfo")
    mapped = [line for line in vm_info.splitlines() if line.startswith("CDS archive(s) mapped at")]
    return int(mapped[0].split("size ")[1].split(",")[0]) if mapped else 0


def jvm_arguments(jvm) -> list[str]:
    return list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())


logging.basicConfig(level=logging.INFO, stream=sys.stderr)
if sys.argv[1] == "--own-jvm":
    gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(small_run_conf(sys.argv[2]).items())))
    print(json.dumps({"jvm_arguments": jvm_arguments(gateway.jvm), "cds_mapped_bytes": cds_mapped_bytes(gateway)}))
    gateway.shutdown()
    sys.exit(0)
relaunch_if_faster(sys.argv[1], [os.path.abspath(__file__), *sys.argv[1:]])
conf = spark_submit_conf()
jvm = SparkContext._jvm
print(json.dumps({"relaunched": RELAUNCHED_ENV in os.environ,
                  "max_heap_mb": jvm.java.lang.Runtime.getRuntime().maxMemory() // 2**20,
                  "jvm_arguments": jvm_arguments(jvm),
                  "conf": dict(conf.getAll()), "arguments": sys.argv[1:],
                  "cds_mapped_bytes": cds_mapped_bytes(SparkContext._gateway),
                  "vm_flags": diagnostic_command(SparkContext._gateway, "vmFlags")}))
