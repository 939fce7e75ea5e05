"""A spark-submit application for tests/test_api.py: does what the job's entry point does before its session starts
for the input given (session.relaunch_for_large_input: spark-submit run again with the large-run driver when
relaunch_wanted), then, in whichever JVM it ends up with, prints one JSON object: whether it was relaunched, the
JVM's largest heap and launch arguments, its configuration, and this script's arguments. No SparkContext is started."""
import json
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark import SparkContext  # noqa: E402

from simhash_udf.spark.session import RELAUNCHED_ENV, relaunch_for_large_input, spark_submit_conf  # noqa: E402

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
relaunch_for_large_input(sys.argv[1], [os.path.abspath(__file__), *sys.argv[1:]])
conf = spark_submit_conf()
jvm = SparkContext._jvm
print(json.dumps({"relaunched": RELAUNCHED_ENV in os.environ,
                  "max_heap_mb": jvm.java.lang.Runtime.getRuntime().maxMemory() // 2**20,
                  "jvm_arguments": list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()),
                  "conf": dict(conf.getAll()), "arguments": sys.argv[1:]}))
