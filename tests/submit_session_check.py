"""A spark-submit application for tests/test_api.py: starts the job's session as the job does
(session.start_job_session) on the input given, then prints one JSON object: PySpark's DataFrame debugging as the
session has it, and the compiler directives of this JVM that keep the optimising compiler (C2) off every method."""
import json
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simhash_udf.spark.session import diagnostic_command, start_job_session  # noqa: E402

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
spark = start_job_session(sys.argv[1])
listing = diagnostic_command(spark.sparkContext._gateway, "compilerDirectivesPrint")
# each directive: "Directive:" (or "Directive: (default)"), " matching: PATTERN", its c1 block, then its c2 block
blocks = listing.split("Directive:")[1:]
c2_off = [b for b in blocks if not b.startswith(" (default)") and " matching: *.*" in b
          and "Exclude:true" in b.split("c2 directives:")[1]]
print(json.dumps({"debugging": spark.conf.get("spark.python.sql.dataFrameDebugging.enabled"),
                  "c2_excluded_everywhere": len(c2_off)}))
spark.stop()
