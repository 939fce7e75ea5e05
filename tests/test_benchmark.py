"""The benchmarks' shared harness (simhash_udf/evaluation/benchmark.py) and the run readers beside it
(evaluation/outputs.py): variants take turns, each one's best is the least, the /proc watch sees the memory and
CPU of the processes under it by kind, tables keep their raw values, two runs' clusters compare row for row."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from simhash_udf.evaluation.benchmark import (
    CHECKOUT,
    ProcessWatch,
    Tables,
    best,
    best_each,
    process_kind,
    take_turns,
)
from simhash_udf.evaluation.outputs import cluster_rows, job_labels


def test_variants_take_turns_and_keep_their_own_figures():
    calls = []
    turns = take_turns({"a": lambda: calls.append("a") or ("a row", "not a dict"),
                        "b": lambda: calls.append("b") or {"seconds": 7.0, "n": 3}}, rounds=3, log=False)
    assert calls == ["a", "b"] * 3  # one of each per round, not three of one then three of the other
    assert len(turns["a"]) == 3 and all(list(r) == ["seconds"] and r["seconds"] >= 0 for r in turns["a"])
    assert turns["b"] == [{"seconds": 7.0, "n": 3}] * 3  # a figure the call gives wins over the wall time


def test_best_is_the_least_run_and_best_each_the_least_of_every_figure():
    runs = [{"wall": 3.0, "job": 1.0, "name": "x"}, {"wall": 2.0, "job": 5.0, "name": "y"}]
    assert best(runs, key="wall")["name"] == "y"
    assert best_each(runs) == {"wall": 2.0, "job": 1.0}


def test_the_checkout_is_the_one_with_the_job_entry_point():
    assert os.path.isfile(os.path.join(CHECKOUT, "jobs", "dedup_job.py"))


def test_process_watch_sees_a_childs_memory_and_cpu_by_kind():
    busy = ("x = bytearray(200 * 2**20)\n"  # 200 MB, touched so that it is resident
            "for i in range(0, len(x), 4096): x[i] = 1\n"
            "import time\nend = time.process_time() + 1.0\n"
            "while time.process_time() < end: pass\n")
    proc = subprocess.Popen([sys.executable, "-c", busy])
    with ProcessWatch(proc.pid, interval=0.05) as watch:
        proc.wait()
    assert watch.peak_mb["driver"] >= 150, watch.peak_mb
    assert watch.cpu["driver"] >= 0.5, watch.cpu
    assert watch.peak_mb["jvm"] == watch.cpu["jvm"] == 0 and watch.peak_mb["python"] >= watch.peak_mb["driver"]
    figures = watch.figures()
    assert figures["peak_mb_driver"] == watch.peak_mb["driver"] and figures["cpu_workers"] == 0


def _wait_for_exec(pid: int, marker: bytes, timeout: float = 30.0) -> None:
    """Until the child has exec'd its command: right after the fork, /proc/PID/cmdline is still the parent's."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if marker in fh.read():
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not start its command within {timeout} s")


def test_pyspark_workers_are_told_from_the_driver():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "-m", "pyspark.daemon"])
    try:
        _wait_for_exec(proc.pid, b"time.sleep(30)")
        assert process_kind(proc.pid, "python3") == "workers"
        assert process_kind(os.getpid(), "python3") == "driver"
        assert process_kind(os.getpid(), "java") == "jvm"
        assert process_kind(os.getpid(), "bash") is None
    finally:
        proc.kill()
        proc.wait()


def test_tables_print_formatted_and_write_raw_values(tmp_path, capsys):
    path = tmp_path / "out.json"
    tables = Tables(str(path))
    tables.table(["N", "s", "ok"], [[1_000_000, 2.345, True], [20, "-", False]], [None, "{:.1f}", None], title="t")
    tables.note("a note")
    tables.write()
    out = capsys.readouterr().out
    assert "| 1,000,000 | 2.3 | yes |" in out and "| 20 | - | NO |" in out and "a note" in out
    saved = json.loads(path.read_text())
    assert saved["items"][0] == {"title": "t", "headers": ["N", "s", "ok"],
                                 "rows": [[1_000_000, 2.345, True], [20, "-", False]]}
    assert saved["items"][1] == {"note": "a note"}


@pytest.fixture
def two_runs(tmp_path):
    """Two outputs whose clusters differ in one page's cluster."""
    outs = []
    for name, third in (("a", 1), ("b", 3)):
        os.makedirs(tmp_path / name / "clusters")
        pd.DataFrame({"id": [1, 2, 3], "cluster_id": [1, 1, third], "is_duplicate": [False, True, third != 3]}) \
            .to_parquet(tmp_path / name / "clusters" / "part-0.parquet")
        outs.append(str(tmp_path / name))
    return outs


def test_cluster_rows_tell_two_runs_apart(two_runs):
    a, b = two_runs
    assert cluster_rows(a) == {(1, 1, False), (2, 1, True), (3, 1, True)}
    assert cluster_rows(a) != cluster_rows(b) and cluster_rows(b) == cluster_rows(b + "/")


def test_job_labels_follow_the_corpus_order(two_runs):
    docs = pd.DataFrame({"id": [3, 1, 2], "text": ["c", "a", "b"]})
    assert job_labels(docs, two_runs[0]).tolist() == [0, 0, 0]
    labels = job_labels(docs, two_runs[1])
    assert labels[1] == labels[2] != labels[0]
    with pytest.raises(SystemExit, match="lacks 1 corpus documents"):
        job_labels(pd.DataFrame({"id": np.array([1, 2, 3, 4]), "text": list("abcd")}), two_runs[0])
