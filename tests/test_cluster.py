"""A real Spark standalone cluster (master + two workers on 127.0.0.1, started from the installed pyspark):
spark-submit with what scripts/ship.sh builds (the code as a --py-files zip, the packages as a packed virtualenv
on --archives) gives the same clusters as local mode, also when an executor is killed in the middle of the job."""
import glob
import os
import signal
import subprocess
import sys
import sysconfig
import time

import pandas as pd
import pytest

from simhash_udf.evaluation.sample_corpus import make_sample_corpus
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import run
from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from build_pyfiles import build  # noqa: E402
from ship import ship  # noqa: E402
from spark_cluster import SPARK_HOME, StandaloneCluster  # noqa: E402


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    path = tmp_path_factory.mktemp("crawl") / "crawl.parquet"
    pd.DataFrame(make_sample_corpus(250, seed=17)).to_parquet(path)
    return str(path)


@pytest.fixture(scope="module")
def local_clusters(spark, crawl, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("local") / "out")
    run(load_config(["--input", crawl, "--output", out]), spark)
    return read_clusters(out)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(str(tmp_path_factory.mktemp("cluster")), workers=2, cores=1, memory="2g") as c:
        yield c


@pytest.fixture(scope="module")
def shipped():
    """dist/simhash_udf.zip and dist/env.tar.gz of the checkout, as `bash scripts/ship.sh` builds them (the packed
    environment is built once per dependency change, about a minute, and kept in dist/)."""
    return ship()


def read_clusters(out):
    return pd.read_parquet(os.path.join(out, "clusters")).sort_values("id").reset_index(drop=True)


def submit_command(cluster, shipped, driver_python, script, *args):
    """spark-submit as docs/operations.md gives it for a cluster: the zip on --py-files, the packed environment on
    --archives and its Python for the executors; the driver (client mode) runs driver_python."""
    return [
        os.path.join(SPARK_HOME, "bin", "spark-submit"), "--master", cluster.url, "--py-files", shipped["py_files"],
        "--archives", shipped["archive"] + "#env", "--conf", "spark.pyspark.python=./env/bin/python",
        "--conf", f"spark.pyspark.driver.python={driver_python}",
        "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.executor.memory=1g", "--conf", "spark.ui.enabled=false",
        # driver and executors live for one small job: the client compiler and the parallel collector
        # (such a JVM spends more CPU compiling and collecting than running the job's tasks)
        "--driver-java-options", SHORT_RUN_JAVA_OPTIONS, "--conf", f"spark.executor.extraJavaOptions={SHORT_RUN_JAVA_OPTIONS}",
        script, *args,
    ]


@pytest.fixture(scope="module")
def python_without_checkout(tmp_path_factory):
    """The Python of the driver: this environment's packages but not this checkout. `-S`
    skips `site`, and with it the editable install's .pth file; site-packages comes last on PYTHONPATH
    (after what Spark puts there). So a Python worker that imports simhash_udf can only have it from the
    shipped zip, the way it reaches executors on YARN or Kubernetes."""
    path = tmp_path_factory.mktemp("python") / "python"
    site = sysconfig.get_paths()["purelib"]
    path.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec {sys.executable} -S "$@"\n')
    path.chmod(0o755)
    return str(path)


def test_without_the_zip_this_python_has_no_simhash_udf(python_without_checkout, tmp_path):
    """The premise of the cluster run below: its Python finds the job's packages, but simhash_udf only where
    Spark puts the zip (run outside the checkout, with the zip on PYTHONPATH or without)."""
    def where(*pythonpath):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath))
        proc = subprocess.run([python_without_checkout, "-c", "import numpy, pyarrow, jieba, mmh3, pyspark\n"
                               "import simhash_udf.core.fingerprint as f; print(f.__file__)"],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
        return proc.stdout.strip() if proc.returncode == 0 else proc.stderr

    assert "No module named 'simhash_udf'" in where(), where()
    zipped = build(str(tmp_path / "simhash_udf.zip"))
    assert where(zipped).startswith(zipped), where(zipped)


def executor_logs(cluster):
    return sorted(glob.glob(os.path.join(cluster.root, "worker-*", "app-*", "*", "stderr")))


def test_executor_killed_mid_job(cluster, shipped, python_without_checkout, crawl, local_clusters, tmp_path):
    """The documented command, spark-submit jobs/dedup_job.py, onto the cluster with the code shipped as the
    zip and the packages as the packed environment gives the clusters of local mode, also when one executor JVM
    is SIGKILLed while the job runs tasks: Spark replaces it and re-runs the lost work. The executors run the
    Python of the unpacked environment (./env/bin/python), which has no simhash_udf and no pyspark of its own,
    and the driver one that has simhash_udf from the zip alone (python_without_checkout), so the job's success
    also shows that the zip and the environment reached them.
    (This is also the suite's test of the spark-submit entry point: a second one in local mode cost ~30 s of
    a cold JVM for the same command. One cluster run proves all three: a separate run without a kill cost
    ~2 minutes of the CI budget, and a probe application that listed the workers' module paths ~25 s.)"""
    out = str(tmp_path / "out")
    before = set(executor_logs(cluster))
    log = open(tmp_path / "submit.log", "w+")
    job = subprocess.Popen(
        submit_command(cluster, shipped, python_without_checkout, os.path.join(ROOT, "jobs", "dedup_job.py"),
                       "--input", crawl, "--output", out, "--input-partitions", "12", "--shuffle-partitions", "6"),
        stdout=log, stderr=subprocess.STDOUT, text=True,
    )
    killed = None
    deadline = time.time() + 300
    try:
        while killed is None and time.time() < deadline and job.poll() is None:
            logs = [p for p in executor_logs(cluster) if p not in before]
            # mid-job: this application's executors have been running tasks for a while
            running = sum(open(p, errors="replace").read().count("Running task") for p in logs)
            pids = cluster.executor_pids()
            if running >= 12 and pids:
                os.kill(pids[0], signal.SIGKILL)
                killed = pids[0]
                still_running = job.poll() is None
            time.sleep(0.2)
        job.wait(timeout=600)
    finally:
        if job.poll() is None:
            job.kill()
    log.seek(0)
    output = log.read()
    assert killed is not None, "the job ended before an executor could be killed: make it longer"
    assert still_running
    assert killed not in cluster.executor_pids()
    assert job.returncode == 0, output[-3000:]
    assert os.path.exists(os.path.join(out, "_SUCCESS"))
    new_logs = [p for p in executor_logs(cluster) if p not in before]
    assert len(new_logs) >= 3, new_logs  # two executors, plus the one launched to replace the killed one
    # each executor unpacked the environment into its working directory, where ./env/bin/python points
    unpacked = [os.path.join(os.path.dirname(p), "env", "bin", "python") for p in new_logs]
    assert all(os.path.exists(p) for p in unpacked), unpacked
    pd.testing.assert_frame_equal(read_clusters(out), local_clusters)
