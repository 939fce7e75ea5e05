"""One local SparkSession for the whole suite (starting one costs about 5 s)."""
import os
import sys

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from simhash_udf.spark.session import get_spark

    session = get_spark("simhash-dedup-tests", master="local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
