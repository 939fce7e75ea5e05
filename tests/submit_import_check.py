"""A spark-submit application for tests/test_api.py: loads jobs/dedup_job.py as a module (its top level runs,
main does not) and prints where pyspark and py4j were imported from, as one JSON object."""
import importlib.util
import json
import os
import sys

entry = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "jobs", "dedup_job.py")
spec = importlib.util.spec_from_file_location("dedup_job", entry)
spec.loader.exec_module(importlib.util.module_from_spec(spec))
print(json.dumps({"pyspark": sys.modules["pyspark"].__file__, "py4j": sys.modules["py4j"].__file__}))
