"""The README's spark-submit lines ("Use it"), run as written in a shell of their own (no activated venv, no
PYSPARK_PYTHON), only the --input and --output paths replaced by a small crawl and a temporary directory: the
build step, the activation and the spark-submit line itself (local master). The run also writes Spark's event log
(spark.* properties in SPARK_SUBMIT_OPTS, the command line unchanged): in local mode the job leaves its session to
spark-submit's JVM (session.stopped_by_its_jvm), and the log closing with the application's end shows that the
JVM's shutdown hook stopped it (a context never stopped leaves its log '.inprogress')."""
import json
import os
import re
import subprocess

import pandas as pd
import pytest

from simhash_udf.evaluation.sample_corpus import make_sample_corpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(ROOT, ".venv", "bin")

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def readme_submit_block() -> list[str]:
    """The command lines of the README's first code block under "**spark-submit**" (comments dropped)."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text.split("\n## Use it\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"\*\*spark-submit\*\*.*?\n```\n(.*?)\n```", section, flags=re.S)
    assert block, "README.md's 'Use it' section has no code block after **spark-submit**"
    return [re.sub(r"\s+#.*$", "", line).strip() for line in block.group(1).splitlines() if line.strip()]


def fresh_shell_env() -> dict:
    """This environment as a new terminal would have it: the project's venv neither activated nor named."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "SPARK_HOME", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if os.path.abspath(p) != VENV_BIN)
    return env


# A line of Spark's own log4j output at INFO (its default pattern: "yy/MM/dd HH:mm:ss LEVEL Logger: message").
SPARK_INFO_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ", flags=re.M)


def check_quiet_log(log: str, report: dict) -> None:
    """The job's log at spark-submit's default level: none of Spark's INFO lines (session.JOB_LOG_SETTINGS) and no
    plan-truncation warnings (session.quiet_plan_truncation; the run's plans exceed the job's cap), and one
    progress line per stage with its seconds (the first two with their rows)."""
    assert not SPARK_INFO_LINE.search(log), SPARK_INFO_LINE.findall(log)[:5]
    assert "Truncated the string representation" not in log
    progress = re.findall(r"simhash_dedup INFO stage (\w+): (.*)", log)
    assert [stage for stage, _ in progress] == list(report["seconds"]), progress
    for stage, line in progress:
        assert line.startswith(f"done in {report['seconds'][stage]:.1f} s"), (stage, line)
    assert f"(rows {report['input_rows']:,}, " in dict(progress)["fingerprint"]


def test_readme_spark_submit_lines_as_written(tmp_path):
    lines = readme_submit_block()
    submit = [line for line in lines if line.startswith("spark-submit ")]
    assert len(submit) == 1 and lines.index(submit[0]) == len(lines) - 1, lines  # the build step comes first
    crawl = tmp_path / "crawl" / "2026-11-23"
    crawl.mkdir(parents=True)
    pages = pd.DataFrame(make_sample_corpus(40, seed=5))
    pages.to_parquet(crawl / "pages.parquet")
    out = tmp_path / "dedup" / "2026-11-23"
    command = re.sub(r"--input \S+", f"--input {crawl}", re.sub(r"--output \S+", f"--output {out}", submit[0]))
    assert command != submit[0] and command.split()[:4] == submit[0].split()[:4]
    script = "set -e\n" + "\n".join(lines[:-1] + [command]) + "\n"
    events = tmp_path / "events"
    events.mkdir()
    env = fresh_shell_env()
    env["SPARK_SUBMIT_OPTS"] = " ".join(f"-Dspark.eventLog.{key}" for key in (
        "enabled=true", f"dir=file://{events}", "compress=false", "rolling.enabled=false"))
    proc = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (out / "_SUCCESS").exists()
    logs = list(events.iterdir())
    assert len(logs) == 1 and not logs[0].name.endswith(".inprogress"), logs
    assert '"Event":"SparkListenerApplicationEnd"' in logs[0].read_text()
    report = json.loads((out / "report.json").read_text())
    assert report["input_rows"] == len(pages)
    check_quiet_log(proc.stdout + proc.stderr, report)
    clusters = pd.read_parquet(out / "clusters")
    assert len(clusters) == len(pages) and clusters["is_duplicate"].sum() > 0  # the sample corpus has planted copies
    for built in ("simhash_udf.zip", "env.tar.gz"):  # what the build step promises, for the cluster form
        assert os.path.getsize(os.path.join(ROOT, "dist", built)) > 0
