"""The Airflow DAG, loaded and run piece by piece by real Airflow 3.x and 2.x (each in its own environment, made by
scripts/airflow_env.sh, apart from the job's): it loads without import errors, the scheduler's timetable gives
the day that just ended, the spark-submit command the provider's hook builds carries the dated paths and the
Spark settings of the params, the input sensor finds, waits for or gives up on the day's input, the result gate
passes a report.json on as XCom and Asset event or fails with its numbers, the failure callback hook is
called, the documented backfill commands (docs/operations.md) are accepted by the installed Airflow's own
command line parser, and a broken DAG file shows up as an import error. Both Airflow checks run at the same
time, one subprocess each (tests/airflow_dag_check.py)."""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from simhash_udf.evaluation.sample_corpus import make_sample_corpus
from simhash_udf.job.config import load_config
from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from ship import ship  # noqa: E402
from spark_cluster import StandaloneCluster  # noqa: E402

DAY = "2026-11-21"
VERSIONS = ("3", "2")


def airflow_env(base, version, **extra):
    return dict(
        os.environ,
        AIRFLOW_HOME=str(base / f"airflow-home-{version}"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        SIMHASH_DEDUP_HOME="/opt/simhash-dedup",
        SIMHASH_DEDUP_CRAWL_ROOT="hdfs:///crawl",
        SIMHASH_DEDUP_DEDUP_ROOT="hdfs:///dedup",
        SIMHASH_DEDUP_SPARK_CONN="spark_crawl",
        AIRFLOW_CONN_SPARK_CRAWL="spark://127.0.0.1:7077",
        **extra,
    )


def start_check(python, spec, spec_path, env):
    spec_path.write_text(json.dumps(spec))
    return subprocess.Popen([python, os.path.join(ROOT, "tests", "airflow_dag_check.py"), str(spec_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)  # its own process group: a timeout ends its spark-submit too


def finish_check(proc):
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.split("RESULT ", 1)[1])


# A crawl unlike the defaults: JSON Lines under dt=YYYYMMDD/ (a glob), the text in "body", its own --config file
OTHER_CRAWL = {"crawl_root": "hdfs:///news", "input_path": "{crawl_root}/dt={ds_nodash}/part-*.json.gz",
               "input_format": "json", "text_col": "body", "id_col": "url", "min_similarity": 0.9,
               "job_options": {"tokenizer": "word", "stop-words": True, "shuffle-partitions": 400}}


def job_args(crawl_root, dedup_root):
    """What the DAG's dedup task passes to the job for DAY."""
    return ["--input", f"{crawl_root}/{DAY}", "--output", f"{dedup_root}/{DAY}", "--history", f"{dedup_root}/history",
            "--run-date", DAY, "--overwrite"]


def readme_backfill_commands():
    """The backfill command lines of the Airflow section of docs/operations.md, each marked `# Airflow N`."""
    text = open(os.path.join(ROOT, "docs", "operations.md"), encoding="utf-8").read()
    section = text.split("\n## Airflow\n", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^\s*(airflow [^#\n]*backfill[^#\n]*?)\s*#\s*Airflow ([23])", section, flags=re.M)
    return {version: [cmd for cmd, v in found if v == version] for version in VERSIONS}


@pytest.fixture(scope="module")
def airflow_pythons():
    """Both Airflow environments, installed at the same time (uv), or reused when their pins are unchanged."""
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "airflow_env.sh"), *VERSIONS], capture_output=True,
                          text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(zip(VERSIONS, proc.stdout.strip().splitlines()[-len(VERSIONS):]))


def write_day_output(folder, finished=True, **counts):
    """DIR as the job leaves it: report.json (the job's summary keys among others) and _SUCCESS."""
    folder.mkdir(parents=True)
    report = {"input_rows": 1200, "kept": 900, "duplicates": 300, "exact_duplicates": 100, "near_duplicates": 200,
              "bad_rows": {"null_text": 0}, "fingerprint_version": "sh64-1"}
    report.update(counts)
    (folder / "report.json").write_text(json.dumps(report))
    if finished:
        (folder / "_SUCCESS").touch()
    return report


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """The crawl's day directory and the day's output (a finished one, an empty one, an unfinished one), and a
    failure hook module. (The job itself is not run here: a run costs more than all these checks.)"""
    base = tmp_path_factory.mktemp("airflow-day")
    crawl, dedup = base / "crawl", base / "dedup"
    (crawl / DAY).mkdir(parents=True)
    (crawl / DAY / "pages.jsonl").write_text(json.dumps({"id": 1, "text": "a page"}) + "\n")
    an_hour_ago = time.time() - 3600  # a complete day: nothing in it changed for longer than input_quiet_minutes
    for path in (crawl / DAY / "pages.jsonl", crawl / DAY):
        os.utime(path, (an_hour_ago, an_hour_ago))
    other = base / "news" / f"dt={DAY.replace('-', '')}"  # OTHER_CRAWL's layout, a complete day
    other.mkdir(parents=True)
    (other / "part-0.json.gz").write_bytes(b"")
    for path in (other / "part-0.json.gz", other):
        os.utime(path, (an_hour_ago, an_hour_ago))
    (base / "crawling" / DAY).mkdir(parents=True)  # a day the crawler is still writing into
    (base / "crawling" / DAY / "pages.jsonl").write_text(json.dumps({"id": 1, "text": "a page"}) + "\n")
    kill_crawl = base / "kill-crawl"  # the day the kill check's job runs on
    (kill_crawl / DAY).mkdir(parents=True)
    (kill_crawl / DAY / "pages.jsonl").write_text("".join(
        json.dumps({"id": i, "text": f"page {i} of the crawl, about topic {i % 7} and item {i * 31 % 101}"}) + "\n"
        for i in range(300)))
    report = write_day_output(dedup / DAY)
    write_day_output(base / "unfinished" / DAY, finished=False)
    write_day_output(base / "empty" / DAY, input_rows=0, kept=0, duplicates=0, exact_duplicates=0, near_duplicates=0)
    hooks = base / "hooks"
    hooks.mkdir()
    (hooks / "crawl_alerts.py").write_text(
        "import json, os\n"
        "def record(context):\n"
        "    with open(os.environ['ALERTS_FILE'], 'a') as f:\n"
        "        f.write(json.dumps({'ds': context['ds'], 'error': str(context['exception'])}) + '\\n')\n")
    (base / "news.toml").write_text("[search]\nk = 4\n")  # the crawl's --config file
    return {"base": base, "crawl": str(crawl), "other_crawl": str(base / "news"), "kill_crawl": str(kill_crawl),
            "dedup": str(dedup), "report": report, "hooks": str(hooks)}


@pytest.fixture(scope="module")
def checks(airflow_pythons, day):
    base = day["base"]
    rate = day["report"]["duplicates"] / day["report"]["input_rows"]
    missing = str(base / "no-crawl")
    spec = {
        "dag_folder": os.path.join(ROOT, "dags"),
        "day": DAY,
        "renders": [
            {},
            {"crawl_root": day["crawl"], "dedup_root": day["dedup"]},
            {"archives": "hdfs:///envs/simhash-dedup.tar.gz#env", "executor_memory": "8g", "num_executors": 40,
             "executor_cores": 4, "driver_memory": "4g", "spark_conf": {"spark.pyspark.python": "./env/bin/python"}},
            {"executor_memory": "8g", "spark_conf": {"spark.executor.memory": "4g"}},
            dict(OTHER_CRAWL, config=str(base / "news.toml")),
            {"job_options": {"output": "/elsewhere"}},
            {"input_path": "{crawl_root}/{date}"},
            {"packed_env": True, "executor_memory": "2g"},
        ],
        "pokes": [
            {"params": {"crawl_root": day["crawl"]}},
            {"params": {"crawl_root": missing}, "data_interval_end": "2099-01-01T00:00:00+00:00"},
            {"params": {"crawl_root": missing}, "data_interval_end": "2000-01-01T00:00:00+00:00"},
            {"params": {"crawl_root": day["crawl"], "input_marker": "_CRAWL_DONE"},
             "data_interval_end": "2099-01-01T00:00:00+00:00"},
            {"params": {"crawl_root": str(base / "crawling")}, "data_interval_end": "2099-01-01T00:00:00+00:00"},
            {"params": {"crawl_root": str(base / "crawling")}, "data_interval_end": "2000-01-01T00:00:00+00:00"},
            {"params": {"crawl_root": str(base / "crawling"), "input_quiet_minutes": 0}},
            {"params": {"crawl_root": day["other_crawl"], "input_path": OTHER_CRAWL["input_path"]}},
        ],
        "gates": [
            {"params": {"dedup_root": day["dedup"]}},
            {"params": {"dedup_root": day["dedup"], "max_duplicate_rate": round(rate / 2, 4)}},
            {"params": {"dedup_root": str(base / "empty")}},
            {"params": {"dedup_root": str(base / "unfinished")}},
        ],
        "callbacks": True,
        "cli": sorted(cmd for cmds in readme_backfill_commands().values() for cmd in cmds),
    }
    broken = base / "broken-dags"  # a DAG file with a bad operator argument
    shutil.copytree(os.path.join(ROOT, "dags"), broken)
    source = (broken / "simhash_dedup.py").read_text()
    (broken / "simhash_dedup.py").write_text(source.replace("    dedup = DedupSparkSubmitOperator(\n",
                                                            "    dedup = DedupSparkSubmitOperator(\n        bogus=1,\n"))
    spec["other_folders"] = {"broken": str(broken)}
    procs = {}
    for version, python in airflow_pythons.items():
        env = airflow_env(base, version, SIMHASH_DEDUP_ON_FAILURE="crawl_alerts:record", PYTHONPATH=day["hooks"],
                          ALERTS_FILE=str(base / f"alerts-{version}.jsonl"),
                          # the kill check's spark-submit and driver: the job's environment, Spark in local mode
                          PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
                          PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
                          AIRFLOW_CONN_SPARK_LOCAL=json.dumps({"conn_type": "spark", "host": "local[2]"}))
        kill_root = base / f"kill-dedup-{version}"
        write_day_output(kill_root / DAY, note="the earlier run")  # DIR must stay as it was
        spec_v = dict(spec, kills=[{"params": {"crawl_root": day["kill_crawl"], "dedup_root": str(kill_root)},
                                    "conn_id": "spark_local", "application": os.path.join(ROOT, "jobs", "dedup_job.py")}])
        procs[version] = start_check(python, spec_v, base / f"spec-{version}.json", env)
    return {version: finish_check(proc) for version, proc in procs.items()}


@pytest.mark.parametrize("version", VERSIONS)
def test_dag_loads_with_the_day_that_just_ended(checks, version):
    got = checks[version]
    assert got["airflow_version"].startswith(version + ".")
    assert got["import_errors"] == {} and got["dag_ids"] == ["simhash_dedup"]
    assert got["upstream"] == {"wait_for_input": [], "dedup": ["wait_for_input"], "check_result": ["dedup"]}
    assert "SparkSubmitOperator" in got["operators"]["dedup"] and "BaseSensorOperator" in got["operators"]["wait_for_input"]
    # "@daily" alone gives Airflow 3 the day that starts (CronTriggerTimetable): the input would not exist yet
    assert got["timetable"] == "CronDataIntervalTimetable" and got["data_interval"] == [DAY, "2026-11-22"]
    # many runs at once (a cleared missing day must be able to start while later days wait for it); the order of
    # the history comes from dedup's depends_on_past and wait_for_downstream
    assert got["max_active_runs"] >= 31 and got["conn_id"] == "spark_crawl"
    tasks = got["tasks"]
    assert tasks["dedup"]["depends_on_past"] and tasks["dedup"]["wait_for_downstream"] and tasks["dedup"]["retries"] == 2
    assert not tasks["wait_for_input"]["depends_on_past"] and tasks["wait_for_input"]["mode"] == "reschedule"
    assert tasks["check_result"]["outlets"] and tasks["check_result"]["outlets"][0].startswith("hdfs:")


@pytest.mark.parametrize("version", VERSIONS)
def test_spark_submit_command_with_settings_from_params(checks, day, version):
    default, local, tuned, contradictory = checks[version]["commands"][:4]
    expected_args = job_args("hdfs:///crawl", "hdfs:///dedup")
    assert default["ok"] == [
        "spark-submit", "--master", "spark://127.0.0.1:7077", "--py-files", "/opt/simhash-dedup/dist/simhash_udf.zip",
        "--name", f"simhash-dedup-{DAY}", "/opt/simhash-dedup/jobs/dedup_job.py", *expected_args,
    ]
    assert load_config(expected_args).history == "hdfs:///dedup/history"
    # local roots: the same arguments, which the job accepts
    assert local["ok"][-len(expected_args):] == job_args(day["crawl"], day["dedup"])
    assert load_config(job_args(day["crawl"], day["dedup"])).output == f"{day['dedup']}/{DAY}"
    confs = [tuned["ok"][i + 1] for i, a in enumerate(tuned["ok"]) if a == "--conf"]
    assert sorted(confs) == sorted([
        "spark.pyspark.python=./env/bin/python", "spark.archives=hdfs:///envs/simhash-dedup.tar.gz#env",
        "spark.executor.memory=8g", "spark.executor.instances=40", "spark.executor.cores=4", "spark.driver.memory=4g"])
    assert contradictory["error"] == "ValueError" and "contradicts spark_conf spark.executor.memory" in contradictory["message"]
    # a manual run of the day (logical date the next day on Airflow 2, none on Airflow 3) runs the day of its
    # data interval (not the next day's input and output, and the command renders)
    assert checks[version]["manual_commands"] == [default, default]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_crawl_with_its_own_layout_and_options(checks, day, version):
    """Params for a crawl that differs from the defaults (OTHER_CRAWL, plus a --config file): the day's input
    from the input_path pattern, the job's options after the DAG's own arguments, all accepted by the job;
    the sensor looks at the glob's directory; an option the DAG sets itself and an unknown field are refused."""
    other, own_output, bad_field = checks[version]["commands"][4:7]
    args = other["ok"][other["ok"].index("/opt/simhash-dedup/jobs/dedup_job.py") + 1:]
    config = str(day["base"] / "news.toml")
    assert args[:args.index("--overwrite") + 1] == [
        "--input", f"hdfs:///news/dt={DAY.replace('-', '')}/part-*.json.gz", "--output", f"hdfs:///dedup/{DAY}",
        "--history", "hdfs:///dedup/history", "--run-date", DAY, "--overwrite"]
    assert args[args.index("--overwrite") + 1:] == [
        "--config", config, "--input-format", "json", "--id-col", "url", "--text-col", "body", "--min-similarity", "0.9",
        "--tokenizer", "word", "--stop-words", "--shuffle-partitions", "400"]
    cfg = load_config(args)
    assert (cfg.input_format, cfg.text_col, cfg.id_col, cfg.min_similarity, cfg.tokenizer, cfg.stop_words,
            cfg.shuffle_partitions, cfg.k) == ("json", "body", "url", 0.9, "word", True, 400, 4)  # k from the file
    assert own_output["error"] == "ValueError" and "sets --output itself" in own_output["message"]
    assert bad_field["error"] == "ValueError" and "{date}" in bad_field["message"] and "{ds}" in bad_field["message"]
    assert checks[version]["pokes"][7] == {"ok": True}  # dt=.../ exists and is quiet: the glob's directory


@pytest.mark.parametrize("version", VERSIONS)
def test_the_packed_environment_of_ship_sh(checks, version):
    """packed_env: the executors get scripts/ship.sh's dist/env.tar.gz from SIMHASH_DEDUP_HOME and run its
    Python, the driver HOME/.venv's; the zip of the same build is --py-files in every run."""
    command = checks[version]["commands"][7]["ok"]
    confs = sorted(command[i + 1] for i, a in enumerate(command) if a == "--conf")
    assert confs == ["spark.archives=/opt/simhash-dedup/dist/env.tar.gz#env", "spark.executor.memory=2g",
                     "spark.pyspark.driver.python=/opt/simhash-dedup/.venv/bin/python",
                     "spark.pyspark.python=./env/bin/python"]
    assert command[command.index("--py-files") + 1] == "/opt/simhash-dedup/dist/simhash_udf.zip"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_killed_task_stops_the_job_cleanly(checks, day, version):
    """Airflow's on_kill (a timeout, a task marked failed): the provider SIGKILLs spark-submit, whose Python
    driver then could not clean up (lock and staging left beside DIR for the next run, jobs not cancelled). The
    DAG's operator first sends the driver SIGTERM: the job stops, cleans up and exits 143."""
    (killed,) = checks[version]["kills"]
    assert "ok" in killed, killed
    killed = killed["ok"]
    shown = {k: v for k, v in killed.items() if k != "message"}  # spark-submit's output: in the message
    assert killed.get("returncode") == 143, shown
    assert killed["execute"] == "AirflowException"  # the task fails (and is retried by Airflow as any failure)
    assert killed["drivers"] == 1 and killed["drivers_left"] == [], shown  # the driver was found and has ended
    assert killed["left"] == [] and killed["history_left"] == [], shown  # no lock, no staging
    assert json.loads(killed["report"])["note"] == "the earlier run"
    assert killed["kill_seconds"] < 45


@pytest.mark.parametrize("version", VERSIONS)
def test_input_sensor_finds_waits_for_or_gives_up_on_the_day(checks, day, version):
    present, not_yet, past_deadline, no_marker, writing, writing_past_deadline, no_quiet = checks[version]["pokes"][:7]
    assert present == {"ok": True} and not_yet == {"ok": False} and no_marker == {"ok": False}
    assert past_deadline["error"] == "AirflowFailException"  # fails without retries
    assert f"no-crawl/{DAY} does not exist" in past_deadline["message"] and "depends_on_past" in past_deadline["message"]
    # without a marker, a directory changed within input_quiet_minutes (default 30) is not complete yet
    assert writing == {"ok": False} and no_quiet == {"ok": True}
    assert writing_past_deadline["error"] == "AirflowFailException"
    assert "still being written" in writing_past_deadline["message"] and "input_marker" in writing_past_deadline["message"]


@pytest.mark.parametrize("version", VERSIONS)
def test_result_gate_on_a_real_report(checks, day, version):
    accepted, too_many, empty, unfinished = checks[version]["gates"]
    report = day["report"]
    numbers = {k: report[k] for k in ("input_rows", "kept", "duplicates", "exact_duplicates", "near_duplicates")}
    summary = accepted["ok"]["xcom"]
    assert summary == {**numbers, "duplicate_rate": round(report["duplicates"] / report["input_rows"], 6),
                       "output": f"{day['dedup']}/{DAY}", "run_date": DAY}
    assert accepted["ok"]["asset_extra"] == summary
    assert too_many["error"] == "AirflowFailException"
    assert (f"{report['duplicates']} duplicates ({report['exact_duplicates']} exact, {report['near_duplicates']} near) "
            f"of {report['input_rows']} rows") in too_many["message"] and "above max_duplicate_rate" in too_many["message"]
    assert empty["error"] == "AirflowFailException" and "read 0 rows" in empty["message"]
    assert unfinished["error"] == "AirflowFailException" and "no _SUCCESS" in unfinished["message"]


@pytest.mark.parametrize("version", VERSIONS)
def test_failure_callback_hook_is_called(checks, day, version):
    assert checks[version]["callbacks"] == {"ok": 1}
    lines = (day["base"] / f"alerts-{version}.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"ds": DAY, "error": "spark-submit exited 1"}]


@pytest.mark.parametrize("version", VERSIONS)
def test_readme_backfill_command_of_each_airflow(checks, version):
    """Each version's command is accepted by its own CLI parser and refused by the other's (Airflow 3 removed
    `airflow dags backfill`; Airflow 2 has no `airflow backfill`), so docs/operations.md must name both."""
    commands = readme_backfill_commands()
    assert commands[version], "docs/operations.md's Airflow section names no backfill command for Airflow " + version
    parsed = checks[version]["cli"]
    for cmd in commands[version]:
        assert "ok" in parsed[cmd], parsed[cmd]
    for other in VERSIONS:
        if other != version:
            for cmd in commands[other]:
                assert "error" in parsed[cmd] and "exit 2" in parsed[cmd]["error"], parsed[cmd]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_broken_dag_is_reported(checks, version):
    got = checks[version]["other_folders"]["broken"]
    assert got["dag_ids"] == [] and len(got["import_errors"]) == 1
    assert "bogus" in next(iter(got["import_errors"].values()))


def deployment_checklist():
    """The command lines of the deployment checklist in docs/operations.md, by step: copy, build, connection, first."""
    text = open(os.path.join(ROOT, "docs", "operations.md"), encoding="utf-8").read()
    section = text.split("\n### Deployment checklist\n", 1)[1].split("\n## ", 1)[0]
    steps, step = {}, None
    for line in re.search(r"```\n(.*?)\n```", section, flags=re.S).group(1).splitlines():
        heading = re.match(r"# \d\. (\w+)", line)
        if heading:
            step = steps.setdefault(heading.group(1), [])
        elif line.strip():
            step.append(line.strip())
    return steps


def shell(line, cwd, env):
    proc = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{line}: {proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def deployment(airflow_pythons, tmp_path_factory):
    """docs/operations.md's deployment checklist, followed on this machine for Airflow 3: /opt/simhash-dedup is a
    temporary directory, `git clone` a copy of this checkout's files, the master a standalone cluster on
    127.0.0.1 instead of YARN, the roots local directories. Two stand-ins keep step 2 short: this checkout's
    .venv (same pyproject.toml, so ship.sh's setup keeps it) and its dist/env.tar.gz (same dependencies, so
    ship.sh keeps it; built here first if need be); ship.sh builds the zip from the copy."""
    steps = deployment_checklist()
    assert list(steps) == ["copy", "build", "connection", "first"], steps
    base = tmp_path_factory.mktemp("deployment")
    home, airflow_home = base / "simhash-dedup", base / "airflow-home-3"
    (airflow_home / "dags").mkdir(parents=True)
    env = dict(os.environ, AIRFLOW_HOME=str(airflow_home))

    def local(line):
        return line.replace("/opt/simhash-dedup", str(home))

    clone, copy_dags = steps["copy"]  # 1. copy
    assert clone == "git clone <repository> /opt/simhash-dedup"
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    for name in listed:
        if os.path.isfile(os.path.join(ROOT, name)):
            os.makedirs(home / os.path.dirname(name), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, name), home / name)
    shell(local(copy_dags), base, env)
    assert sorted(os.listdir(airflow_home / "dags")) == ["simhash_dedup.py", "simhash_dedup_ops.py"]

    built = ship()  # 2. build (with the stand-ins above)
    os.symlink(os.path.join(ROOT, ".venv"), home / ".venv")
    (home / "dist").mkdir()
    for name in ("env.tar.gz", "env.tar.gz.key"):
        os.symlink(os.path.join(os.path.dirname(built["archive"]), name), home / "dist" / name)
    (build,) = steps["build"]
    shell(local(build), base, env)
    assert (home / "dist" / "simhash_udf.zip").exists()

    day_dir = base / "crawl" / DAY  # the day's pages, complete an hour ago
    day_dir.mkdir(parents=True)
    pages = pd.DataFrame(make_sample_corpus(40, seed=11))
    pages.to_parquet(day_dir / "pages.parquet")
    for path in (day_dir / "pages.parquet", day_dir):
        os.utime(path, (time.time() - 3600,) * 2)
    exports = {}  # 3. connection and settings
    for line in steps["connection"]:
        words = shlex.split(line)
        assert words[0] == "export", line
        exports.update(w.split("=", 1) for w in words[1:])
    assert json.loads(exports["AIRFLOW_CONN_SPARK_DEFAULT"])["conn_type"] == "spark"
    with StandaloneCluster(str(base / "cluster"), workers=1, cores=2, memory="2g") as cluster:
        host, port = cluster.url.rsplit(":", 1)
        exports.update(AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": host, "port": int(port)}),
                       SIMHASH_DEDUP_HOME=str(home), SIMHASH_DEDUP_CRAWL_ROOT=str(base / "crawl"),
                       SIMHASH_DEDUP_DEDUP_ROOT=str(base / "dedup"),
                       # a crawl's own settings (step 3's note): a day of a few dozen pages needs a few
                       # partitions, not the session's 200 (each stage's tasks cost seconds on one worker)
                       SIMHASH_DEDUP_JOB_OPTIONS='{"shuffle-partitions": 4}')
        # the day's driver and executor live for one small run: the short-run JVM options, from a
        # spark-defaults.conf (as a cluster's own would set them), so that the DAG's command stays the checklist's
        conf_dir = base / "spark-conf"
        conf_dir.mkdir()
        (conf_dir / "spark-defaults.conf").write_text("".join(
            f"spark.{role}.extraJavaOptions {SHORT_RUN_JAVA_OPTIONS}\n" for role in ("driver", "executor")))
        check_env = {**airflow_env(base, "3"), **exports, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": str(conf_dir),
                     "PATH": os.path.join(ROOT, ".venv", "bin") + os.pathsep + os.environ.get("PATH", "")}
        for name in ("SIMHASH_DEDUP_SPARK_CONN", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
            check_env.pop(name, None)  # the checklist's defaults: spark_default, the Pythons of the packed_env param
        spec = {"dag_folder": str(airflow_home / "dags"), "day": DAY, "first_runs": [{}], "cli": steps["first"]}
        result = finish_check(start_check(airflow_pythons["3"], spec, base / "spec-deploy.json", check_env))
    return {"result": result, "home": str(home), "steps": steps, "dedup": str(base / "dedup"), "pages": len(pages)}


@pytest.mark.cluster
@pytest.mark.spark
@pytest.mark.slow
def test_the_deployment_checklist_gives_a_first_run(deployment):
    """Copy, build, connection, first run, as docs/operations.md lists them: the DAG loads from the DAG folder, its
    first day runs spark-submit onto the cluster with the zip and the packed environment of the build, and the
    result gate hands on the day's numbers; the checklist's Airflow commands are the installed Airflow's."""
    result, home = deployment["result"], deployment["home"]
    assert result["import_errors"] == {} and result["dag_ids"] == ["simhash_dedup"]
    (run,) = result["first_runs"]
    assert "ok" in run, run
    run = run["ok"]
    assert run["ready"] is True
    command = run["command"]
    assert command[command.index("--py-files") + 1] == f"{home}/dist/simhash_udf.zip"
    confs = [command[i + 1] for i, a in enumerate(command) if a == "--conf"]
    assert f"spark.archives={home}/dist/env.tar.gz#env" in confs and "spark.pyspark.python=./env/bin/python" in confs
    assert command[command.index("--master") + 1].startswith("spark://127.0.0.1:")
    assert command[-2:] == ["--shuffle-partitions", "4"]
    summary = run["gate"]["xcom"]
    assert summary["input_rows"] == deployment["pages"] and summary["run_date"] == DAY
    assert summary["output"] == f"{deployment['dedup']}/{DAY}"
    assert os.path.exists(os.path.join(deployment["dedup"], "history"))
    test_day = [line for line in deployment["steps"]["first"] if " dags test " in line]
    assert test_day == [f"airflow dags test simhash_dedup {DAY}"]
    for line in deployment["steps"]["first"]:
        assert "ok" in result["cli"][line], result["cli"][line]
