"""A spark-submit application for tests/test_api.py: prepares spark-submit's JVM as the job does before its
session starts (session.prepare_job_jvm, the first half of start_job_session) for the input given, then prints one
JSON object: the settings job_session_conf would add to the session (none for a key the user gave with --conf),
those it would add for a small local run of that input (small_local_run_settings), and the compiler directives
of this JVM that keep the optimising compiler (C2) off every method, and those that keep it for some. No
SparkContext is started: the JVM and its configuration are spark-submit's own."""
import json
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark import SparkContext  # noqa: E402

from simhash_udf.spark.session import (  # noqa: E402
    diagnostic_command,
    job_session_conf,
    prepare_job_jvm,
    small_local_run_settings,
)

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
added = job_session_conf(None)  # first, as get_spark may call it: before anything has connected to the JVM
small_run = job_session_conf(None, small_local_run_settings(sys.argv[1]))
conf = prepare_job_jvm(sys.argv[1])
listing = diagnostic_command(SparkContext._gateway, "compilerDirectivesPrint")
# each directive: "Directive:" (or "Directive: (default)"), " matching: PATTERN", its c1 block, then its c2 block
blocks = listing.split("Directive:")[1:]
c2_off = [b for b in blocks if not b.startswith(" (default)") and " matching: *.*" in b
          and "Exclude:true" in b.split("c2 directives:")[1]]
c2_kept = [b.split(" matching: ")[1].split()[0] for b in blocks if not b.startswith(" (default)")
           and "Exclude:false" in b.split("c2 directives:")[1] and " matching: *.*" not in b]
print(json.dumps({"session_settings_added": added, "small_run_settings_added": small_run,
                  "c2_excluded_everywhere": len(c2_off), "c2_kept_for": c2_kept}))
