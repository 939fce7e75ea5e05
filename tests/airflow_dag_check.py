"""Run by tests/test_airflow.py with the Python of an Airflow environment (.venv-airflow: 3.x, .venv-airflow2: 2.x),
never by pytest itself (Airflow is not in the job's environment):

    python tests/airflow_dag_check.py SPEC.json

Loads the DAG folder with a DagBag, then does with real Airflow what the spec asks and prints, after "RESULT ",
one JSON object: the DAG's shape, the spark-submit command the provider's hook builds for each render, the
result of each poke of the input sensor, of each execution of the result gate (return value = the XCom, and
the extra of the Asset event), of the failure callback, of a first run of a deployment's three tasks, and of
parsing each CLI command with Airflow's own argument parser. Each task is rendered and run on a copy, with a
context built here (no metadata database)."""
import contextlib
import copy
import io
import json
import sys
from datetime import datetime, timedelta, timezone

from airflow import __version__ as AIRFLOW_VERSION

if int(AIRFLOW_VERSION.split(".")[0]) >= 3:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.execution_time.context import OutletEventAccessors
else:
    from airflow.models.dagbag import DagBag
    from airflow.utils.context import OutletEventAccessors

spec = json.load(open(sys.argv[1]))
day = spec["day"]
bag = DagBag(dag_folder=spec["dag_folder"])  # AIRFLOW__CORE__LOAD_EXAMPLES=False: only our folder
out = {"airflow_version": AIRFLOW_VERSION,
       "import_errors": {k: str(v) for k, v in bag.import_errors.items()}, "dag_ids": sorted(bag.dag_ids)}
dag = bag.dags.get("simhash_dedup")  # (get_dag would ask the metadata database)


def day_start(ds):
    return datetime.fromisoformat(ds).replace(tzinfo=timezone.utc)


def context_for(task, overrides, ds=day, **extra):
    params = copy.deepcopy(dag.params)
    params.update(overrides or {})  # as a triggered run's conf does
    ctx = {"ds": ds, "params": params.validate(), "task": task, "dag": dag,
           "data_interval_start": day_start(ds), "data_interval_end": day_start(ds) + timedelta(days=1)}
    ctx.update(extra)
    return ctx


def rendered(task_id, overrides, **extra):
    task = copy.deepcopy(dag.get_task(task_id))
    ctx = context_for(task, overrides, **extra)
    task.render_template_fields(ctx)
    return task, ctx


def scheduler_timetable(timetable):
    """The timetable as the scheduler uses it (Airflow 3 parses an SDK definition into a core timetable)."""
    if hasattr(timetable, "infer_manual_data_interval"):
        return timetable
    from airflow.serialization.decoders import decode_timetable
    from airflow.serialization.encoders import encode_timetable
    return decode_timetable(encode_timetable(timetable))


def outcome(fn):
    try:
        return {"ok": fn()}
    except Exception as e:  # noqa: BLE001 - reported to the test, which checks type and message
        return {"error": type(e).__name__, "message": str(e)}


def command(overrides):
    task, _ = rendered("dedup", overrides)
    return task._get_hook()._build_spark_submit_command(task.application)


def manual_commands():
    """The dedup command of manual runs of the day's data interval: on Airflow 2 (dags trigger, the UI) the
    logical date is the moment of the trigger, the next day; on Airflow 3 a run triggered without a logical
    date has no ds at all."""
    start = day_start(day)
    interval = {"data_interval_start": start, "data_interval_end": start + timedelta(days=1)}
    out = []
    for drop_ds in (False, True):
        task = copy.deepcopy(dag.get_task("dedup"))
        ctx = context_for(task, None, ds=(start + timedelta(days=1, hours=9)).date().isoformat(), **interval)
        if drop_ds:
            del ctx["ds"]
        out.append(outcome(lambda t=task, c=ctx: (t.render_template_fields(c),
                                                 t._get_hook()._build_spark_submit_command(t.application))[1]))
    return out


def poke(case):
    end = case.get("data_interval_end")
    extra = {"data_interval_end": datetime.fromisoformat(end)} if end else {}
    task, ctx = rendered("wait_for_input", case.get("params"), **extra)
    return bool(task.poke(ctx))


def gate(case):
    events = OutletEventAccessors()
    task, ctx = rendered("check_result", case.get("params"), ds=case.get("ds", day), outlet_events=events)
    summary = task.execute(ctx)
    return {"xcom": summary, "asset_extra": dict(events[task.outlets[0]].extra)}


def callbacks():
    task = dag.get_task("dedup")
    hooks = task.on_failure_callback
    for hook in hooks if isinstance(hooks, list) else [hooks]:
        hook({"ds": day, "task_instance": None, "exception": RuntimeError("spark-submit exited 1")})
    return len(hooks) if isinstance(hooks, list) else 1


def parse_cli(line):
    from airflow.cli.cli_parser import get_parser
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args = get_parser().parse_args(line.split()[1:])
    except SystemExit as e:
        return {"error": f"exit {e.code}: {err.getvalue().strip()[-500:]}"}
    return {"ok": args.func.__name__ if hasattr(args.func, "__name__") else str(args.func)}


def kill(case):
    """The dedup task run on a real spark-submit (local mode) and killed as Airflow kills it (on_kill, as at a
    timeout) once the job holds its output's lock: spark-submit's exit code, what is left beside DIR and in the
    history, DIR's report, and whether a process of the job's application still runs."""
    import glob
    import os
    import threading
    import time

    import psutil
    import simhash_dedup_ops as ops  # the DAG folder is on sys.path once the DAG is loaded

    task, ctx = rendered("dedup", case["params"])
    task._conn_id, task.py_files, task.application = case["conn_id"], None, case["application"]
    out_dir = f"{case['params']['dedup_root']}/{day}"
    result = {}

    def kill_when_locked():  # on_kill from another thread: the task's own thread runs execute (Airflow checks that)
        deadline = time.time() + 300
        while not os.path.exists(out_dir + ".__lock"):
            if time.time() > deadline or "execute" in result:
                return
            time.sleep(0.1)
        time.sleep(case.get("kill_after_lock_seconds", 2))
        # the job's processes under this task's spark-submit (the other Airflow version's check runs beside it)
        result["drivers"] = ops.driver_processes(task._hook._submit_sp.pid, case["application"])
        result["kill_started"] = time.time()
        task.on_kill()

    killer = threading.Thread(target=kill_when_locked, daemon=True)
    killer.start()
    try:
        task.execute(ctx)
        result["execute"] = "returned"
    except Exception as e:  # noqa: BLE001 - the failed task's exception, reported
        result["execute"], result["message"] = type(e).__name__, str(e)[-2000:]
    killer.join(120)
    if "kill_started" not in result:
        return {"never_killed": result}
    started = result["kill_started"]
    return {"returncode": task._hook._submit_sp.returncode, "kill_seconds": round(time.time() - started, 1),
            "execute": result.get("execute"), "message": result.get("message"),
            "left": sorted(os.path.basename(p) for p in glob.glob(out_dir + ".__*")),
            "history_left": sorted(os.path.basename(p) for p in glob.glob(
                f"{case['params']['dedup_root']}/history/_staging-*")),
            "report": open(os.path.join(out_dir, "report.json")).read(),
            "drivers": len(result["drivers"]),
            "drivers_left": [p.pid for p in result["drivers"] if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]}


def first_run(case):
    """One day's three tasks on a deployment, as `airflow dags test` runs them: the sensor's look, the dedup task
    (a real spark-submit onto the connection's master), the result gate; and the command dedup ran."""
    params = case.get("params")
    sensor, ctx = rendered("wait_for_input", params)
    ready = bool(sensor.poke(ctx))
    dedup, ctx = rendered("dedup", params)
    command = dedup._get_hook()._build_spark_submit_command(dedup.application)
    dedup.execute(ctx)
    return {"ready": ready, "command": command, "gate": gate({"params": params})}


if dag is not None:
    run_after = day_start(day) + timedelta(days=1, hours=1)
    interval = scheduler_timetable(dag.timetable).infer_manual_data_interval(run_after=run_after)
    out.update(
        task_ids=sorted(t.task_id for t in dag.tasks),
        upstream={t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks},
        operators={t.task_id: [c.__name__ for c in type(t).__mro__] for t in dag.tasks},
        timetable=type(scheduler_timetable(dag.timetable)).__name__,
        data_interval=[interval.start.date().isoformat(), interval.end.date().isoformat()],
        max_active_runs=dag.max_active_runs,
        catchup=dag.catchup,
        tasks={t.task_id: {"retries": t.retries, "depends_on_past": t.depends_on_past,
                           "wait_for_downstream": t.wait_for_downstream,
                           "mode": getattr(t, "mode", None),
                           "outlets": [getattr(o, "uri", None) for o in t.outlets]} for t in dag.tasks},
        conn_id=dag.get_task("dedup")._conn_id,
        commands=[outcome(lambda o=o: command(o)) for o in spec.get("renders", [])],
        manual_commands=manual_commands(),
        pokes=[outcome(lambda c=c: poke(c)) for c in spec.get("pokes", [])],
        gates=[outcome(lambda c=c: gate(c)) for c in spec.get("gates", [])],
        callbacks=outcome(callbacks) if spec.get("callbacks") else None,
        kills=[outcome(lambda c=c: kill(c)) for c in spec.get("kills", [])],
        first_runs=[outcome(lambda c=c: first_run(c)) for c in spec.get("first_runs", [])],
    )
out["other_folders"] = {}
for name, folder in spec.get("other_folders", {}).items():
    other = DagBag(dag_folder=folder)
    out["other_folders"][name] = {"import_errors": {k: str(v) for k, v in other.import_errors.items()},
                                  "dag_ids": sorted(other.dag_ids)}
out["cli"] = {line: parse_cli(line) for line in spec.get("cli", [])}
print("RESULT " + json.dumps(out, default=str))
