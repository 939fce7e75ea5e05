"""The job driver's numpy converters (simhash_udf.spark.py4j_converters): py4j asks them what PySpark's would answer
and they convert the same, without importing pyspark.testing or pandas (in a fresh interpreter, where PySpark's own
converters do import them), and the job's command line puts them in place before its first JVM call (the relaunch
decision's)."""
import json
import subprocess
import sys

import numpy as np
from pyspark.sql import types

from simhash_udf.spark import py4j_converters

OBJECTS = [np.arange(3), np.arange(4).reshape(2, 2), np.int64(7), np.float32(0.5), np.bool_(True), np.str_("a"),
           7, 0.5, "a", [1, 2], None, np.array([], dtype=np.float64)]

FRESH = """
import json, sys
from py4j import protocol
import pyspark.sql.types  # PySpark registers its converters
{replace}
for arg in (1, "a", 0.5):  # what py4j does with each argument of a call
    for converter in protocol.INPUT_CONVERTER:
        converter.can_convert(arg)
print(json.dumps({{"pandas": "pandas" in sys.modules, "testing": "pyspark.testing" in sys.modules,
                  "kinds": [type(c).__module__ + "." + type(c).__name__ for c in protocol.INPUT_CONVERTER]}}))
"""


def fresh(replace: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", FRESH.format(replace=replace)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_lighter_converters_answer_and_convert_as_pysparks(spark):
    client = spark.sparkContext._gateway._gateway_client
    pairs = [(types.NumpyArrayConverter(), py4j_converters.NumpyArrayConverter()),
             (types.NumpyScalarConverter(), py4j_converters.NumpyScalarConverter())]
    for theirs, ours in pairs:
        for obj in OBJECTS:
            assert ours.can_convert(obj) == theirs.can_convert(obj), (type(theirs).__name__, obj)
            if theirs.can_convert(obj):
                a, b = theirs.convert(obj, client), ours.convert(obj, client)
                if isinstance(obj, np.ndarray):  # Java arrays: compared by their elements
                    assert list(a) == list(b) == obj.tolist()
                else:
                    assert a == b == obj.item()
    jvm = spark.sparkContext._jvm
    assert jvm.java.lang.String.valueOf(np.int64(41) + 1) == "42"  # through py4j's list, whichever converters it holds


def test_the_replacement_imports_neither_pyspark_testing_nor_pandas():
    plain = fresh("")
    assert plain["pandas"] and plain["testing"]  # PySpark's own converters: what the replacement is for
    lighter = fresh("from simhash_udf.spark.py4j_converters import use_lighter_numpy_converters\n"
                    "assert use_lighter_numpy_converters() == 2 and use_lighter_numpy_converters() == 0")
    assert not lighter["pandas"] and not lighter["testing"]
    ours = "simhash_udf.spark.py4j_converters."
    assert lighter["kinds"] == [k.replace("pyspark.sql.types.", ours) if k.startswith("pyspark.sql.types.Numpy") else k
                                for k in plain["kinds"]]  # in place: py4j asks them in the same order


def test_the_command_line_puts_them_in_place_before_any_jvm_call(tmp_path):
    """cli.main replaces them before its first JVM call (the relaunch decision reads the JVM's configuration): what
    py4j holds when main reaches relaunch_if_faster, here stopped there."""
    pages = tmp_path / "in.jsonl"
    pages.write_text('{"id": 1, "text": "a page"}\n')
    probe = f"""
import json, sys
from py4j import protocol
from simhash_udf.job import cli
from simhash_udf.spark import session
def stop_here(*args):
    print(json.dumps([type(c).__module__ for c in protocol.INPUT_CONVERTER if "Numpy" in type(c).__name__]))
    raise SystemExit(0)
session.relaunch_if_faster = stop_here
sys.exit(cli.main(["--input", {str(pages)!r}, "--output", {str(tmp_path / "out")!r}], script="job.py"))
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == ["simhash_udf.spark.py4j_converters"] * 2
