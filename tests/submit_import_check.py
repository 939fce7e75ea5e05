"""A spark-submit application for tests/test_api.py: loads jobs/dedup_job.py as a module (its top level runs,
main does not), starts the job's session (session.get_spark) and prints, as one JSON object, where pyspark and py4j
were imported from in this driver and in a Python worker of that session."""
import importlib.util
import json
import os
import sys

entry = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "jobs", "dedup_job.py")
spec = importlib.util.spec_from_file_location("dedup_job", entry)
spec.loader.exec_module(importlib.util.module_from_spec(spec))
driver = {"pyspark": sys.modules["pyspark"].__file__, "py4j": sys.modules["py4j"].__file__}

from simhash_udf.spark.session import get_spark  # noqa: E402


def imported_from(_):
    import py4j
    import pyspark
    yield {"pyspark": pyspark.__file__, "py4j": py4j.__file__}


spark = get_spark()
(worker,) = spark.sparkContext.parallelize([0], 1).mapPartitions(imported_from).collect()
print(json.dumps({"driver": driver, "worker": worker,
                  "daemon": spark.sparkContext.getConf().get("spark.python.daemon.module", "pyspark.daemon")}))
spark.stop()
