"""The Airflow DAG, loaded by real Airflow (installed by scripts/airflow_env.sh into .venv-airflow, apart from
the job's environment): no import errors, one SparkSubmitOperator task whose rendered spark-submit command
carries the dated input, output, history and run date, retries and the shipped code."""
import json
import os
import subprocess

import pytest

from simhash_udf.config import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DAY = "2026-11-21"


@pytest.fixture(scope="module")
def airflow_python():
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "airflow_env.sh")], capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def load_dags(airflow_python, dag_folder, tmp_path):
    env = dict(
        os.environ,
        AIRFLOW_HOME=str(tmp_path / "airflow-home"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        SIMHASH_DEDUP_HOME="/opt/simhash-dedup",
        SIMHASH_DEDUP_CRAWL_ROOT="hdfs:///crawl",
        SIMHASH_DEDUP_DEDUP_ROOT="hdfs:///dedup",
        SIMHASH_DEDUP_SPARK_CONN="spark_crawl",
        AIRFLOW_CONN_SPARK_CRAWL="spark://127.0.0.1:7077",
    )
    proc = subprocess.run([airflow_python, os.path.join(ROOT, "tests", "airflow_dag_check.py"), str(dag_folder), DAY],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("RESULT ", 1)[1])


def test_dag_loads_and_submits_the_dated_job(airflow_python, tmp_path):
    got = load_dags(airflow_python, os.path.join(ROOT, "dags"), tmp_path)
    assert got["import_errors"] == {}
    assert got["dag_ids"] == ["simhash_dedup"] and got["task_ids"] == ["dedup"]
    assert got["operator"] == "SparkSubmitOperator"
    assert got["schedule"] == "@daily" and got["max_active_runs"] == 1 and got["depends_on_past"]
    assert got["retries"] == 2 and got["conn_id"] == "spark_crawl"
    expected_args = ["--input", f"hdfs:///crawl/{DAY}", "--output", f"hdfs:///dedup/{DAY}",
                     "--history", "hdfs:///dedup/history", "--run-date", DAY, "--overwrite"]
    assert got["args"] == expected_args
    assert got["command"] == [
        "spark-submit", "--master", "spark://127.0.0.1:7077", "--py-files", "/opt/simhash-dedup/dist/simhash_udf.zip",
        "--name", f"simhash-dedup-{DAY}", "/opt/simhash-dedup/jobs/dedup_job.py", *expected_args,
    ]
    # the job accepts exactly these arguments
    cfg = load_config(got["args"])
    assert (cfg.history, cfg.run_date, cfg.overwrite) == ("hdfs:///dedup/history", DAY, True)


def test_a_broken_dag_is_reported(airflow_python, tmp_path):
    folder = tmp_path / "dags"
    folder.mkdir()
    source = open(os.path.join(ROOT, "dags", "simhash_dedup.py")).read()
    (folder / "simhash_dedup.py").write_text(source.replace("SparkSubmitOperator(\n", "SparkSubmitOperator(\n  bogus=1,\n"))
    got = load_dags(airflow_python, folder, tmp_path)
    assert "simhash_dedup" not in got["dag_ids"] and list(got["import_errors"]) != []
