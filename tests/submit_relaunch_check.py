"""A spark-submit application for tests/test_api.py: does what the job's entry point does before its session starts
for the input given (session.relaunch_if_faster: spark-submit run again with the large-run driver when
relaunch_wanted), then, in whichever JVM it ends up with, prints one JSON object: whether it was relaunched, the
JVM's largest heap and launch arguments, its configuration, this script's arguments and the bytes of the class
archives it mapped. No SparkContext is started."""
import json
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark import SparkContext  # noqa: E402

from simhash_udf.spark.session import (  # noqa: E402
    RELAUNCHED_ENV,
    diagnostic_command,
    relaunch_if_faster,
    spark_submit_conf,
)

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
relaunch_if_faster(sys.argv[1], [os.path.abspath(__file__), *sys.argv[1:]])
conf = spark_submit_conf()
jvm = SparkContext._jvm
vm_info = diagnostic_command(SparkContext._gateway, "vmInfo")
mapped = [line for line in vm_info.splitlines() if line.startswith("CDS archive(s) mapped at")]
print(json.dumps({"relaunched": RELAUNCHED_ENV in os.environ,
                  "max_heap_mb": jvm.java.lang.Runtime.getRuntime().maxMemory() // 2**20,
                  "jvm_arguments": list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()),
                  "conf": dict(conf.getAll()), "arguments": sys.argv[1:],
                  # the class-data sharing archives the JVM mapped: "size N" bytes, the JDK's own and a given one
                  "cds_mapped_bytes": int(mapped[0].split("size ")[1].split(",")[0]) if mapped else 0}))
