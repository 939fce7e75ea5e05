"""Output safety: an output that is, contains or lies inside the input or the history is
refused however it is written; replacing an output never leaves DIR looking finished when it is not (a
kill after every step of the commit, in a child process); one run at a time per output (two real
processes); dead runs' leftovers removed by the next run; SIGTERM aborts cleanly; an output that cannot
be written is a clear error."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

from simhash_udf.errors import DedupError
from simhash_udf.evaluation.sample_corpus import make_sample_corpus
from simhash_udf.io.hadoop_fs import glob_root, relation
from simhash_udf.io.ownership import Owner, process_start, stale_reason
from simhash_udf.io.write import (
    COMMIT_STEPS,
    EXIT_AFTER_CODE,
    EXIT_AFTER_ENV,
    LAYOUT_ENTRIES,
    MANIFEST_KEY,
    OutputDir,
    foreign_entries,
    read_manifest,
)
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import run
from simhash_udf.job.report_plots import PLOTS
from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS

# child processes: one small run each (their JVMs get the short-run options, session.SHORT_RUN_JAVA_OPTIONS)
ENV = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
           SIMHASH_DEDUP_MASTER="local[1]", SIMHASH_DEDUP_DRIVER_MEMORY="1g",
           PYSPARK_SUBMIT_ARGS=f"--driver-java-options '{SHORT_RUN_JAVA_OPTIONS}' pyspark-shell")


def job(spark, *argv):
    return run(load_config([str(a) for a in argv]), spark)


def write_input(path, seed):
    os.makedirs(path, exist_ok=True)
    rows = make_sample_corpus(6, seed=seed)
    with open(os.path.join(path, "pages.jsonl"), "w") as fh:
        for r in rows:
            fh.write(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False) + "\n")
    return path


def leftovers(out):
    """Everything beside DIR that the job names after it (locks, staging and old directories)."""
    parent, base = os.path.split(str(out).rstrip("/"))
    return sorted(n for n in os.listdir(parent) if n.startswith(base + ".__"))


def parquet_rows(path):
    df = pd.read_parquet(path)
    return df.sort_values("id").reset_index(drop=True)


def parts(path):
    return sorted(n for n in os.listdir(path) if not n.startswith((".", "_")))


def is_complete_copy(out, template) -> bool:
    """DIR is a complete finished run equal to the template: _SUCCESS, the same report.json and plots, and
    every Parquet part there and readable with the same rows."""
    out, template = str(out), str(template)
    if sorted(os.listdir(out)) != sorted(os.listdir(template)) or not os.path.exists(os.path.join(out, "_SUCCESS")):
        return False
    with open(os.path.join(out, "report.json"), "rb") as a, open(os.path.join(template, "report.json"), "rb") as b:
        if a.read() != b.read():
            return False
    for name in ("clusters", "kept"):
        if parts(os.path.join(out, name)) != parts(os.path.join(template, name)):
            return False
        if not parquet_rows(os.path.join(out, name)).equals(parquet_rows(os.path.join(template, name))):
            return False
    return True


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    """Two finished runs of different inputs: A (an old output) and B (the new one that replaces it)."""
    root = tmp_path_factory.mktemp("runs")
    inputs = {name: write_input(str(root / f"in-{name}"), seed) for name, seed in (("a", 1), ("b", 2))}
    for name, path in inputs.items():
        job(spark, "--input", path, "--output", root / f"out-{name}")
    return {"root": root, "in_a": inputs["a"], "in_b": inputs["b"], "a": root / "out-a", "b": root / "out-b"}


# --- an output that is, contains or lies inside the input or the history -----------------------------

def test_paths_are_compared_by_component():
    assert relation("file:/x", "file:/x/crawl") == "contains"
    assert relation("file:/x/crawl", "file:/x/crawl") == "equals"
    assert relation("file:/x/crawl/out", "file:/x/crawl") == "inside"
    assert relation("file:/x/crawl.out", "file:/x/crawl") is None
    assert relation("hdfs://nn:8020/x", "file:/x/crawl") is None
    assert relation("hdfs://NN:8020/x", "hdfs://nn:8020/x/y") == "contains"
    # an authority with and without its port: one place for the guard (Hadoop keeps either as written)
    assert relation("hdfs://nn:8020/dedup/D", "hdfs://nn/dedup/D/clusters") == "contains"
    assert relation("hdfs://nn/x", "hdfs://nn:8020/x") == "equals"
    assert relation("hdfs://[::1]:8020/x", "hdfs://[::1]/x/y") == "contains"
    assert relation("hdfs://nn:8020/x", "hdfs://nn:9000/x") is None
    assert relation("hdfs://nn/x", "hdfs://other/x") is None and relation("hdfs://nn/x", "hdfs://nn2:8020/x") is None
    assert relation("file:/tmp/a#b", "file:/tmp/a#c") is None
    assert glob_root("/crawl/2026-*/part-*.jsonl") == "/crawl"
    assert glob_root("s3a://b/crawl/{a,b}/x") == "s3a://b/crawl"


def _overlap_case(root, spark, case):
    """(argv without --overwrite, what must survive) for one way of writing an output over the input/history."""
    x = root / "x"
    crawl = write_input(str(x / "crawl"), 3)
    history = root / "d" / "history"
    (history / "run_date=2026-01-01").mkdir(parents=True)
    (history / "run_date=2026-01-01" / "part-0.parquet").write_bytes(b"not read: the run is refused first")
    os.symlink(x, root / "link")
    user_dir = spark.sparkContext._jvm.System.getProperty("user.dir")  # Hadoop's working directory
    history_args = ["--history", history, "--run-date", "2026-01-02"]
    argv = {
        "parent": ["--input", crawl, "--output", x],
        "parent, trailing slash": ["--input", crawl, "--output", f"{x}/"],
        "parent, file: URI": ["--input", crawl, "--output", f"file:{x}"],
        "parent, relative ./": ["--input", crawl, "--output", "./" + os.path.relpath(x, user_dir)],
        "parent through a symlink": ["--input", crawl, "--output", root / "link"],
        "input as file: URI": ["--input", f"file:{crawl}", "--output", crawl],
        "input through a symlink": ["--input", crawl, "--output", root / "link" / "crawl"],
        "inside the input": ["--input", crawl, "--output", f"{crawl}/out"],
        "inside the input's glob": ["--input", f"{x}/cr*/*.jsonl", "--output", f"{crawl}/out"],
        "contains the history": ["--input", crawl, "--output", root / "d", *history_args],
        "inside the history": ["--input", crawl, "--output", history / "out", *history_args],
        "is the history, as file: URI": ["--input", crawl, "--output", f"file:{history}/", "--history", history,
                                         "--run-date", "2026-01-02"],
    }[case]
    return argv, [os.path.join(crawl, "pages.jsonl"), history / "run_date=2026-01-01" / "part-0.parquet"]


@pytest.mark.parametrize("overwrite", [True, False], ids=["overwrite", "no-overwrite"])
@pytest.mark.parametrize("case", [
    "parent", "parent, trailing slash", "parent, file: URI", "parent, relative ./", "parent through a symlink",
    "input as file: URI", "input through a symlink", "inside the input", "inside the input's glob",
    "contains the history", "inside the history", "is the history, as file: URI"])
def test_output_over_input_or_history_is_refused(spark, tmp_path, case, overwrite):
    """Old code: `--input /x/crawl --output /x --overwrite` exited 0 with crawl/ gone (paths compared as
    strings); without --overwrite the refusal said to add it."""
    argv, survivors = _overlap_case(tmp_path, spark, case)
    with pytest.raises(DedupError, match=r"choose an --output outside the (input|history)") as err:
        job(spark, *argv, *(["--overwrite"] if overwrite else []))
    assert "--overwrite" not in str(err.value)
    for path in survivors:
        assert os.path.exists(path), path
    assert not [n for _, dirs, files in os.walk(tmp_path) for n in dirs + files if ".__" in n]


@pytest.mark.parametrize("case", ["inside the input's glob", "contains the input", "is the input"])
def test_history_over_input_is_refused(spark, tmp_path, case):
    """Old code: only string equality was checked, so `--input '/x/*' --history /x/history` read the history's
    rows as pages of the day."""
    x = tmp_path / "x"
    crawl = write_input(str(x / "crawl"), 3)
    history, pattern = {"inside the input's glob": (x / "history", f"{x}/*"),
                        "contains the input": (x, crawl),
                        "is the input": (f"file:{crawl}/", crawl)}[case]
    with pytest.raises(DedupError, match=r"--history .* the input .*: choose a --history outside the input"):
        job(spark, "--input", pattern, "--output", tmp_path / "out", "--history", history, "--run-date", "2026-01-02")
    assert not (tmp_path / "out").exists() and os.listdir(crawl) == ["pages.jsonl"]
    assert not [n for _, dirs, files in os.walk(tmp_path) for n in dirs + files if "_staging" in n or ".__" in n]


def test_cli_exits_2_and_keeps_the_input_when_output_is_its_parent(tmp_path):
    """The issue's probe, on the command line: `--input /x/crawl --output /x --overwrite` exited 0 with crawl/
    gone."""
    crawl = write_input(str(tmp_path / "x" / "crawl"), 3)
    env = {k: v for k, v in ENV.items() if k != "SIMHASH_DEDUP_JAVA_OPTIONS"}
    proc = subprocess.run([sys.executable, "-m", "simhash_udf.job.cli", "--input", crawl, "--output", str(tmp_path / "x"),
                           "--overwrite"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"error: --output {tmp_path / 'x'} contains the input {crawl}" in proc.stderr
    assert "choose an --output outside the input" in proc.stderr and "Traceback" not in proc.stderr
    assert os.listdir(tmp_path / "x") == ["crawl"] and os.listdir(crawl) == ["pages.jsonl"]
    # a small local input: the CLI started its JVM with the short-run options (session.small_run_conf)
    assert f"the driver's JVM starts with {SHORT_RUN_JAVA_OPTIONS}" in proc.stderr


def test_foreign_files_are_not_replaced_even_with_overwrite(spark, runs, tmp_path):
    """Old code: the refusal said "remove it, or pass --overwrite", and --overwrite deleted the files."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    for extra in ([], ["--overwrite"]):
        with pytest.raises(DedupError, match=r"not a finished run of this job: it holds notes.txt.*choose another "
                                             r"--output, or move those files away") as err:
            job(spark, "--input", runs["in_a"], "--output", out, *extra)
        assert "pass --overwrite" not in str(err.value)
    assert (out / "notes.txt").read_text() == "mine" and os.listdir(out) == ["notes.txt"]
    assert leftovers(out) == []
    # this job's own unfinished output (no _SUCCESS) is replaced with --overwrite only
    shutil.copytree(runs["a"], tmp_path / "mine")
    os.remove(tmp_path / "mine" / "_SUCCESS")
    with pytest.raises(DedupError, match="holds an unfinished run of this job.*pass --overwrite"):
        job(spark, "--input", runs["in_a"], "--output", tmp_path / "mine")


def test_overwrite_keeps_foreign_files_beside_a_run(spark, runs, tmp_path):
    """Old code: one entry of this job's (report.json, clusters or kept) made the whole DIR its own, and
    --overwrite deleted whatever else DIR held (a downstream task's marker, a person's notes)."""
    out = tmp_path / "out"
    shutil.copytree(runs["a"], out)
    (out / "notes.txt").write_text("mine")
    before = sorted(os.listdir(out))
    with pytest.raises(DedupError, match=r"holds a run of this job and also notes.txt, which this job did not write.*"
                                         r"move those files away"):
        job(spark, "--input", runs["in_b"], "--output", out, "--overwrite")
    assert sorted(os.listdir(out)) == before and (out / "notes.txt").read_text() == "mine"
    assert leftovers(out) == []
    # another tool's report.json beside its own files: not this job's output either
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.json").write_text("{}")
    (other / "predictions.parquet").write_text("x")
    with pytest.raises(DedupError, match=r"also predictions.parquet"):
        job(spark, "--input", runs["in_b"], "--output", other, "--overwrite")
    assert sorted(os.listdir(other)) == ["predictions.parquet", "report.json"]
    # everything a run writes is in the layout (a new picture must be added to LAYOUT_ENTRIES), with its
    # checksum files; a run of this job alone is replaced with --overwrite
    assert set(PLOTS) <= LAYOUT_ENTRIES and foreign_entries(sorted(os.listdir(runs["a"]))) == []
    assert foreign_entries([".report.json.crc", "._SUCCESS.crc", ".notes.txt.crc"]) == [".notes.txt.crc"]
    os.remove(out / "notes.txt")
    job(spark, "--input", runs["in_b"], "--output", out, "--overwrite")
    assert (out / "_SUCCESS").exists() and "notes.txt" not in os.listdir(out)
    assert parquet_rows(out / "clusters").equals(parquet_rows(runs["b"] / "clusters"))


def test_unusable_history_is_refused_before_the_work(spark, runs, tmp_path):
    """Old code: a regular file as --history (or under one) ran the whole job and ended in a traceback
    (NotADirectoryError while staging the history's rows)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    for history, message in ((afile, r"--history .*afile is a file, not a directory: choose a directory"),
                             (afile / "h", r"--history .*afile/h cannot be created: .*afile is a file")):
        with pytest.raises(DedupError, match=message):
            job(spark, "--input", runs["in_a"], "--output", tmp_path / "out", "--history", history,
                "--run-date", "2026-01-05")
        assert not (tmp_path / "out").exists() and leftovers(tmp_path / "out") == []
    assert afile.read_text() == "x"


def test_an_empty_rerun_of_a_day_removes_its_earlier_rows_from_the_history(spark, runs, tmp_path):
    """Old code: a re-run of a date whose input turned out empty (--allow-empty) left the earlier attempt's rows
    in the history, and later days were compared with pages the date's output no longer lists."""
    history, out = tmp_path / "history", tmp_path / "out"
    job(spark, "--input", runs["in_a"], "--output", out, "--history", history, "--run-date", "2026-01-05")
    assert (history / "run_date=2026-01-05").exists()
    (tmp_path / "empty.jsonl").write_text("")
    report = job(spark, "--input", tmp_path / "empty.jsonl", "--output", out, "--overwrite", "--allow-empty",
                 "--history", history, "--run-date", "2026-01-05")
    assert report["input_rows"] == 0 and report["history"]["earlier_attempt_removed"] is True
    assert json.loads((out / "report.json").read_text())["history"]["earlier_attempt_removed"] is True
    assert sorted(os.listdir(history)) == ["_fingerprint_version", "_id_type", "_manifests"]  # no staging, no owner file
    assert os.listdir(history / "_manifests") == []  # nor the date's record


def test_output_under_a_file_is_a_clear_error(spark, runs, tmp_path):
    """Old code: exit 1 and a Py4JJavaError traceback (ParentNotDirectoryException from setCheckpointDir)."""
    (tmp_path / "afile").write_text("x")
    with pytest.raises(DedupError, match=r"afile is a file, not a directory; choose an --output under a directory"):
        job(spark, "--input", runs["in_a"], "--output", tmp_path / "afile" / "out")
    with pytest.raises(DedupError, match=r"afile is a file, not a directory: choose another --output"):
        job(spark, "--input", runs["in_a"], "--output", tmp_path / "afile", "--overwrite")
    assert (tmp_path / "afile").read_text() == "x"


def test_output_on_a_file_system_without_its_connector_is_a_clear_error(spark, runs):
    """Old code: exit 1 and a traceback (UnsupportedFileSystemException from getFileSystem)."""
    with pytest.raises(DedupError, match=r"s3a://bucket/out.*hadoop-aws"):
        job(spark, "--input", runs["in_a"], "--output", "s3a://bucket/out")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders: chmod cannot make this case here")
def test_output_under_a_read_only_folder_is_a_clear_error(spark, runs, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(DedupError, match=r"cannot create the lock file .*choose an --output in a directory"):
            job(spark, "--input", runs["in_a"], "--output", ro / "out")
    finally:
        ro.chmod(0o755)


# --- replacing an output: a kill after every step of the commit --------------------------------------

CHILD_COMMIT = r"""
import sys
from pyspark.java_gateway import launch_gateway
from simhash_udf.io.hadoop_fs import HadoopFS
from simhash_udf.io.write import OutputDir

path, token = sys.argv[1:3]
jvm = launch_gateway().jvm  # a bare JVM with Hadoop's file systems: the job's commit without a SparkSession
out = OutputDir(None, path, fs=HadoopFS(jvm, jvm.org.apache.hadoop.conf.Configuration(), path), token=token)
out.acquire(600)
out.commit()
out.release()
print("committed")
"""


def stage_replacement(runs, out, token):
    """DIR = a finished run A; DIR.__staging-TOKEN = the complete run B as the job stages it (no _SUCCESS)."""
    shutil.copytree(runs["a"], out)
    staging = f"{out}.__staging-{token}"
    shutil.copytree(runs["b"], staging)
    os.remove(os.path.join(staging, "_SUCCESS"))


@pytest.fixture(scope="module")
def killed_commits(runs, tmp_path_factory):
    """One child process per commit step, each ended (os._exit, like a kill) right after its step; all at once."""
    root = tmp_path_factory.mktemp("killed")
    children = {}
    for i, step in enumerate(COMMIT_STEPS):
        out = root / step / "out"
        out.parent.mkdir()
        stage_replacement(runs, out, f"dead{i:08d}")
        children[step] = (out, subprocess.Popen([sys.executable, "-c", CHILD_COMMIT, str(out), f"dead{i:08d}"],
                                                env=dict(ENV, **{EXIT_AFTER_ENV: step}), stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, text=True))
    done = {}
    for step, (out, proc) in children.items():
        stdout, stderr = proc.communicate(timeout=600)
        done[step] = (out, proc.returncode, stdout + stderr)
    return done


# What DIR holds right after each step: the old run A (finished), nothing finished, or the new run B.
AFTER_KILL = {"begin": "a", "unmark_old": None, "move_old_aside": None, "move_new_in": None, "mark_new": "b",
              "drop_old": "b"}


# The step after which the next run is the whole job (the one that leaves most behind: DIR gone, the old run aside
# and the new one staged). After the others it is the job's output steps alone (replace_as_the_job_does), which
# is where the job takes over a lock and removes leftovers; a whole run there cost ~13 s each.
WHOLE_JOB_AFTER = "move_old_aside"


def replace_as_the_job_does(spark, out, finished_run, token):
    """What pipeline.run does with DIR, around its stages: check it, take the lock (removing what dead runs
    left), check again, stage the new run (here a copy of a finished one), commit and release."""
    target = OutputDir(spark, str(out), token=token)
    target.check_writable(True)
    target.acquire(600)
    try:
        target.check_writable(True)
        shutil.copytree(finished_run, target.staging)
        os.remove(os.path.join(target.staging, "_SUCCESS"))
        target.commit()
    finally:
        target.release()


@pytest.mark.parametrize("step", COMMIT_STEPS)
def test_kill_after_each_commit_step(spark, runs, killed_commits, step):
    """Old code deleted DIR and then renamed the staging directory into it: a kill during the delete left DIR
    with _SUCCESS, part of clusters/ and no report.json, and the complete new run stranded in staging."""
    out, code, output = killed_commits[step]
    assert code == EXIT_AFTER_CODE, output[-3000:]
    finished = os.path.exists(out / "_SUCCESS")
    # the promise: DIR looks finished only when it holds one complete run, the old or the new one
    assert not finished or is_complete_copy(out, runs["a"]) or is_complete_copy(out, runs["b"])
    expected = AFTER_KILL[step]
    assert finished == (expected is not None)
    if expected:
        assert is_complete_copy(out, runs[expected])
    assert leftovers(out)  # the dead run's lock (and staging or old directory) are still there
    if os.path.exists(out):
        message = "already holds a finished run" if finished else "holds an unfinished run of this job"
        with pytest.raises(DedupError, match=message + ".*pass --overwrite"):
            job(spark, "--input", runs["in_b"], "--output", out)
    # the next scheduled run (the DAG passes --overwrite) takes over the dead run's lock, removes what it left
    # and replaces DIR: the job itself after one step, its output steps alone after the others
    if step == WHOLE_JOB_AFTER:
        job(spark, "--input", runs["in_b"], "--output", out, "--overwrite")
    else:
        replace_as_the_job_does(spark, out, runs["b"], f"next{COMMIT_STEPS.index(step):08d}")
    assert leftovers(out) == []
    assert os.path.exists(out / "_SUCCESS")
    assert parquet_rows(out / "clusters").equals(parquet_rows(runs["b"] / "clusters"))


@pytest.mark.parametrize("step", ["begin", "unmark_old", "move_old_aside", "move_new_in"])
def test_failed_commit_step_restores_the_old_output(spark, runs, tmp_path, step):
    out = tmp_path / "out"
    stage_replacement(runs, out, "f00000000001")
    target = OutputDir(spark, str(out), token="f00000000001")

    def fail_after(name):
        if name == step:
            raise OSError(f"injected failure after {name}")

    with pytest.raises(OSError, match="injected failure"):
        target.commit(after_step=fail_after)
    assert is_complete_copy(out, runs["a"])
    assert leftovers(out) == ["out.__staging-f00000000001"]  # the run's abort removes it


# --- ownership: one run at a time, dead runs' leftovers, SIGTERM ------------------------------------

def test_stale_reason():
    me = Owner.this_process("t1")
    host, boot = me.host, me.boot_id
    assert stale_reason(me, 5, 600, host, boot) is None
    assert "process is gone" in stale_reason(me, 5, 600, host, boot, alive=lambda pid, start: False)
    assert "restarted" in stale_reason(Owner(**{**me.__dict__, "boot_id": "other"}), 5, 600, host, boot)
    other = Owner(**{**me.__dict__, "host": "elsewhere"})
    assert stale_reason(other, 300, 600, host, boot) is None  # another host, recent heartbeat: alive
    assert "no heartbeat for 20 minutes" in stale_reason(other, 1200, 600, host, boot)
    assert stale_reason(None, 5, 600, host, boot) is None  # just created, not yet written
    assert stale_reason(None, 1200, 600, host, boot) is not None
    assert process_start(os.getpid()) == me.pid_start


def _owner_file(path, pid, host=None, age=0.0, token="cafe00000000"):
    me = Owner.this_process(token)
    owner = Owner(token, host or me.host, pid, process_start(pid) if host is None else None, me.boot_id, me.started)
    with open(path, "wb") as fh:
        fh.write(owner.to_bytes())
    if age:
        os.utime(path, (time.time() - age, time.time() - age))


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_dead_runs_leftovers_are_removed_and_live_ones_kept(spark, runs, tmp_path):
    """Old code: killed runs left DIR.__staging-* and history/_staging-* that no later run removed."""
    out = tmp_path / "out"
    dead = _dead_pid()
    for name in ("out.__staging-dead00000001", "out.__old-dead00000001", "out.__staging-dead00000002"):
        (tmp_path / name / "clusters").mkdir(parents=True)
        (tmp_path / name / "clusters" / "part-0.parquet").write_bytes(b"x")
    _owner_file(tmp_path / "out.__lock", dead)  # the dead run's lock: same host, its process gone
    history = tmp_path / "history"
    # (NAME-replaced: an earlier attempt's partition that run NAME's publish moved aside)
    for name in ("legacy", "dead", "live", "old-elsewhere", "fresh-elsewhere", "dead-replaced", "live-replaced"):
        (history / f"_staging-{name}").mkdir(parents=True)
        (history / f"_staging-{name}" / "part-0.parquet").write_bytes(b"x")
    _owner_file(history / "_staging-dead.owner", dead)
    _owner_file(history / "_staging-live.owner", os.getpid())  # a live run on this host (this process)
    _owner_file(history / "_staging-old-elsewhere.owner", 1, host="elsewhere", age=3600)
    _owner_file(history / "_staging-fresh-elsewhere.owner", 1, host="elsewhere", age=60)

    job(spark, "--input", runs["in_a"], "--output", out, "--history", history, "--run-date", "2026-01-05")
    assert leftovers(out) == []
    assert os.path.exists(out / "_SUCCESS")
    # (dead-replaced: a dead run's earlier attempt of a date, moved aside and named without its date, as runs
    # before dates were in the name did; its rows do not tell their date, so it is kept, with a warning)
    assert sorted(os.listdir(history)) == ["_fingerprint_version", "_id_type", "_manifests", "_staging-dead-replaced",
                                           "_staging-fresh-elsewhere", "_staging-fresh-elsewhere.owner", "_staging-live",
                                           "_staging-live-replaced", "_staging-live.owner", "run_date=2026-01-05"]


class _FailingMoveIn:
    """A history's Hadoop file system whose rename of a staging directory onto a run_date partition fails
    (returns False, as Hadoop does for a missing permission)."""

    def __init__(self, fs):
        self.fs = fs

    def __getattr__(self, name):
        return getattr(self.fs, name)

    def rename(self, src, dst):
        if "/_staging-" in src.toString() and "-replaced" not in src.toString() and "run_date=" in dst.toString():
            return False
        return self.fs.rename(src, dst)


def test_a_failed_history_publish_keeps_the_earlier_attempts_rows(spark, runs, tmp_path):
    """Old code: publish deleted run_date=D before moving the new rows in, so a failed move lost the day's rows
    from the history (while the output still held that day's run)."""
    from simhash_udf.io.history import History

    history = tmp_path / "history"
    job(spark, "--input", runs["in_a"], "--output", tmp_path / "out", "--history", history, "--run-date", "2026-01-05")
    day = history / "run_date=2026-01-05"
    before = parquet_rows(day)
    again = History(spark, str(history), "2026-01-05")
    rows = spark.read.parquet(str(day)).orderBy("id").limit(2)
    again.stage(rows, "any version")
    again.fs = _FailingMoveIn(again.fs)
    with pytest.raises(DedupError, match="could not move .*_staging-.* to .*run_date=2026-01-05"):
        again.publish()
    again.abort()
    assert parquet_rows(day).equals(before)
    assert not [n for n in os.listdir(history) if n.startswith("_staging-")]
    # a failed first run pins nothing into a new history (neither its version nor its id type, staged with the rows)
    fresh = History(spark, str(tmp_path / "new-history"), "2026-01-05")
    fresh.stage(rows, "version of a failed run")
    fresh.fs = _FailingMoveIn(fresh.fs)
    with pytest.raises(DedupError):
        fresh.publish()
    fresh.abort()
    assert fresh.stored_version() is None and fresh.stored_id_type() is None
    # the same publish without the failure replaces the rows, and nothing is left aside
    third = History(spark, str(history), "2026-01-05")
    third.stage(rows, "any version")
    third.publish()
    assert parquet_rows(day).equals(before.head(2))
    assert not [n for n in os.listdir(history) if n.startswith("_staging-")]


def test_a_live_lock_is_not_taken_over(spark, runs, tmp_path):
    out = tmp_path / "out"
    _owner_file(tmp_path / "out.__lock", 1, host="elsewhere", age=60, token="beef00000000")
    (tmp_path / "out.__staging-beef00000000").mkdir()
    with pytest.raises(DedupError, match=r"being written by another run \(pid 1 on elsewhere, started .*lock "
                                         r".*out.__lock\): wait for it to finish"):
        job(spark, "--input", runs["in_a"], "--output", out)
    assert leftovers(out) == ["out.__lock", "out.__staging-beef00000000"]


def test_a_run_whose_lock_was_taken_over_does_not_commit(spark, runs, tmp_path):
    out = tmp_path / "out"
    stage_replacement(runs, out, "f00000000002")
    target = OutputDir(spark, str(out), token="f00000000002")
    target.acquire(600)
    try:
        _owner_file(tmp_path / "out.__lock", 1, host="elsewhere", token="beef00000001")  # as a takeover leaves it
        with pytest.raises(DedupError, match=r"lock .*out.__lock was taken over by another run \(pid 1 on elsewhere"):
            target.commit()
    finally:
        target.release()
    assert is_complete_copy(out, runs["a"])
    assert leftovers(out) == ["out.__lock", "out.__staging-f00000000002"]  # the other run's lock is left alone


def _wait_for(predicate, proc, timeout=300):
    deadline = time.time() + timeout
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"the run ended early ({proc.returncode}): {proc.communicate()[1][-3000:]}")
        if time.time() > deadline:
            proc.kill()
            pytest.fail("the run did not get there in time")
        time.sleep(0.1)


def test_second_run_refused_and_sigterm_aborts_cleanly(spark, runs, tmp_path):
    """Two real processes onto the same output: old code let both finish with exit 0, the later one silently
    replacing the other. Then SIGTERM: the run aborts, removes its staging directory, releases the lock and
    leaves the old output as it was."""
    out = tmp_path / "out"
    shutil.copytree(runs["a"], out)
    first = subprocess.Popen([sys.executable, "-m", "simhash_udf.job.cli", "--input", runs["in_b"], "--output", str(out),
                              "--overwrite"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: any(n.startswith("out.__staging-") for n in leftovers(out)), first)
        with pytest.raises(DedupError, match=rf"output {re.escape(str(out))} is being written by another run "
                                             rf"\(pid {first.pid} on {re.escape(socket.gethostname())}, started "):
            job(spark, "--input", runs["in_b"], "--output", out, "--overwrite")
        assert any(n.startswith("out.__staging-") for n in leftovers(out))  # the live run's: untouched
        first.send_signal(signal.SIGTERM)
        _, stderr = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 143, stderr[-3000:]
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stderr
    assert leftovers(out) == []
    assert is_complete_copy(out, runs["a"])


# --- what --overwrite replaces: every file at every depth, and DIR as it is, not as it is spelled ----------

def test_overwrite_refuses_a_foreign_file_at_any_depth(spark, runs, tmp_path):
    """Old code checked DIR's top-level names only: a DIR holding kept/data.txt was replaced with --overwrite and
    data.txt was gone; so were files a downstream task added inside clusters/ or kept/ of a finished run."""
    cases = {
        "only kept/data.txt": ("kept/data.txt", None, r"not a finished run of this job: it holds kept/data\.txt"),
        # named like a Spark part file: only the finished run's list of its files (its _SUCCESS) tells it apart
        "a part file appended to kept/": ("kept/part-00099-appended.snappy.parquet", "a",
                                          r"holds a run of this job and also kept/part-00099-appended\.snappy\.parquet"),
        "a folder in clusters/ of an unfinished run": ("clusters/mine/notes.txt", "unfinished",
                                                       r"holds a run of this job and also clusters/mine/,"),
    }
    for case, (foreign, base, message) in cases.items():
        out = tmp_path / case.replace(" ", "_").replace("/", "")
        if base:
            shutil.copytree(runs["a"], out)
        if base == "unfinished":
            os.remove(out / "_SUCCESS")
        (out / foreign).parent.mkdir(parents=True, exist_ok=True)
        (out / foreign).write_text("not the job's")
        with pytest.raises(DedupError, match=message + r".*which this job did not write.*move those files away"):
            job(spark, "--input", runs["in_b"], "--output", out, "--overwrite")
        assert (out / foreign).read_text() == "not the job's", case
        assert leftovers(out) == [], case


def test_a_finished_output_lists_its_files_and_older_outputs_are_judged_by_name(spark, runs, tmp_path):
    """DIR/_SUCCESS lists every file the run wrote below DIR; an output without that list (an older version's
    empty _SUCCESS, or an unfinished run's) is replaced when its names are all the job's own."""
    written = sorted(os.path.relpath(os.path.join(folder, name), runs["a"])
                     for folder, _, names in os.walk(runs["a"]) for name in names)
    listed = json.loads((runs["a"] / "_SUCCESS").read_text())[MANIFEST_KEY]
    assert listed == [p for p in written if p != "_SUCCESS"] and any(p.startswith("kept/part-") for p in listed)
    assert read_manifest(b"") is None and read_manifest(b'{"filenames": ["x"]}') is None  # S3A committer's: not ours
    out = tmp_path / "older"
    shutil.copytree(runs["a"], out)
    (out / "_SUCCESS").write_text("")
    (out / "kept" / ".part-00000-x.snappy.parquet.crc").write_bytes(b"crc")  # a checksum file: its file's
    OutputDir(spark, str(out)).check_writable(True)
    assert foreign_entries(["kept/part-0.parquet", "kept/_SUCCESS", "kept/._SUCCESS.crc", "kept/_committed_1",
                            "report.json", "clusters/x.txt", "kept/sub/", "notes/", "kept/part-0.json"]) == [
        "clusters/x.txt", "kept/sub/", "notes/", "kept/part-0.json"]
    replace_as_the_job_does(spark, out, runs["b"], "older000001")
    assert parquet_rows(out / "clusters").equals(parquet_rows(runs["b"] / "clusters"))


class _CountingFS:
    """A HadoopFS that counts its directory listings."""

    def __init__(self, fs):
        self.fs, self.listings = fs, 0

    def __getattr__(self, name):
        return getattr(self.fs, name)

    def list(self, path):
        self.listings += 1
        return self.fs.list(path)


def test_checking_an_output_of_thousands_of_part_files_lists_each_folder_once(spark, runs, tmp_path):
    out = tmp_path / "big"
    shutil.copytree(runs["a"], out)
    names = [f"part-{i:05d}-{'0' * 8}-c000.snappy.parquet" for i in range(3000)]
    for name in names:
        (out / "clusters" / name).write_bytes(b"")
    for manifest in (None, [f"clusters/{n}" for n in names] + json.loads((out / "_SUCCESS").read_text())[MANIFEST_KEY]):
        (out / "_SUCCESS").write_text(json.dumps({MANIFEST_KEY: manifest}) if manifest else "")
        target = OutputDir(spark, str(out))
        target.fs = _CountingFS(target.fs)
        target.check_writable(True)
        assert target.fs.listings == 3  # DIR, clusters/, kept/
    (out / "clusters" / names[0]).rename(out / "clusters" / "part-x.parquet")  # not a file the run listed
    with pytest.raises(DedupError, match=r"also clusters/part-x\.parquet"):
        OutputDir(spark, str(out)).check_writable(True)


def test_one_lock_for_every_spelling_of_an_output(spark, runs, tmp_path):
    """Old code took the lock beside DIR as spelled: a run through a symbolic link to DIR (or to a folder above it)
    was not refused while another run wrote DIR, and both printed done."""
    real = tmp_path / "data" / "out"
    shutil.copytree(runs["a"], real)
    os.symlink(real, tmp_path / "link")
    os.symlink(tmp_path / "data", tmp_path / "data-link")
    # Hadoop's viewfs resolves its mount points the way HDFS resolves its links (FileSystem.resolvePath)
    mount = f"simhash-{os.getpid()}-{time.monotonic_ns()}"
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop_conf.set(f"fs.viewfs.mounttable.{mount}.link./data", f"file://{tmp_path}/data-link")
    try:
        spellings = [real, tmp_path / "link", tmp_path / "data-link" / "out", f"file://{tmp_path}/link/",
                     f"viewfs://{mount}/data/out"]
        assert {OutputDir(spark, str(s)).lock_path.removeprefix("file:") for s in spellings} == {f"{real}.__lock"}
    finally:
        hadoop_conf.unset(f"fs.viewfs.mounttable.{mount}.link./data")
    for held, other in ((real, tmp_path / "link"), (tmp_path / "data-link" / "out", real)):
        holder = OutputDir(spark, str(held))
        holder.acquire(600)
        try:
            with pytest.raises(DedupError, match=r"is being written by another run \(pid %d " % os.getpid()):
                job(spark, "--input", runs["in_b"], "--output", other, "--overwrite")
        finally:
            holder.release()
    assert is_complete_copy(real, runs["a"]) and os.path.islink(tmp_path / "link")
    assert leftovers(real) == [] and leftovers(tmp_path / "link") == []


def test_replacing_an_output_that_is_a_symbolic_link_keeps_the_link(spark, runs, tmp_path):
    """Old code renamed the link itself aside and moved the new output in as a real directory: the link was gone
    and its target kept the old run. Now the target is replaced, and the link points at the new run."""
    real = tmp_path / "real"
    shutil.copytree(runs["a"], real)
    link = tmp_path / "link"
    os.symlink(real, link)
    job(spark, "--input", runs["in_b"], "--output", link, "--overwrite")
    assert os.path.islink(link) and os.readlink(link) == str(real)
    assert (real / "_SUCCESS").exists()
    assert parquet_rows(real / "clusters").equals(parquet_rows(runs["b"] / "clusters"))
    assert leftovers(real) == [] and leftovers(link) == []
