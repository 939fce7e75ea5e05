"""Run by tests/test_airflow.py with the Python of .venv-airflow (real Airflow): load dags/ with a DagBag and
print, as JSON, what the test checks. Not a test module itself (Airflow is not in the job's environment)."""
import json
import os
import sys

from airflow.dag_processing.dagbag import DagBag
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

dag_folder, logical_date = sys.argv[1], sys.argv[2]
bag = DagBag(dag_folder=dag_folder)
out = {"import_errors": {k: str(v) for k, v in bag.import_errors.items()}, "dag_ids": sorted(bag.dag_ids)}
dag = bag.dags.get("simhash_dedup")  # (get_dag would ask the metadata database)
if dag is not None:
    task = dag.get_task("dedup")
    context = {"ds": logical_date, "params": dag.params.dump()}
    env = dag.get_template_env()
    args = task.render_template(task.application_args, context, jinja_env=env)
    name = task.render_template(task.name, context, jinja_env=env)
    hook = SparkSubmitHook(conn_id=task._conn_id, py_files=task.py_files, name=name, application_args=args)
    out.update(
        task_ids=[t.task_id for t in dag.tasks],
        operator=type(task).__name__,
        schedule=str(dag.schedule),
        max_active_runs=dag.max_active_runs,
        catchup=dag.catchup,
        retries=task.retries,
        depends_on_past=task.depends_on_past,
        conn_id=task._conn_id,
        application=task.application,
        py_files=task.py_files,
        args=args,
        command=hook._build_spark_submit_command(task.application),
    )
print("RESULT " + json.dumps(out))
