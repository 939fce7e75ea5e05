"""What the simhash_dedup Airflow DAG does around spark-submit, in plain Python with no Airflow import: the check
that the day's input is there, the gate on the day's result, the day's input path and the job's options and Spark
settings built from the DAG params, the failure callback, and the dedup task's on_kill (stop_driver; psutil,
which Airflow brings, is imported there only). Kept apart from dags/simhash_dedup.py so the same code runs on
Airflow 2.x and 3.x and is unit-tested in the job's own environment (tests/test_dag_ops.py) without an Airflow
installation.

Paths: a plain path or a file: URI is checked on the local disk of the Airflow worker (os.path); any other
scheme (hdfs://, viewfs://, s3a://, ...) with the Hadoop client, ``hdfs dfs -test -e`` / ``hdfs dfs -cat``,
because a Spark gateway that runs spark-submit has that client and its configuration for exactly the file
systems the job itself reads. SIMHASH_DEDUP_HADOOP_FS replaces the command (e.g. ``hadoop fs``).
"""
from __future__ import annotations

import importlib
import json
import logging
import os
import re
import shlex
import subprocess
import threading
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

HADOOP_FS_ENV = "SIMHASH_DEDUP_HADOOP_FS"
ON_FAILURE_ENV = "SIMHASH_DEDUP_ON_FAILURE"
COMMAND_TIMEOUT_S = 300


class InputMissing(Exception):
    """The day's input is still not there at its deadline, or still being written: fail now, without retries
    (waiting longer is the operator's decision, see the message)."""


class ResultRejected(Exception):
    """The job finished but its result is implausible (0 rows, or a duplicate rate outside the bounds)."""


class PathCheckError(Exception):
    """A path could not be checked at all (no Hadoop client, or the client failed): retried like any error."""


# --- paths on any file system ------------------------------------------------------------------------------
def local_path(path: str) -> str | None:
    """The local file name of a plain path or a file: URI; None for any other scheme."""
    parts = urlsplit(path)
    if parts.scheme == "" or (len(parts.scheme) == 1 and os.name == "nt"):
        return path
    if parts.scheme == "file":
        return parts.path
    return None


def join(root: str, *names: str) -> str:
    return "/".join([root.rstrip("/"), *(n.strip("/") for n in names if n)])


def hadoop_fs_command() -> list[str]:
    return shlex.split(os.environ.get(HADOOP_FS_ENV) or "hdfs dfs")


def _hadoop_fs(args: list[str], path: str) -> subprocess.CompletedProcess:
    command = [*hadoop_fs_command(), *args, path]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except FileNotFoundError:
        raise PathCheckError(
            f"cannot check {path}: {command[0]!r} is not on the PATH of the Airflow worker; install the Hadoop "
            f"client there or set {HADOOP_FS_ENV} to a command that takes `-test -e PATH` (e.g. 'hadoop fs')") from None
    except subprocess.TimeoutExpired:
        raise PathCheckError(f"cannot check {path}: {shlex.join(command)} did not answer in {COMMAND_TIMEOUT_S} s") from None


# A failure of the Hadoop client's command: FsShell prefixes its own messages with the command's name
# ("test: No FileSystem for scheme ..."), and a crash prints a Java exception. Anything else on stderr is the
# launcher's or the logging's noise ("Picked up JAVA_TOOL_OPTIONS: ...", "SLF4J: ...", log lines), which a
# gateway may print on every call: counted as a failure, it made "no such path" (exit 1) a failed sensor.
_CLIENT_FAILURE = re.compile(r"^\s*-?(test|cat):|Exception\b|^\s*Error\b|\bat org\.apache\.hadoop\.")


def _client_errors(stderr: str) -> list[str]:
    """What the Hadoop client said about a failure: `-test` exits 1 both for "no such path" (silently) and for a
    failure ("test: No FileSystem for scheme ...", a Java exception), so the message tells them apart."""
    return [line for line in stderr.splitlines()
            if _CLIENT_FAILURE.search(line) and not re.search(r"\b(WARN|INFO|DEBUG)\b", line)]


def hadoop_path_exists(path: str) -> bool:
    proc = _hadoop_fs(["-test", "-e"], path)
    if proc.returncode == 0:
        return True
    if proc.returncode == 1 and not _client_errors(proc.stderr):  # 1 and silence: no such path
        return False
    raise PathCheckError(f"cannot check {path}: {shlex.join(hadoop_fs_command())} -test -e exited "
                         f"{proc.returncode}: {proc.stderr.strip()[-2000:]}")


def _hadoop_fs_output(args: list[str], path: str, verb: str) -> str:
    """The client's output of `args PATH`; PathCheckError ("cannot VERB PATH: ...") when it fails."""
    proc = _hadoop_fs(args, path)
    if proc.returncode != 0:
        raise PathCheckError(f"cannot {verb} {path}: {shlex.join(hadoop_fs_command())} {shlex.join(args)} exited "
                             f"{proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def hadoop_read_text(path: str) -> str:
    return _hadoop_fs_output(["-cat"], path, "read")


def path_exists(path: str) -> bool:
    local = local_path(path)
    return os.path.exists(local) if local is not None else hadoop_path_exists(path)


def read_text(path: str) -> str:
    local = local_path(path)
    if local is None:
        return hadoop_read_text(path)
    with open(local, encoding="utf-8") as f:
        return f.read()


# --- the day's input -----------------------------------------------------------------------------------------
def input_deadline(data_interval_end: datetime | None, wait_hours: float, now: datetime) -> datetime:
    """The day's pages are due when its data interval ends; the check waits ``wait_hours`` beyond that. A run of
    a day long past (a backfill, a cleared run) has its deadline behind it, so a missing day fails at the first
    look instead of waiting."""
    return (data_interval_end or now) + timedelta(hours=float(wait_hours))


def newest_change(path: str) -> datetime:
    """When anything in the directory `path` (itself, its files and subdirectories) last changed: the newest
    modification time, UTC. Local paths by os.walk; others through the Hadoop client (hadoop_newest_change)."""
    local = local_path(path)
    if local is None:
        return hadoop_newest_change(path)
    newest = os.stat(local).st_mtime
    for folder, dirs, files in os.walk(local):
        for name in dirs + files:
            try:
                newest = max(newest, os.lstat(os.path.join(folder, name)).st_mtime)
            except FileNotFoundError:  # removed while listed
                continue
    return datetime.fromtimestamp(newest, timezone.utc)


def hadoop_newest_change(path: str) -> datetime:
    """newest_change by the Hadoop client: `-stat %Y` of the directory (milliseconds) and `-ls -R` of its contents,
    which FsShell prints to the minute in the worker's time zone (taken as the end of that minute, so that a
    change never looks older than it is)."""
    stat = _hadoop_fs_output(["-stat", "%Y"], path, "stat").strip()
    if not stat.isdigit():
        raise PathCheckError(f"cannot stat {path}: {shlex.join(hadoop_fs_command())} -stat %Y printed {stat[-2000:]!r}")
    times = [datetime.fromtimestamp(int(stat) / 1000, timezone.utc)]
    for m in _LS_TIME.finditer(_hadoop_fs_output(["-ls", "-R"], path, "list")):
        times.append(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M").astimezone(timezone.utc) + timedelta(minutes=1))
    return max(times)


# a line of `-ls -R`: permissions, replication, owner, group, size, date time, path
_LS_TIME = re.compile(r"^[-dl][rwxXsStT-]{9}\S*\s+\S+\s+\S+\s+\S+\s+\d+\s+(\d{4}-\d\d-\d\d \d\d:\d\d)\s", re.M)


def check_input(input_path: str, marker: str | None, deadline: datetime, now: datetime,
                quiet_minutes: float = 0) -> bool:
    """True when the day's input is there: its marker file, if one is named; otherwise the directory, once nothing
    in it has changed for `quiet_minutes` (a crawler still writing into it would otherwise have its later pages
    miss the day's run). False while it may still come or change; InputMissing once the deadline has passed, with
    what to do."""
    target = join(input_path, marker) if marker else input_path
    if path_exists(target):
        if marker or quiet_minutes <= 0:
            log.info("input ready: %s", target)
            return True
        changed = newest_change(input_path)
        if now - changed >= timedelta(minutes=float(quiet_minutes)):
            log.info("input ready: %s (last change %s)", target, changed.isoformat())
            return True
        if now < deadline:
            log.info("input %s changed at %s: waiting until nothing in it has changed for %s minutes (until %s at the "
                     "latest)", target, changed.isoformat(), quiet_minutes, deadline.isoformat())
            return False
        raise InputMissing(
            f"input {target} was still being written at the deadline {deadline.isoformat()} (last change "
            f"{changed.isoformat()}, less than input_quiet_minutes={quiet_minutes} ago). Set the DAG param "
            "input_marker to the file the crawler writes last into the day's directory (e.g. _SUCCESS), or wait until "
            "the day is complete, then clear this task with its downstream tasks.")
    if now < deadline:
        log.info("input not there yet: %s (waiting until %s)", target, deadline.isoformat())
        return False
    raise InputMissing(
        f"input {target} does not exist (deadline {deadline.isoformat()} passed). Later days wait for this one, "
        "because the history is written in date order (dedup has depends_on_past). Either deliver the day's pages "
        "and clear this task with its downstream tasks (the day then runs and the later days follow), or, if the "
        "day will never come, mark this run's `dedup` and `check_result` tasks as success so the next day runs.")


# --- the day's result ----------------------------------------------------------------------------------------
# Fields of report.json (docs/report.md; defined in simhash_udf/job/report_schema.py) that every report has. The DAG
# reads the JSON itself: Airflow's environment need not have the job's package, and these five integers are all
# the gate needs. tests/test_dag_ops.py checks that they are the schema's.
SUMMARY_KEYS = ("input_rows", "kept", "duplicates", "exact_duplicates", "near_duplicates")


def read_report(output_dir: str) -> dict:
    """The finished run's report.json; a DIR without _SUCCESS is not a finished run."""
    if not path_exists(join(output_dir, "_SUCCESS")):
        raise ResultRejected(f"{output_dir} has no _SUCCESS: the job did not finish a run there")
    return json.loads(read_text(join(output_dir, "report.json")))


def judge_result(report: dict, output_dir: str, min_rate: float, max_rate: float) -> dict:
    """The summary handed downstream, or ResultRejected with the numbers when the day read nothing or its
    duplicate rate (duplicates / input rows) lies outside [min_rate, max_rate]."""
    missing = [k for k in SUMMARY_KEYS if k not in report]
    if missing:
        raise ResultRejected(f"{output_dir}/report.json lacks {', '.join(missing)}: not a simhash-dedup report")
    summary = {k: int(report[k]) for k in SUMMARY_KEYS}
    rows = summary["input_rows"]
    summary["duplicate_rate"] = round(summary["duplicates"] / rows, 6) if rows else None
    summary["output"] = output_dir
    numbers = (f"{summary['duplicates']} duplicates ({summary['exact_duplicates']} exact, "
               f"{summary['near_duplicates']} near) of {rows} rows, {summary['kept']} kept")
    if rows == 0:
        raise ResultRejected(f"the run read 0 rows ({output_dir}/report.json): check the day's input")
    rate = summary["duplicates"] / rows
    if not float(min_rate) <= rate <= float(max_rate):
        side = "below min_duplicate_rate" if rate < float(min_rate) else "above max_duplicate_rate"
        bound = min_rate if rate < float(min_rate) else max_rate
        raise ResultRejected(
            f"duplicate rate {rate:.4f} is {side} {float(bound):g}: {numbers} ({output_dir}). Check the day's input "
            "(a partial or a repeated crawl). If the result is right, mark this task as success, or widen the bounds "
            "(params min_duplicate_rate / max_duplicate_rate; their defaults come from SIMHASH_DEDUP_MIN_DUPLICATE_RATE "
            "/ SIMHASH_DEDUP_MAX_DUPLICATE_RATE) and clear it.")
    log.info("result accepted: %s, duplicate rate %.4f", numbers, rate)
    return summary


# --- Spark settings ------------------------------------------------------------------------------------------
SPARK_SETTING_PARAMS = {  # DAG param -> Spark property (the same as spark-submit's flag of that name)
    "archives": "spark.archives",
    "executor_memory": "spark.executor.memory",
    "executor_cores": "spark.executor.cores",
    "num_executors": "spark.executor.instances",
    "driver_memory": "spark.driver.memory",
}


def packed_env_conf(home: str) -> dict[str, str]:
    """The Spark settings of the DAG param packed_env: the executors run the Python of the packed environment
    that scripts/ship.sh builds (HOME/dist/env.tar.gz, unpacked as ./env in each executor's directory), the
    driver (client mode, on the Airflow worker) the Python of HOME/.venv that ship.sh sets up. Defaults only:
    the params archives and spark_conf override them."""
    return {"spark.archives": os.path.join(home, "dist", "env.tar.gz") + "#env",
            "spark.pyspark.python": "./env/bin/python",
            "spark.pyspark.driver.python": os.path.join(home, ".venv", "bin", "python")}


def spark_conf(params: dict) -> dict[str, str]:
    """The --conf properties of spark-submit from the DAG params: ``spark_conf`` (any properties) plus the
    named settings, each as its Spark property. The named settings go through --conf rather than the
    operator's own arguments because those are not templated (a DAG param could not reach them); spark-submit
    treats ``--conf spark.executor.memory=4g`` and ``--executor-memory 4g`` alike."""
    conf = {str(k): str(v) for k, v in (params.get("spark_conf") or {}).items()}
    for name, prop in SPARK_SETTING_PARAMS.items():
        value = params.get(name)
        if value is None or value == "":
            continue
        if prop in conf and conf[prop] != str(value):
            raise ValueError(f"param {name}={value!r} contradicts spark_conf {prop}={conf[prop]!r}: set one of them")
        conf[prop] = str(value)
    return conf


# --- the job's input and options --------------------------------------------------------------------------
DEFAULT_INPUT_PATH = "{crawl_root}/{ds}"
INPUT_PATH_FIELDS = ("crawl_root", "ds", "ds_nodash", "yyyy", "mm", "dd")
GLOB_CHARS = re.compile(r"[*?\[{]")


def day_input(pattern: str, crawl_root: str, ds: str) -> str:
    """The day's --input from the DAG param input_path: ``pattern`` with its {fields} filled in (crawl_root, ds =
    2026-11-21, ds_nodash = 20261121, yyyy, mm, dd), e.g. "{crawl_root}/dt={ds}" or
    "{crawl_root}/{yyyy}/{mm}/{dd}/*.warc.wet.gz" (a glob is passed on to the job as it is; a literal brace, as in
    a Hadoop glob's {a,b}, is written doubled)."""
    yyyy, mm, dd = ds.split("-")
    fields = {"crawl_root": crawl_root.rstrip("/"), "ds": ds, "ds_nodash": yyyy + mm + dd, "yyyy": yyyy, "mm": mm, "dd": dd}
    try:
        return pattern.format(**fields)
    except KeyError as e:
        raise ValueError(f"param input_path={pattern!r} names {{{e.args[0]}}}: use "
                         + ", ".join("{" + f + "}" for f in INPUT_PATH_FIELDS)
                         + " (a literal brace, as in a glob's {a,b}, is written doubled: {{a,b}})") from None
    except (ValueError, IndexError) as e:
        raise ValueError(f"param input_path={pattern!r} is not a valid pattern ({e}); write a literal brace "
                         "doubled ({{ or }})") from None


def input_directory(input_path: str) -> str:
    """What the input sensor waits for: the day's input path itself, or, when it is a glob, the directory above
    its first component with a wildcard (the marker file and the quiet period are looked for there)."""
    parts = input_path.split("/")
    for i, part in enumerate(parts):
        if GLOB_CHARS.search(part):
            return "/".join(parts[:i]) or "/"
    return input_path


# The job's options with a DAG param of their own (param -> flag); any other option goes in the param job_options
JOB_OPTION_PARAMS = {"config": "--config", "input_format": "--input-format", "id_col": "--id-col",
                     "text_col": "--text-col", "k": "--k", "min_similarity": "--min-similarity"}
INPUT_FORMATS = ("auto", "parquet", "json", "csv", "text", "wet", "fingerprints")  # the job's --input-format choices
SET_BY_THE_DAG = ("--input", "--output", "--history", "--run-date", "--overwrite", "--no-overwrite")


def job_arguments(params: dict) -> list[str]:
    """The job's options from the DAG params, after the arguments the DAG sets itself (input, output, history,
    run date): the named params that are set, then job_options, an object of option -> value ({"tokenizer":
    "char", "stop-words": true, "shuffle-partitions": 2000}; true and false give --flag and --no-flag, null
    leaves the option out). An option the DAG sets itself, or one given both ways, is a ValueError."""
    args: list[str] = []
    for name, flag in JOB_OPTION_PARAMS.items():
        value = params.get(name)
        if value is not None and value != "":
            args += [flag, str(value)]
    for option, value in (params.get("job_options") or {}).items():
        flag = "--" + str(option).lstrip("-").replace("_", "-")
        if flag in SET_BY_THE_DAG:
            raise ValueError(f"job_options {option!r}: the DAG sets {flag} itself (from crawl_root, input_path and "
                             "dedup_root, and the day): remove it from job_options")
        if flag in args:
            name = next(n for n, f in JOB_OPTION_PARAMS.items() if f == flag)
            raise ValueError(f"job_options {option!r} repeats the param {name}: set one of them")
        if value is True:
            args.append(flag)
        elif value is False:
            args.append("--no-" + flag[2:])
        elif value is not None:
            args += [flag, str(value)]
    return args


# --- settings ------------------------------------------------------------------------------------------------
def param_default(name: str, default, kind=str):
    """The default of DAG param ``name``: SIMHASH_DEDUP_<NAME> when set (JSON for an object), else ``default``; a
    value that does not parse stops the DAG file with the variable's name (an import error in the UI)."""
    var = "SIMHASH_DEDUP_" + name.upper()
    raw = os.environ.get(var, "").strip()
    if not raw:
        return default
    try:
        value = json.loads(raw) if kind in (dict, bool) else kind(raw)
    except ValueError as e:
        raise ValueError(f"{var}={raw!r} is not a valid {kind.__name__}: {e}") from e
    if not isinstance(value, kind):
        raise ValueError(f"{var}={raw!r} is not " + ("true or false" if kind is bool else "a JSON object"))
    return value


# --- failure callback ----------------------------------------------------------------------------------------
def load_callable(spec: str):
    """``package.module:function`` (or ``package.module.function``) -> the function, importable on the scheduler and
    the workers."""
    module_name, sep, attr = spec.partition(":")
    if not sep:
        module_name, _, attr = spec.rpartition(".")
    try:
        fn = getattr(importlib.import_module(module_name), attr) if module_name and attr else None
    except (ImportError, AttributeError) as e:
        raise ValueError(f"{ON_FAILURE_ENV}={spec!r}: cannot import it ({e}); give module:function") from e
    if not callable(fn):
        raise ValueError(f"{ON_FAILURE_ENV}={spec!r} is not a callable; give module:function")
    return fn


def log_failure(context) -> None:
    """The default failure callback: one ERROR line with the task, the day and the error (Airflow's own alerting,
    e.g. email_on_failure, still applies)."""
    ti = context.get("task_instance") or context.get("ti")
    log.error("simhash_dedup: task %s of day %s failed: %s", getattr(ti, "task_id", "?"), context.get("ds"),
              context.get("exception"))


def failure_callback():
    spec = os.environ.get(ON_FAILURE_ENV, "").strip()
    return load_callable(spec) if spec else log_failure


# How long the dedup task's on_kill waits for the job to clean up after its SIGTERM before the provider's kill
# (SIGKILL of spark-submit). Below Airflow's killed_task_cleanup_time (60 s), after which the task's own
# process is killed.
KILL_GRACE_SECONDS = 45


def stop_driver(submit: subprocess.Popen | None, application: str, grace_seconds: float = KILL_GRACE_SECONDS) -> bool:
    """The dedup task's on_kill, before the provider's: SIGTERM to the job's Python driver when it runs here, a
    child of spark-submit (client mode), then wait up to grace_seconds for spark-submit to exit. The provider
    kills spark-submit with SIGKILL; its Python driver, a child of that JVM, then cannot remove its staging
    directory or release its lock (the next run removes them) and cannot cancel its Spark jobs. Told by SIGTERM,
    the job cancels its jobs, cleans up and exits 143, and spark-submit exits with it. spark-submit's output is
    read meanwhile: the task no longer reads its pipe, and a full pipe would stall the driver's cleanup.
    Returns whether spark-submit has exited (False: no driver found here, e.g. cluster mode, or it took too long;
    the provider's kill follows either way)."""
    if submit is None or submit.poll() is not None:
        return submit is not None
    import psutil  # an Airflow dependency: only the DAG's on_kill calls this

    try:
        drivers = driver_processes(submit.pid, application)
    except psutil.NoSuchProcess:
        return submit.poll() is not None
    if not drivers:
        log.warning("simhash_dedup: no driver process of %s under spark-submit (pid %d): killing spark-submit",
                    os.path.basename(application), submit.pid)
        return False
    for driver in drivers:
        log.warning("simhash_dedup: SIGTERM to the job's driver (pid %d): it stops and removes its staging directory",
                    driver.pid)
        try:
            driver.terminate()
        except psutil.NoSuchProcess:  # it ended meanwhile
            continue
    if submit.stdout is not None:
        threading.Thread(target=_drain, args=(submit.stdout.fileno(),), name="spark-submit-output", daemon=True).start()
    try:
        code = submit.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        log.warning("simhash_dedup: spark-submit still runs %.0f s after the driver's SIGTERM", grace_seconds)
        return False
    log.warning("simhash_dedup: spark-submit exited with %s after the driver's SIGTERM", code)
    return True


def driver_processes(submit_pid: int, application: str) -> list:
    """The psutil processes under spark-submit (pid submit_pid) that run `application`: its Python driver in
    client mode (not the driver's own forks), none in cluster mode. psutil.NoSuchProcess when spark-submit has gone.
    A JVM is never one: the spark-submit the job runs again for a large local input (session.relaunch_if_faster)
    names the application too, and a SIGTERM to it would stop the JVM the driver needs for its cleanup."""
    import psutil

    name, found = os.path.basename(application), {}
    for child in psutil.Process(submit_pid).children(recursive=True):
        try:
            if child.name() != "java" and any(os.path.basename(arg) == name for arg in child.cmdline()[1:]):
                found[child.pid] = (child, child.ppid())
        except (psutil.NoSuchProcess, psutil.AccessDenied):  # a short-lived child that has gone
            continue
    # a child of a driver that shows the driver's command line is the driver forked (a subprocess between its fork
    # and its exec), not a driver of its own
    return [child for child, parent in found.values() if parent not in found]


def _drain(fd: int) -> None:
    """spark-submit's output while the task is being killed, to the task log (os.read: not through the pipe's
    file object, whose lock the interrupted task may hold)."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        for line in chunk.decode("utf-8", "replace").splitlines():
            log.info("spark-submit: %s", line)
