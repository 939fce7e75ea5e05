"""The driver's class archive (simhash_udf.spark.class_archive): when it is used (its stamp, the conf directory, the
user's own JVM choices), the relaunch command, and under a real spark-submit an archive written by one run and mapped
by the JVM of the next small run, which the entry point relaunches with it."""
import json
import os
import subprocess
import sys

import pytest
from pyspark import SparkConf

from simhash_udf.spark import class_archive
from simhash_udf.spark.class_archive import ARCHIVE_ENV, archive_options, usable_archive
from simhash_udf.spark.session import (
    DEFAULT_DRIVER_BYTES,
    RELAUNCHED_ENV,
    SHORT_RUN_JAVA_OPTIONS,
    fits_default_driver,
    large_run_java_options,
    small_relaunch_command,
    small_relaunch_wanted,
)

CHECK = os.path.join(os.path.dirname(__file__), "submit_relaunch_check.py")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))

from class_archive import main as write_command  # noqa: E402  (scripts/class_archive.py, which ship.sh runs)


@pytest.fixture
def installation(tmp_path, monkeypatch):
    """A Spark home with two jars, a java binary and an archive with their stamp, as the environment names them."""
    home, java_home = tmp_path / "spark", tmp_path / "jdk"
    (home / "jars").mkdir(parents=True)
    (java_home / "bin").mkdir(parents=True)
    for name in ("spark-core.jar", "spark-sql.jar"):
        (home / "jars" / name).write_bytes(b"x" * 10)
    (java_home / "bin" / "java").write_text("#!/bin/sh\n")
    archive = tmp_path / "classes.jsa"
    archive.write_bytes(b"archive")
    monkeypatch.setenv("SPARK_HOME", str(home))
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.setenv(ARCHIVE_ENV, str(archive))
    (tmp_path / "classes.jsa.stamp").write_text(class_archive.stamp())
    return home, java_home, archive


def test_an_archive_is_used_only_with_the_java_and_jars_it_was_written_with(installation, monkeypatch, tmp_path,
                                                                             capsys):
    home, java_home, archive = installation
    assert usable_archive() == str(archive)
    (home / "jars" / "spark-sql.jar").write_bytes(b"x" * 11)  # another Spark
    assert usable_archive() is None
    (home / "jars" / "spark-sql.jar").write_bytes(b"x" * 10)
    assert usable_archive() == str(archive)
    (home / "jars" / "extra.jar").write_bytes(b"x")
    assert usable_archive() is None
    os.unlink(home / "jars" / "extra.jar")
    other_java = tmp_path / "jdk21" / "bin"
    other_java.mkdir(parents=True)
    (other_java / "java").write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk21"))  # another Java
    assert usable_archive() is None
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    assert usable_archive() == str(archive)
    # a non-empty conf directory goes first on the class path: no JVM maps an archive then
    (home / "conf").mkdir()
    assert usable_archive() == str(archive)  # empty
    (home / "conf" / "spark-defaults.conf").write_text("spark.ui.enabled false\n")
    assert usable_archive() is None
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "empty-conf"))
    assert usable_archive() == str(archive)
    assert write_command([]) == 0 and "is up to date" in capsys.readouterr().out  # nothing written
    monkeypatch.setenv(ARCHIVE_ENV, "")  # off
    assert usable_archive() is None
    assert write_command([]) == 0 and "none written" in capsys.readouterr().out
    monkeypatch.setenv(ARCHIVE_ENV, str(tmp_path / "missing.jsa"))
    assert usable_archive() is None


def test_the_relaunch_for_an_archive_only_for_a_small_local_input_without_the_users_jvm_choices(tmp_path, monkeypatch):
    small = tmp_path / "small.jsonl"
    small.write_text('{"id": 1, "text": "a page"}\n')
    from simhash_udf.spark import session

    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")  # as under spark-submit
    monkeypatch.setattr(session.SparkSession, "getActiveSession", staticmethod(lambda: None))  # before any session
    for name in (RELAUNCHED_ENV, "SIMHASH_DEDUP_JAVA_OPTIONS", "SPARK_DRIVER_MEMORY", "SPARK_MEM"):
        monkeypatch.delenv(name, raising=False)

    def conf(**settings):
        c = SparkConf(loadDefaults=False).set("spark.master", "local[2]")
        for key, value in settings.items():
            c.set(key.replace("_", "."), value)
        return c

    assert small_relaunch_wanted(str(small), conf())
    assert not small_relaunch_wanted(str(tmp_path / "missing"), conf())
    assert not small_relaunch_wanted(str(small), conf().set("spark.master", "spark://127.0.0.1:7077"))
    for key in ("spark.driver.memory", "spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions"):
        assert not small_relaunch_wanted(str(small), conf().set(key, "2g" if "memory" in key else "-Xss4m"))
    monkeypatch.setenv("SIMHASH_DEDUP_JAVA_OPTIONS", "")
    assert not small_relaunch_wanted(str(small), conf())
    monkeypatch.delenv("SIMHASH_DEDUP_JAVA_OPTIONS")
    monkeypatch.setenv(RELAUNCHED_ENV, "1")
    assert not small_relaunch_wanted(str(small), conf())
    monkeypatch.delenv(RELAUNCHED_ENV)
    monkeypatch.setattr(session.SparkSession, "getActiveSession", staticmethod(lambda: object()))
    assert not small_relaunch_wanted(str(small), conf())  # a session runs already: its JVM stays
    monkeypatch.setattr(session.SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT")  # python -m: its JVM is started with the job's own options
    assert not small_relaunch_wanted(str(small), conf())

    medium = tmp_path / "medium.jsonl"
    with open(medium, "wb") as fh:
        fh.truncate(DEFAULT_DRIVER_BYTES + 1)  # sparse: the size without the disk
    assert fits_default_driver(str(small)) and not fits_default_driver(str(medium))
    assert not fits_default_driver(str(tmp_path / "missing"))

    monkeypatch.setenv("SIMHASH_DEDUP_DRIVER_MEMORY", "3g")
    given = conf().set("spark.sql.shuffle.partitions", "8").set("spark.app.submitTime", "1")
    command = small_relaunch_command(given, ["/jobs/dedup_job.py", "--input", str(small)], "/a/classes.jsa")
    assert command[0].endswith(os.path.join("bin", "spark-submit"))
    rest = ["--conf", "spark.master=local[2]", "--conf", "spark.sql.shuffle.partitions=8",
            "/jobs/dedup_job.py", "--input", str(small)]
    assert command[1:] == ["--driver-memory", "3g", "--conf", "spark.driver.defaultJavaOptions="
                           f"{SHORT_RUN_JAVA_OPTIONS} {archive_options('/a/classes.jsa')}", *rest]
    assert small_relaunch_command(given, rest[4:], None)[1:] == [
        "--driver-memory", "3g", "--conf", f"spark.driver.defaultJavaOptions={SHORT_RUN_JAVA_OPTIONS}", *rest]


def test_spark_submit_of_a_small_input_runs_again_in_a_jvm_that_maps_the_archive(tmp_path):
    """write_archive stores what a real spark-submit's JVM loaded (here the check script's: spark-submit and the
    gateway), with its stamp; the next spark-submit on a small local input is relaunched once with it, and its JVM
    maps it (HotSpot's vmInfo: the mapped archives are larger than the archive alone), with a larger heap than Spark's
    default driver and SHORT_RUN_JAVA_OPTIONS. Without an archive, or with the user's own JVM options, the run stays
    in its JVM; an input over DEFAULT_DRIVER_BYTES is relaunched without an archive too, for the heap (with
    SHORT_RUN_JAVA_OPTIONS as well). A `python -m` run's own JVM maps it from the start."""
    small = tmp_path / "small.jsonl"
    small.write_text('{"id": 1, "text": "a page"}\n')
    archive = str(tmp_path / "archive" / "classes.jsa")
    env = {k: v for k, v in os.environ.items() if k not in ("SIMHASH_DEDUP_JAVA_OPTIONS", "PYSPARK_SUBMIT_ARGS",
                                                            RELAUNCHED_ENV, "SPARK_DRIVER_MEMORY", "SPARK_CONF_DIR")}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1", **{ARCHIVE_ENV: archive})
    spark_submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    assert class_archive.write_archive([CHECK, str(small)], archive, env=env, timeout=600) == archive
    assert os.path.getsize(archive) > 1_000_000 and os.path.isfile(archive + ".stamp")
    assert not [name for name in os.listdir(os.path.dirname(archive)) if name.startswith(".spark-classes-")]

    def check(*options, path=small, **more_env):
        proc = subprocess.run([spark_submit, "--master", "local[1]", "--conf", "spark.ui.enabled=false", *options,
                               CHECK, str(path), "--an-argument"], env={**env, **more_env}, capture_output=True,
                              text=True, timeout=300)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-3000:]
        answers = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"relaunched"')]
        assert len(answers) == 1 and "[warning][cds" not in proc.stdout, output[-3000:]
        return answers[0], output

    without, _ = check(**{ARCHIVE_ENV: ""})
    assert not without["relaunched"] and without["max_heap_mb"] <= 1024  # Spark's default driver: 1g
    answer, output = check()
    assert answer["relaunched"] and answer["arguments"] == [str(small), "--an-argument"]
    assert f"-XX:SharedArchiveFile={archive}" in answer["jvm_arguments"]
    large_only = set(large_run_java_options().split()) - set(SHORT_RUN_JAVA_OPTIONS.split())  # huge pages too
    assert answer["max_heap_mb"] > 1536 and not large_only & set(answer["jvm_arguments"])
    assert set(SHORT_RUN_JAVA_OPTIONS.split()) <= set(answer["jvm_arguments"])  # the client compiler alone
    assert answer["cds_mapped_bytes"] > without["cds_mapped_bytes"] + os.path.getsize(archive) // 2
    assert answer["conf"]["spark.master"] == "local[1]" and answer["conf"]["spark.ui.enabled"] == "false"
    assert "running spark-submit again with the class archive" in output
    answer, _ = check("--driver-java-options", "-Xss4m")
    assert not answer["relaunched"]
    medium = tmp_path / "medium.jsonl"  # more than Spark's default driver of 1g holds: relaunched without an archive
    with open(medium, "wb") as fh:
        fh.truncate(DEFAULT_DRIVER_BYTES + 1)
    answer, output = check(path=medium, SIMHASH_DEDUP_DRIVER_MEMORY="2g", **{ARCHIVE_ENV: ""})
    assert answer["relaunched"] and "-Xmx2g" in answer["jvm_arguments"] and answer["max_heap_mb"] > 1536
    assert set(SHORT_RUN_JAVA_OPTIONS.split()) <= set(answer["jvm_arguments"])
    assert not [arg for arg in answer["jvm_arguments"] if arg.startswith("-XX:SharedArchiveFile")]
    assert "running spark-submit again with --driver-memory 2g" in output

    def own_jvm(**more_env):  # `python -m`: the JVM the job starts itself for a small input (small_run_conf)
        proc = subprocess.run([sys.executable, CHECK, "--own-jvm", str(small)], env={**env, **more_env},
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    plain, mapped = own_jvm(**{ARCHIVE_ENV: ""}), own_jvm()
    assert SHORT_RUN_JAVA_OPTIONS.split()[0] in mapped["jvm_arguments"]
    assert f"-XX:SharedArchiveFile={archive}" in mapped["jvm_arguments"]
    assert f"-XX:SharedArchiveFile={archive}" not in plain["jvm_arguments"]
    assert mapped["cds_mapped_bytes"] > plain["cds_mapped_bytes"] + os.path.getsize(archive) // 2
