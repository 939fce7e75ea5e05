"""Airflow DAG: near-duplicate detection of each day's crawl with simhash-dedup, against every earlier day.
Loads on Airflow 2.x (2.11, with apache-airflow-providers-apache-spark >= 6) and 3.x.

Three tasks a day (the day <ds> is the data interval that just ended, {{ data_interval_start | ds }}):
  wait_for_input  the day's input (param input_path, default CRAWL_ROOT/<ds>; for a glob, its directory) has its
                  marker file, if one is named, or else exists and has not
                  changed for input_quiet_minutes; waits until the day's end + input_wait_hours, then fails at once
                  with what to do (no retries)
  dedup           spark-submit jobs/dedup_job.py on it with the job's options of the params (text_col,
                  input_format, config, job_options, ...), writing DEDUP_ROOT/<ds>/ and appending the day to the
                  history DEDUP_ROOT/history (run_date=<ds>); killed (timeout, marked failed), it first sends
                  the job's driver SIGTERM so that the job cleans up, then spark-submit is killed
  check_result    reads DEDUP_ROOT/<ds>/report.json; fails with the numbers when the run read 0 rows or its
                  duplicate rate is outside [min_duplicate_rate, max_duplicate_rate]; otherwise hands the summary
                  downstream as XCom (return_value) and as the extra of an event of the Asset (Airflow 2: Dataset)
                  DEDUP_ROOT
The history must be written in date order: `dedup` waits for the previous day's `dedup` and `check_result`
(depends_on_past + wait_for_downstream), so a missing or rejected day holds the later days' dedup back until an
operator acts (docs/operations.md, "Airflow").

Settings (environment of the DAG processor / scheduler and the workers, read when the file is parsed; no
database access):
  SIMHASH_DEDUP_HOME        checkout of simhash-dedup (jobs/, and dist/simhash_udf.zip and dist/env.tar.gz built
                            by scripts/ship.sh); default: the checkout this file is in
  SIMHASH_DEDUP_SPARK_CONN  Airflow connection of the Spark master (default spark_default)
  SIMHASH_DEDUP_ON_FAILURE  module:function called with the context when a task fails (default: log an ERROR)
  SIMHASH_DEDUP_HADOOP_FS   command for paths that are not local (default "hdfs dfs")
  SIMHASH_DEDUP_<PARAM>     default of each DAG param below (e.g. SIMHASH_DEDUP_CRAWL_ROOT=hdfs:///crawl,
                            SIMHASH_DEDUP_SPARK_CONF='{"spark.yarn.queue": "crawl"}'); a manual run can override them
"""
from __future__ import annotations

import os
import sys
from datetime import datetime, timedelta, timezone

from airflow import __version__ as AIRFLOW_VERSION
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

AIRFLOW_3 = int(AIRFLOW_VERSION.split(".")[0]) >= 3
if AIRFLOW_3:
    from airflow.providers.standard.operators.python import PythonOperator
    from airflow.providers.standard.sensors.python import PythonSensor
    from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param
    from airflow.sdk.exceptions import AirflowFailException
else:  # Airflow 2.x: the same things under their older names
    from airflow.datasets import Dataset
    from airflow.exceptions import AirflowFailException
    from airflow.models.dag import DAG
    from airflow.models.param import Param
    from airflow.operators.python import PythonOperator
    from airflow.sensors.python import PythonSensor
    from airflow.timetables.interval import CronDataIntervalTimetable

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # Airflow puts the DAG folder there; a bare DagBag may not
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simhash_dedup_ops as ops  # noqa: E402

HOME = os.environ.get("SIMHASH_DEDUP_HOME", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def optional(name: str, kind=str, **schema) -> Param:
    types = {str: "string", int: "integer", float: "number"}
    return Param(ops.param_default(name, None, kind), type=["null", types[kind]], **schema)


PARAMS = {
    "crawl_root": Param(ops.param_default("crawl_root", "/data/crawl"), type="string",
                        description="the crawl's root: {crawl_root} in input_path"),
    "input_path": Param(ops.param_default("input_path", ops.DEFAULT_INPUT_PATH), type="string",
                        description="the day's --input: a path or glob with {crawl_root}, {ds}, {ds_nodash}, {yyyy}, "
                                    "{mm}, {dd}, e.g. {crawl_root}/dt={ds} or {crawl_root}/{yyyy}/{mm}/{dd}/*.wet.gz"),
    "dedup_root": Param(ops.param_default("dedup_root", "/data/dedup"), type="string",
                        description="each day's output <dedup_root>/<ds> and the history <dedup_root>/history"),
    "input_marker": Param(ops.param_default("input_marker", ""), type="string",
                          description="file the crawler writes last into the day's directory (e.g. _SUCCESS); "
                                      "empty: the directory itself"),
    "input_quiet_minutes": Param(ops.param_default("input_quiet_minutes", 30.0, float), type="number", minimum=0,
                                 maximum=1440,
                                 description="without an input_marker: the day's directory counts as complete once "
                                             "nothing in it has changed for this long (0: as soon as it exists)"),
    "input_wait_hours": Param(ops.param_default("input_wait_hours", 6.0, float), type="number", minimum=0, maximum=48,
                              description="how long after the day's end its input may still come"),
    "min_duplicate_rate": Param(ops.param_default("min_duplicate_rate", 0.0, float), type="number", minimum=0, maximum=1,
                                description="check_result fails below this duplicates / input rows"),
    "max_duplicate_rate": Param(ops.param_default("max_duplicate_rate", 0.9, float), type="number", minimum=0, maximum=1,
                                description="check_result fails above this duplicates / input rows"),
    # the job's options (docs/operations.md, "Options"); null: the job's default, or the --config file's
    "config": optional("config", description="--config: a TOML file of the job's settings for this crawl, on the "
                                             "machine that runs the driver"),
    "input_format": optional("input_format", enum=[None, *ops.INPUT_FORMATS], description="--input-format"),
    "id_col": optional("id_col", description="--id-col: the id column"),
    "text_col": optional("text_col", description="--text-col: the text column"),
    "k": optional("k", int, minimum=0, maximum=16, description="--k: max Hamming distance of candidate pairs"),
    "min_similarity": optional("min_similarity", float, minimum=0, maximum=1, description="--min-similarity"),
    "job_options": Param(ops.param_default("job_options", {}, dict), type="object",
                         description='any other option of the job, e.g. {"tokenizer": "char", "stop-words": true}'),
    "spark_conf": Param(ops.param_default("spark_conf", {}, dict), type="object",
                        description="Spark properties for spark-submit --conf"),
    "packed_env": Param(ops.param_default("packed_env", False, bool), type="boolean",
                        description="executors run the packed environment of scripts/ship.sh, "
                                    "SIMHASH_DEDUP_HOME/dist/env.tar.gz (a cluster whose machines lack the packages)"),
    "archives": optional("archives", description="spark.archives, e.g. a packed venv: hdfs:///envs/dedup.tar.gz#env"),
    "executor_memory": optional("executor_memory", description="spark.executor.memory, e.g. 8g"),
    "executor_cores": optional("executor_cores", int, minimum=1, description="spark.executor.cores"),
    "num_executors": optional("num_executors", int, minimum=1, description="spark.executor.instances"),
    "driver_memory": optional("driver_memory", description="spark.driver.memory, e.g. 4g"),
}
# The day is the data interval's start, not {{ ds }} (the logical date): a manual run (`airflow dags trigger`,
# the UI) has the logical date "now" on Airflow 2, i.e. today, while its data interval is the day that ended,
# and on Airflow 3 a run triggered without a logical date has no {{ ds }} at all (rendering fails). For a
# scheduled run the two are the same day.
DAY = "{{ data_interval_start | ds }}"
INPUT = "{{ day_input(params.input_path, params.crawl_root, data_interval_start | ds) }}"  # a macro: ops.day_input
OUTPUT = "{{ params.dedup_root }}/" + DAY


def asset_uri(root: str) -> str:
    return "file://" + os.path.abspath(root) if ops.local_path(root) == root else root


_DEDUP_ROOT = PARAMS["dedup_root"].value
OUTPUT_ASSET = (Asset(name="simhash_dedup_output", uri=asset_uri(_DEDUP_ROOT)) if AIRFLOW_3
                else Dataset(asset_uri(_DEDUP_ROOT)))


def wait_for_input(input_path: str, marker: str, wait_hours: str, quiet_minutes: str = "0",
                   data_interval_end=None) -> bool:
    """PythonSensor callable: True when the day's input (for a glob, its directory) is there (and, without a
    marker, has stopped changing); after its deadline a failure without retries."""
    now = datetime.now(timezone.utc)
    try:
        return ops.check_input(ops.input_directory(input_path), marker or None,
                               ops.input_deadline(data_interval_end, float(wait_hours), now),
                               now, float(quiet_minutes))
    except ops.InputMissing as e:
        raise AirflowFailException(str(e)) from e


def check_result(output_dir: str, params, data_interval_start, outlet_events=None) -> dict:
    """PythonOperator callable: the result gate. A rejected result fails without retries (re-reading the same
    report gives the same numbers); the summary it returns is the task's XCom and the Asset event's extra."""
    try:
        summary = ops.judge_result(ops.read_report(output_dir), output_dir,
                                   params["min_duplicate_rate"], params["max_duplicate_rate"])
    except ops.ResultRejected as e:
        raise AirflowFailException(str(e)) from e
    summary["run_date"] = data_interval_start.date().isoformat()  # the day (see DAY)
    if outlet_events is not None:
        outlet_events[OUTPUT_ASSET].extra.update(summary)
    return summary


class DedupSparkSubmitOperator(SparkSubmitOperator):
    """SparkSubmitOperator whose --conf properties (ops.spark_conf) and the job's options after the DAG's own
    arguments (ops.job_arguments) come from the run's DAG params, set while the templates are rendered so the
    UI's rendered view shows them. (A param cannot be templated into a list of arguments whose length varies.)"""

    def __init__(self, *, application_args: list[str], **kwargs) -> None:
        super().__init__(application_args=application_args, **kwargs)
        self.own_args = len(application_args)  # rendering again does not repeat the params' options

    def render_template_fields(self, context, jinja_env=None) -> None:
        super().render_template_fields(context, jinja_env)
        params = context["params"]
        shipped = ops.packed_env_conf(HOME) if params.get("packed_env") else {}
        self.conf = {**shipped, **ops.spark_conf(params), **(self.conf or {})}  # a conf= given here would win
        self.application_args = [*self.application_args[:self.own_args], *ops.job_arguments(context["params"])]

    def on_kill(self) -> None:
        """A timeout or a killed task: the job's driver is told first (SIGTERM), so that it cancels its Spark
        jobs, removes its staging directory and releases its lock; then the provider's kill (SIGKILL of
        spark-submit, and the cluster's kill of the application where it tracks one)."""
        try:
            ops.stop_driver(getattr(getattr(self, "_hook", None), "_submit_sp", None), self.application)
        finally:  # whatever happened there, spark-submit is killed
            super().on_kill()


MAX_ACTIVE_RUNS = 31

with DAG(
    dag_id="simhash_dedup",
    description="Near-duplicate pages of the day's crawl, against all earlier days (simhash-dedup)",
    # Data intervals on both versions: the run that starts at midnight UTC processes the day that just ended
    # ({{ ds }}). A plain "@daily" means that on Airflow 2 but the day that starts on Airflow 3.
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    # The history is appended to in date order by dedup's depends_on_past (below), not by running one day at a
    # time: with max_active_runs=1 a failed day that is cleared would stay queued for ever behind the next day's
    # run, which is running and waiting for it (Airflow starts a queued run only below max_active_runs), and
    # while that run waited no later day would get a run at all. A month of days may wait for one missing day.
    max_active_runs=MAX_ACTIVE_RUNS,
    params=PARAMS,
    user_defined_macros={"day_input": ops.day_input},
    default_args={
        "owner": "crawl",
        "retries": 2,
        "retry_delay": timedelta(minutes=10),
        "retry_exponential_backoff": True,
        "on_failure_callback": ops.failure_callback(),
    },
    tags=["crawl", "dedup"],
) as dag:
    wait = PythonSensor(
        task_id="wait_for_input",
        python_callable=wait_for_input,
        op_kwargs={"input_path": INPUT, "marker": "{{ params.input_marker }}",
                   "wait_hours": "{{ params.input_wait_hours }}", "quiet_minutes": "{{ params.input_quiet_minutes }}"},
        mode="reschedule",  # frees the worker slot between looks
        poke_interval=timedelta(minutes=10),
        timeout=timedelta(hours=49),  # a backstop only: the callable fails at its own deadline (input_wait_hours <= 48)
    )
    dedup = DedupSparkSubmitOperator(
        task_id="dedup",
        conn_id=os.environ.get("SIMHASH_DEDUP_SPARK_CONN", "spark_default"),
        application=os.path.join(HOME, "jobs", "dedup_job.py"),
        py_files=os.path.join(HOME, "dist", "simhash_udf.zip"),
        name="simhash-dedup-" + DAY,
        application_args=[
            "--input", INPUT,
            "--output", OUTPUT,
            "--history", "{{ params.dedup_root }}/history",
            "--run-date", DAY,
            # A retry or a cleared task recomputes the day: the job is deterministic, reads only the history
            # before {{ ds }} and replaces the day's history partition, so replacing the output is safe.
            "--overwrite",
        ],
        depends_on_past=True,
        wait_for_downstream=True,  # and the previous day's result passed check_result
        execution_timeout=timedelta(hours=6),
    )
    gate = PythonOperator(
        task_id="check_result",
        python_callable=check_result,
        op_kwargs={"output_dir": OUTPUT},
        outlets=[OUTPUT_ASSET],
    )
    wait >> dedup >> gate
