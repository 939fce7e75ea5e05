"""dags/simhash_dedup_ops.py, the DAG's own logic without Airflow: the input check, the result gate, the Spark
settings from DAG params, param defaults from the environment and the failure callback. Paths on other file
systems go through the real Hadoop client (FsShell from pyspark's jars, what `hdfs dfs` runs) on file: URIs.
tests/test_airflow.py runs the same functions inside real Airflow 2.x and 3.x."""
import dataclasses
import glob
import importlib.util
import json
import logging
import os
import shlex
import shutil
import typing
from datetime import datetime, timedelta, timezone

import pyspark
import pytest

from simhash_udf.job.config import DedupConfig, build_parser, load_config
from simhash_udf.job.report import empty_report
from simhash_udf.job.report_schema import Report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("simhash_dedup_ops", os.path.join(ROOT, "dags", "simhash_dedup_ops.py"))
ops = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ops)

NOW = datetime(2026, 11, 22, 3, 0, tzinfo=timezone.utc)
DAY_END = datetime(2026, 11, 22, tzinfo=timezone.utc)


def write_report(folder, finished=True, **counts):
    """A report.json as the job writes it (report_schema's Report, an empty run's with these counts)."""
    os.makedirs(folder, exist_ok=True)
    numbers = {"input_rows": 1000, "kept": 700, "duplicates": 300, "exact_duplicates": 120, "near_duplicates": 180}
    cfg = DedupConfig(input="/crawl/day", output=str(folder), allow_empty=True)
    report = dataclasses.replace(empty_report(cfg, "", {}, pyspark.__version__, 0.0), **{**numbers, **counts})
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump(report.to_dict(), f)
    if finished:
        open(os.path.join(folder, "_SUCCESS"), "w").close()
    return str(folder)


def test_local_paths_and_file_uris_are_checked_on_disk(tmp_path):
    (tmp_path / "day").mkdir()
    assert ops.local_path("hdfs:///crawl/x") is None and ops.local_path("s3a://b/x") is None
    assert ops.local_path(f"file://{tmp_path}/day") == f"{tmp_path}/day"
    assert ops.path_exists(str(tmp_path / "day")) and ops.path_exists(f"file://{tmp_path}/day")
    assert not ops.path_exists(str(tmp_path / "other")) and not ops.path_exists(f"file:{tmp_path}/other")


def test_input_check_waits_until_the_deadline_then_fails_with_what_to_do(tmp_path):
    day = tmp_path / "2026-11-21"
    deadline = ops.input_deadline(DAY_END, 6, NOW)
    assert deadline == DAY_END + timedelta(hours=6)
    assert ops.check_input(str(day), None, deadline, NOW) is False  # not there yet, 3 h before the deadline
    with pytest.raises(ops.InputMissing) as e:
        ops.check_input(str(day), None, deadline, deadline)
    assert str(day) in str(e.value) and "depends_on_past" in str(e.value) and "mark this run" in str(e.value)
    day.mkdir()
    assert ops.check_input(str(day), "", deadline, NOW) is True
    # with a marker the directory alone is not enough: the crawler may still be writing into it
    assert ops.check_input(str(day), "_SUCCESS", deadline, NOW) is False
    (day / "_SUCCESS").touch()
    assert ops.check_input(str(day), "_SUCCESS", deadline, NOW) is True


def test_a_day_long_past_fails_at_the_first_look():
    """A backfill or cleared run of an old day: its deadline is behind it, so a missing day does not wait."""
    old_end = datetime(2026, 3, 2, tzinfo=timezone.utc)
    with pytest.raises(ops.InputMissing, match="2026-03-01"):
        ops.check_input("/nonexistent/crawl/2026-03-01", None, ops.input_deadline(old_end, 6, NOW), NOW)
    assert ops.input_deadline(None, 2, NOW) == NOW + timedelta(hours=2)  # no data interval: wait from now


def written_at(folder, when, *names):
    """Set the modification time of `folder`, everything under it (or only `names` inside it) to `when`."""
    t = when.timestamp()
    paths = [os.path.join(folder, n) for n in names] or [
        os.path.join(d, n) for d, dirs, files in os.walk(folder) for n in dirs + files] + [str(folder)]
    for path in paths:
        os.utime(path, (t, t))


def crawl_day(tmp_path):
    """A day's directory as a crawler leaves it: two files and a subdirectory with one more."""
    day = tmp_path / "2026-11-21"
    (day / "part-b").mkdir(parents=True)
    (day / "part-a.jsonl").write_text('{"id": 1, "text": "a page"}\n')
    (day / "part-b" / "pages.jsonl").write_text('{"id": 2, "text": "another page"}\n')
    return day


def test_without_a_marker_the_day_counts_once_nothing_in_it_has_changed_for_a_while(tmp_path):
    """The sensor must not pass as soon as the day's directory exists: pages the crawler writes into it after
    that would never be in the day's run."""
    day = crawl_day(tmp_path)
    path, later = str(day), ops.input_deadline(DAY_END, 6, NOW)
    written_at(day, NOW - timedelta(minutes=10))
    assert ops.check_input(path, None, later, NOW, quiet_minutes=30) is False  # written 10 minutes ago
    assert ops.check_input(path, None, later, NOW, quiet_minutes=0) is True  # 0: as soon as it exists
    written_at(day, NOW - timedelta(minutes=40))
    assert ops.check_input(path, None, later, NOW, quiet_minutes=30) is True
    # a file written deep inside counts, and so does a file removed (its directory changed)
    written_at(day, NOW - timedelta(minutes=5), "part-b/pages.jsonl")
    assert ops.check_input(path, None, later, NOW, quiet_minutes=30) is False
    written_at(day, NOW - timedelta(minutes=40))
    (day / "part-b" / "pages.jsonl").unlink()
    written_at(day, NOW - timedelta(minutes=3), "part-b")
    assert ops.check_input(path, None, later, NOW, quiet_minutes=30) is False
    assert ops.newest_change(path) == NOW - timedelta(minutes=3)
    # a named marker decides alone
    (day / "_SUCCESS").touch()
    written_at(day, NOW - timedelta(minutes=1))
    assert ops.check_input(path, "_SUCCESS", later, NOW, quiet_minutes=30) is True
    # still changing at the deadline: a failure that says what to do
    with pytest.raises(ops.InputMissing) as e:
        ops.check_input(path, None, NOW - timedelta(minutes=1), NOW, quiet_minutes=30)
    assert "still being written" in str(e.value) and "input_marker" in str(e.value)


@pytest.fixture(scope="module")
def hadoop_fs(tmp_path_factory):
    """SIMHASH_DEDUP_HADOOP_FS for the real Hadoop client (FsShell) from pyspark's jars: only the jars it needs and
    the quick JIT keep each call near 1.5 s; an empty core-site.xml, which the shaded client insists on."""
    java = shutil.which("java", path=os.path.join(os.environ.get("JAVA_HOME", ""), "bin")) or shutil.which("java")
    if java is None:
        pytest.skip("no java")
    conf = tmp_path_factory.mktemp("hadoop-conf")
    (conf / "core-site.xml").write_text('<?xml version="1.0"?>\n<configuration/>\n')
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    needed = ["hadoop-client-api", "hadoop-client-runtime", "slf4j-api", "log4j-slf4j2-impl", "log4j-api", "log4j-core",
              "jcl-over-slf4j"]
    classpath = [str(conf)] + [glob.glob(os.path.join(jars, f"{name}-[0-9]*.jar"))[0] for name in needed]
    return shlex.join([java, "-XX:TieredStopAtLevel=1", "-cp", ":".join(classpath), "org.apache.hadoop.fs.FsShell"])


def test_other_file_systems_go_through_the_hadoop_client(hadoop_fs, tmp_path, monkeypatch):
    monkeypatch.setenv(ops.HADOOP_FS_ENV, hadoop_fs)
    out = write_report(tmp_path / "out")
    assert ops.hadoop_path_exists(f"file://{tmp_path}/out/_SUCCESS") is True
    assert ops.hadoop_path_exists(f"file://{tmp_path}/nothing") is False
    assert json.loads(ops.hadoop_read_text(f"file://{out}/report.json"))["kept"] == 700
    # the client exits 1 for "no such path" and for its own failures: the message tells them apart
    with pytest.raises(ops.PathCheckError, match="No FileSystem for scheme"):
        ops.path_exists("nosuchfs://crawl/2026-11-21")


def test_the_hadoop_client_finds_the_newest_change_inside_a_directory(hadoop_fs, tmp_path, monkeypatch):
    """Other file systems: the directory's own time (-stat) and its contents' (-ls -R, to the minute: read as the
    end of that minute), through the real client on a file: URI."""
    monkeypatch.setenv(ops.HADOOP_FS_ENV, hadoop_fs)
    day = crawl_day(tmp_path)
    uri = f"file://{day}"
    written_at(day, NOW - timedelta(minutes=40))
    assert ops.hadoop_newest_change(uri) == NOW - timedelta(minutes=40) + timedelta(minutes=1)
    written_at(day, NOW - timedelta(minutes=5, seconds=30), "part-b/pages.jsonl")  # deep inside
    assert ops.hadoop_newest_change(uri) == NOW - timedelta(minutes=5)
    written_at(day, NOW - timedelta(minutes=40))
    written_at(day, NOW - timedelta(minutes=2, seconds=10), "")  # the directory itself (a file removed)
    assert ops.hadoop_newest_change(uri) == NOW - timedelta(minutes=2, seconds=10)
    with pytest.raises(ops.PathCheckError, match="cannot stat"):
        ops.hadoop_newest_change(f"file://{tmp_path}/nothing")


def test_launcher_noise_of_the_hadoop_client_is_not_a_failure(tmp_path, monkeypatch):
    """Old code: any stderr line without WARN/INFO/DEBUG made `-test -e`'s exit 1 a failure, so a gateway that
    prints "Picked up JAVA_TOOL_OPTIONS" or SLF4J's binding notice on every call failed the sensor (retries,
    then the day) instead of waiting for a path that is not there yet."""
    client = tmp_path / "fake-hdfs"
    client.write_text("#!/bin/sh\n"
                      "echo 'Picked up JAVA_TOOL_OPTIONS: -Xmx512m' >&2\n"
                      "echo 'SLF4J: Class path contains multiple SLF4J bindings.' >&2\n"
                      "if [ -n \"$FAIL\" ]; then echo \"test: $FAIL\" >&2; fi\n"
                      "exit 1\n")
    client.chmod(0o755)
    monkeypatch.setenv(ops.HADOOP_FS_ENV, str(client))
    assert ops.path_exists("hdfs:///crawl/2026-11-21") is False
    monkeypatch.setenv("FAIL", "Permission denied: user=airflow, access=EXECUTE")
    with pytest.raises(ops.PathCheckError, match="Permission denied"):
        ops.path_exists("hdfs:///crawl/2026-11-21")


def test_a_missing_hadoop_client_says_what_to_install(monkeypatch):
    monkeypatch.setenv(ops.HADOOP_FS_ENV, "/nonexistent/bin/hdfs dfs")
    with pytest.raises(ops.PathCheckError, match=f"not on the PATH.*{ops.HADOOP_FS_ENV}"):
        ops.path_exists("hdfs:///crawl/2026-11-21")


def test_result_gate_hands_on_the_summary(tmp_path):
    out = write_report(tmp_path / "day")
    summary = ops.judge_result(ops.read_report(out), out, 0.1, 0.5)
    assert summary == {"input_rows": 1000, "kept": 700, "duplicates": 300, "exact_duplicates": 120,
                       "near_duplicates": 180, "duplicate_rate": 0.3, "output": out}
    json.dumps(summary)  # an XCom and an Asset event's extra must be JSON


@pytest.mark.parametrize("bounds, counts, message", [
    ((0.0, 0.2), {}, r"duplicate rate 0\.3000 is above max_duplicate_rate 0\.2: 300 duplicates \(120 exact, 180 near\) "
                     r"of 1000 rows, 700 kept"),
    ((0.4, 0.9), {}, r"duplicate rate 0\.3000 is below min_duplicate_rate 0\.4: 300 duplicates"),
    ((0.0, 0.9), {"input_rows": 0, "kept": 0, "duplicates": 0, "exact_duplicates": 0, "near_duplicates": 0},
     r"read 0 rows"),
])
def test_result_gate_rejects_with_the_numbers(tmp_path, bounds, counts, message):
    out = write_report(tmp_path / "day", **counts)
    with pytest.raises(ops.ResultRejected, match=message):
        ops.judge_result(ops.read_report(out), out, *bounds)


def test_result_gate_reads_the_schemas_counts():
    """The gate's numbers are fields of report.json's schema (job/report_schema.py) that every report has: the
    DAG cannot import the package (Airflow's own environment), so this test ties its keys to the schema."""
    fields = {f.name: f for f in dataclasses.fields(Report)}
    hints = typing.get_type_hints(Report)
    for key in ops.SUMMARY_KEYS:
        assert key in fields and hints[key] is int, key
        assert not fields[key].metadata["optional"] and not fields[key].metadata["job_only"], key


def test_result_gate_needs_a_finished_run(tmp_path):
    out = write_report(tmp_path / "day", finished=False)
    with pytest.raises(ops.ResultRejected, match="no _SUCCESS"):
        ops.read_report(out)
    with pytest.raises(ops.ResultRejected, match="lacks near_duplicates"):
        ops.judge_result({"input_rows": 1, "kept": 1, "duplicates": 0, "exact_duplicates": 0}, out, 0, 1)


def test_spark_settings_from_params():
    params = {"spark_conf": {"spark.pyspark.python": "./env/bin/python", "spark.executor.memory": "8g"},
              "archives": "hdfs:///envs/dedup.tar.gz#env", "executor_memory": "8g", "num_executors": 40,
              "executor_cores": None, "driver_memory": ""}
    assert ops.spark_conf(params) == {
        "spark.pyspark.python": "./env/bin/python", "spark.executor.memory": "8g",
        "spark.archives": "hdfs:///envs/dedup.tar.gz#env", "spark.executor.instances": "40"}
    assert ops.spark_conf({}) == {}
    with pytest.raises(ValueError, match="executor_memory='4g' contradicts spark_conf spark.executor.memory='8g'"):
        ops.spark_conf({**params, "executor_memory": "4g"})


def test_the_days_input_from_the_path_pattern():
    assert ops.day_input(ops.DEFAULT_INPUT_PATH, "hdfs:///crawl/", "2026-11-21") == "hdfs:///crawl/2026-11-21"
    pattern = "{crawl_root}/{yyyy}/{mm}/{dd}/dt={ds_nodash}/*.{{wet,json}}.gz"
    got = ops.day_input(pattern, "s3a://b/crawl", "2026-03-07")
    assert got == "s3a://b/crawl/2026/03/07/dt=20260307/*.{wet,json}.gz"
    assert ops.input_directory(got) == "s3a://b/crawl/2026/03/07/dt=20260307"
    assert ops.input_directory("/crawl/2026-*/x") == "/crawl" and ops.input_directory("/c/d") == "/c/d"
    with pytest.raises(ValueError, match=r"names \{day\}: use \{crawl_root\}, \{ds\}"):
        ops.day_input("{crawl_root}/{day}", "/c", "2026-03-07")
    with pytest.raises(ValueError, match="doubled"):
        ops.day_input("{crawl_root}/{a,b}", "/c", "2026-03-07")
    with pytest.raises(ValueError, match="doubled"):
        ops.day_input("{crawl_root}/{", "/c", "2026-03-07")


def test_job_options_from_params(tmp_path):
    """The named params, then job_options (true/false: --flag/--no-flag, null: left out), in an order the job
    parses to the same settings; options the DAG sets itself, or given twice, are refused."""
    params = {"config": "/etc/news.toml", "input_format": "json", "id_col": None, "text_col": "body", "k": 4,
              "min_similarity": 0.85, "job_options": {"tokenizer": "word", "stop_words": True, "--allow-empty": False,
                                                      "weighting": None}}
    args = ops.job_arguments(params)
    assert args == ["--config", "/etc/news.toml", "--input-format", "json", "--text-col", "body", "--k", "4",
                    "--min-similarity", "0.85", "--tokenizer", "word", "--stop-words", "--no-allow-empty"]
    assert ops.job_arguments({}) == [] and ops.job_arguments({"job_options": None, "k": ""}) == []
    with pytest.raises(ValueError, match="sets --run-date itself"):
        ops.job_arguments({"job_options": {"run_date": "2026-01-01"}})
    with pytest.raises(ValueError, match="repeats the param text_col"):
        ops.job_arguments({"text_col": "body", "job_options": {"text-col": "html"}})
    # the job's parser takes them (no --config here: the file would have to exist)
    args = ops.job_arguments({**params, "config": None})
    cfg = load_config(["--input", str(tmp_path), "--output", str(tmp_path / "out"), *args])
    assert (cfg.input_format, cfg.text_col, cfg.k, cfg.tokenizer, cfg.stop_words, cfg.allow_empty) == (
        "json", "body", 4, "word", True, False)


def test_the_dags_input_formats_are_the_jobs():
    (action,) = [a for a in build_parser()._actions if a.dest == "input_format"]
    assert tuple(action.choices) == ops.INPUT_FORMATS


def test_param_defaults_from_the_environment(monkeypatch):
    assert ops.param_default("max_duplicate_rate", 0.9, float) == 0.9
    monkeypatch.setenv("SIMHASH_DEDUP_MAX_DUPLICATE_RATE", "0.6")
    monkeypatch.setenv("SIMHASH_DEDUP_SPARK_CONF", '{"spark.yarn.queue": "crawl"}')
    assert ops.param_default("max_duplicate_rate", 0.9, float) == 0.6
    assert ops.param_default("spark_conf", {}, dict) == {"spark.yarn.queue": "crawl"}
    monkeypatch.setenv("SIMHASH_DEDUP_SPARK_CONF", '["not", "an object"]')
    with pytest.raises(ValueError, match="SIMHASH_DEDUP_SPARK_CONF"):
        ops.param_default("spark_conf", {}, dict)
    monkeypatch.setenv("SIMHASH_DEDUP_PACKED_ENV", "true")
    assert ops.param_default("packed_env", False, bool) is True
    monkeypatch.setenv("SIMHASH_DEDUP_PACKED_ENV", "1")
    with pytest.raises(ValueError, match="SIMHASH_DEDUP_PACKED_ENV='1' is not true or false"):
        ops.param_default("packed_env", False, bool)
    monkeypatch.setenv("SIMHASH_DEDUP_NUM_EXECUTORS", "many")
    with pytest.raises(ValueError, match="SIMHASH_DEDUP_NUM_EXECUTORS='many' is not a valid int"):
        ops.param_default("num_executors", None, int)


def test_failure_callback_is_configurable(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv(ops.ON_FAILURE_ENV, raising=False)
    assert ops.failure_callback() is ops.log_failure
    with caplog.at_level(logging.ERROR):
        ops.log_failure({"ds": "2026-11-21", "exception": RuntimeError("spark-submit exited 1")})
    assert "day 2026-11-21 failed: spark-submit exited 1" in caplog.text
    (tmp_path / "crawl_alerts.py").write_text("def page(context):\n    return 'paged ' + context['ds']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(ops.ON_FAILURE_ENV, "crawl_alerts:page")
    assert ops.failure_callback()({"ds": "2026-11-21"}) == "paged 2026-11-21"
    monkeypatch.setenv(ops.ON_FAILURE_ENV, "crawl_alerts.page")
    assert ops.failure_callback()({"ds": "d"}) == "paged d"
    monkeypatch.setenv(ops.ON_FAILURE_ENV, "crawl_alerts:nothing")
    with pytest.raises(ValueError, match="SIMHASH_DEDUP_ON_FAILURE='crawl_alerts:nothing': cannot import it"):
        ops.failure_callback()


def test_the_drivers_own_fork_is_not_a_second_driver(tmp_path):
    """ops.driver_processes (the kill's driver search) under a real process tree: a stand-in for spark-submit whose
    child runs the application, which forks (a subprocess between its fork and its exec shows the driver's command
    line): one driver, the application's process, not its fork."""
    import subprocess
    import sys
    import time

    import psutil

    app = tmp_path / "dedup_job.py"
    app.write_text("import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\ntime.sleep(60)\n")
    submit = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, {str(app)!r}])"])
    try:
        deadline = time.time() + 30
        while True:
            named = [p for p in psutil.Process(submit.pid).children(recursive=True) if str(app) in p.cmdline()]
            if len(named) == 2 or time.time() > deadline:
                break
            time.sleep(0.05)
        assert len(named) == 2, named  # the premise: the driver and its fork, both naming the application
        (driver,) = [p for p in named if p.ppid() == submit.pid]
        assert [p.pid for p in ops.driver_processes(submit.pid, "jobs/dedup_job.py")] == [driver.pid]
    finally:
        for p in psutil.Process(submit.pid).children(recursive=True):
            p.kill()
        submit.kill()
        submit.wait()
