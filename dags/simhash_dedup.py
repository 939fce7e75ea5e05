"""Airflow DAG: near-duplicate detection of each day's crawl with simhash-dedup, against every earlier day.

One task a day: spark-submit jobs/dedup_job.py on CRAWL_ROOT/<ds>/, writing DEDUP_ROOT/<ds>/ and appending the
day to the incremental history DEDUP_ROOT/history (run_date=<ds>). The history must be written in date order,
so runs wait for the previous day (depends_on_past, one active run at a time); missed days are caught up in
order (`airflow dags backfill`).

Settings (environment of the DAG processor / scheduler, read when the file is parsed; no database access):
  SIMHASH_DEDUP_HOME        checkout or install of simhash-dedup (jobs/, dist/simhash_udf.zip); default: this repo
  SIMHASH_DEDUP_CRAWL_ROOT  where the crawler puts each day's pages (one directory per date), e.g. hdfs:///crawl
  SIMHASH_DEDUP_DEDUP_ROOT  where each day's output and the history go, e.g. hdfs:///dedup
  SIMHASH_DEDUP_SPARK_CONN  Airflow connection of the Spark master (default spark_default)
The three paths are also DAG params, so a manual run can point elsewhere.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Param

HOME = os.environ.get("SIMHASH_DEDUP_HOME", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

with DAG(
    dag_id="simhash_dedup",
    description="Near-duplicate pages of the day's crawl, against all earlier days (simhash-dedup)",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # the history is appended to in date order
    params={
        "crawl_root": Param(os.environ.get("SIMHASH_DEDUP_CRAWL_ROOT", "/data/crawl"), type="string"),
        "dedup_root": Param(os.environ.get("SIMHASH_DEDUP_DEDUP_ROOT", "/data/dedup"), type="string"),
    },
    default_args={
        "owner": "crawl",
        "depends_on_past": True,
        "retries": 2,
        "retry_delay": timedelta(minutes=10),
        "retry_exponential_backoff": True,
        "execution_timeout": timedelta(hours=6),
    },
    tags=["crawl", "dedup"],
) as dag:
    SparkSubmitOperator(
        task_id="dedup",
        conn_id=os.environ.get("SIMHASH_DEDUP_SPARK_CONN", "spark_default"),
        application=os.path.join(HOME, "jobs", "dedup_job.py"),
        py_files=os.path.join(HOME, "dist", "simhash_udf.zip"),
        name="simhash-dedup-{{ ds }}",
        application_args=[
            "--input", "{{ params.crawl_root }}/{{ ds }}",
            "--output", "{{ params.dedup_root }}/{{ ds }}",
            "--history", "{{ params.dedup_root }}/history",
            "--run-date", "{{ ds }}",
            # A retry or a cleared task recomputes the day: the job is deterministic, reads only the history
            # before {{ ds }} and replaces the day's history partition, so replacing the output is safe.
            "--overwrite",
        ],
    )
