"""The shared parts of the benchmarks in scripts/bench/ (CONTRIBUTING.md, "Benchmarks").

A benchmark measures variants side by side in one run: they take turns, round by round, and each one's best
run is kept (on a shared machine noise only ever slows a run down, so the best of a few turns compares like
with like). It runs the job in one of two ways:

- warm, in this process (`bench_session`): the JVM and its Python workers are started once and every timed
  run follows an untimed one; what a long-lived session sees;
- cold, a new process per run (`run_job_process`): `spark-submit jobs/dedup_job.py`, or the job's local entry
  point `python -m simhash_udf.job.cli`, of this checkout or of another one (an earlier commit in a
  `git worktree`); what a user's daily spark-submit sees, the JVM's start included.

Either way `ProcessWatch` follows the processes under it through /proc: CPU seconds and peak resident memory
of the JVM, the driver's Python and the Python workers. Results print as Markdown tables (`Tables`), and with
`--json FILE` they are also written to a file.

The benchmarks run with the Python of the checkout's virtualenv (scripts/test.sh makes it and installs the
project there in editable mode): they import simhash_udf from it, and a run in a new process uses the
installed package's checkout (CHECKOUT) unless given another one.
"""
from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd
from pyspark import SparkContext
from pyspark.sql import SparkSession

from ..spark.session import get_spark
from .sample_corpus import make_sample_corpus

# the checkout whose simhash_udf this is (editable install): its jobs/dedup_job.py is what spark-submit runs
CHECKOUT = str(Path(__file__).resolve().parents[2])


# ------------------------------------------------------------------------------------------------------------
# The environment and the warm session


def local_environment() -> None:
    """What a local run needs and a fresh shell may lack: Spark bound to loopback, workers on this Python."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def bench_session(app_name: str, master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """The job's local session (session.get_spark: every core unless `master` says otherwise), quiet."""
    local_environment()
    spark = get_spark(app_name, master=master, conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def jvm_peak_mb(spark: SparkSession) -> float:
    """The peak resident memory of the session's JVM since it started (VmHWM), in MB."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def stop_jvm(spark: SparkSession) -> None:
    """Stop the session and end the JVM that pyspark started for it: after spark.stop() alone the JVM lives on
    with its heap, beside the new JVMs of the runs that follow, and at large sizes they do not all fit in memory."""
    gateway = SparkContext._gateway
    spark.stop()
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        proc.terminate()
        proc.wait(timeout=120)
    SparkContext._gateway = SparkContext._jvm = None


# ------------------------------------------------------------------------------------------------------------
# Taking turns


def take_turns(variants: Mapping[str, Callable[[], object]], rounds: int, log: bool = True) -> dict[str, list[dict]]:
    """Every variant once a round, in turn, for `rounds` rounds: each variant's results in order. A result is
    the call's wall time as "seconds" and, when the call returns a dict of figures, those (its "seconds" wins);
    any other value it returns is dropped."""
    results: dict[str, list[dict]] = {name: [] for name in variants}
    for r in range(rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            figures = fn()
            result = {"seconds": time.perf_counter() - start, **(figures if isinstance(figures, Mapping) else {})}
            results[name].append(result)
            if log:
                print(f"round {r + 1}, {name}: {summary(result)}", flush=True)
    return results


def best(results: Sequence[dict], key: str = "seconds") -> dict:
    """The run with the least `key`, all its figures."""
    return min(results, key=lambda r: r[key])


def best_each(results: Sequence[dict]) -> dict:
    """Each numeric figure's least value over the runs (figures that vary on their own, as wall and job time)."""
    return {k: min(r[k] for r in results) for k, v in results[0].items() if isinstance(v, int | float)}


def summary(result: Mapping) -> str:
    """The numeric figures of a result, on one line."""
    return ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in result.items() if isinstance(v, int | float))


# ------------------------------------------------------------------------------------------------------------
# The processes under a run, from /proc (Linux)

TICK = os.sysconf("SC_CLK_TCK")
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20
KINDS = ("jvm", "driver", "workers")


def _stat(path: str) -> tuple[str, list[str]]:
    """A /proc stat file's command name and the fields after it (fields[0] is the state)."""
    with open(path) as fh:
        text = fh.read()
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def process_tree(root: int) -> dict[int, str]:
    """pid -> command name of `root` and every process below it."""
    parent, name = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                comm, fields = _stat(f"/proc/{entry}/stat")
            except (OSError, ValueError):
                continue
            parent[int(entry)], name[int(entry)] = int(fields[1]), comm
    children = collections.defaultdict(list)
    for pid, ppid in parent.items():
        children[ppid].append(pid)
    found, frontier = {root: name.get(root, "?")}, [root]
    while frontier:
        for child in children[frontier.pop()]:
            found[child] = name[child]
            frontier.append(child)
    return found


def process_kind(pid: int, comm: str) -> str | None:
    """jvm, workers (pyspark's daemon and the workers it forks), driver (any other Python) or None."""
    if comm == "java":
        return "jvm"
    if not comm.startswith("python"):
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            command = fh.read()
    except OSError:
        return None
    return "workers" if b"pyspark.daemon" in command or b"pyspark.worker" in command else "driver"


def jvm_threads(root: int) -> collections.Counter:
    """CPU seconds of the threads of the JVMs under `root` since they started, by thread name with numbers folded
    ("C2 CompilerThreN", "Executor task lN")."""
    threads: collections.Counter = collections.Counter()
    for pid, comm in process_tree(root).items():
        if comm != "java":
            continue
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                name, fields = _stat(f"/proc/{pid}/task/{tid}/stat")
            except (OSError, ValueError):
                continue
            threads[re.sub(r"[0-9#]+", "N", name)] += (int(fields[11]) + int(fields[12])) / TICK
    return threads


class ProcessWatch:
    """CPU seconds and peak resident memory by kind of process (process_kind: the JVM, the driver's Python, the
    Python workers) of `root` (default: this process) and every process under it, sampled from /proc every
    `interval` seconds by a thread while the watch is on (`with ProcessWatch(...) as watch:`).

    cpu: what each process used while watched (one that ends between two samples loses at most one interval's);
    peak_mb: per kind the largest sample of the kind's processes' resident memory together, and as "python"
    the largest of the driver's and the workers' together."""

    def __init__(self, root: int | None = None, interval: float = 0.5):
        self.root, self.interval = root or os.getpid(), interval
        self._kinds: dict[tuple[int, str], str | None] = {}
        self._base: dict[int, float] = {}  # pid -> CPU seconds when the watch began
        self._last: dict[int, tuple[str, float]] = {}  # pid -> (kind, CPU seconds at the last sample)
        self.peak_mb = dict.fromkeys([*KINDS, "python"], 0.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)

    def _sample(self) -> None:
        rss = dict.fromkeys(KINDS, 0.0)
        for pid, comm in process_tree(self.root).items():
            if (pid, comm) not in self._kinds:  # by name too: spark-submit's shell becomes the JVM (exec)
                self._kinds[pid, comm] = process_kind(pid, comm)
            kind = self._kinds[pid, comm]
            if kind is None:
                continue
            try:
                fields = _stat(f"/proc/{pid}/stat")[1]
            except (OSError, ValueError):
                continue
            self._last[pid] = (kind, (int(fields[11]) + int(fields[12])) / TICK)
            rss[kind] += int(fields[21]) * PAGE_MB
        rss["python"] = rss["driver"] + rss["workers"]
        for kind, mb in rss.items():
            self.peak_mb[kind] = max(self.peak_mb[kind], mb)

    def _follow(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> ProcessWatch:
        self._sample()
        self._base = {pid: seconds for pid, (_, seconds) in self._last.items()}
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def cpu(self) -> dict[str, float]:
        out = dict.fromkeys(KINDS, 0.0)
        for pid, (kind, seconds) in self._last.items():
            out[kind] += seconds - self._base.get(pid, 0.0)
        return out

    def figures(self) -> dict[str, float]:
        """cpu_<kind> and peak_mb_<kind>, flat (for take_turns' results)."""
        return {**{f"cpu_{k}": v for k, v in self.cpu.items()}, **{f"peak_mb_{k}": v for k, v in self.peak_mb.items()}}


# ------------------------------------------------------------------------------------------------------------
# Cold runs: the job in a new process


def checkouts(others: Sequence[str]) -> list[str]:
    """This checkout, then the other checkouts given (absolute paths)."""
    return [CHECKOUT, *(os.path.abspath(c) for c in others)]


def checkout_name(code: str) -> str:
    return "this checkout" if code == CHECKOUT else code


def spark_jobs(event_dir: str) -> int:
    """Spark jobs started by the applications whose event logs are in event_dir."""
    n = 0
    for path in glob.glob(os.path.join(event_dir, "**", "*"), recursive=True):
        if os.path.isfile(path):
            with open(path, errors="replace") as fh:
                n += sum('"Event":"SparkListenerJobStart"' in line for line in fh)
    return n


def _job_command(code: str, submit: bool, master: str | None, submit_args: Sequence[str], event_args: list[str],
                 env: dict) -> list[str]:
    if submit:
        entry = os.path.join(code, "jobs", "dedup_job.py")
        if not os.path.isfile(entry):
            raise SystemExit(f"no {entry}: run the benchmarks from a checkout whose simhash_udf is installed in "
                             "editable mode (scripts/test.sh makes .venv so), or give a checkout")
        spark_submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
        return [spark_submit, *(["--master", master] if master else []), *event_args, *submit_args, entry]
    if master:
        env["SIMHASH_DEDUP_MASTER"] = master
    if event_args:
        env["PYSPARK_SUBMIT_ARGS"] = shlex.join([*event_args, "pyspark-shell"])
    return [sys.executable, "-m", "simhash_udf.job.cli"]


def run_job_process(output: str, job_args: Sequence[str], *, code: str = CHECKOUT, submit: bool = False,
                    master: str | None = "local[2]", submit_args: Sequence[str] = (), java_options: str | None = None,
                    event_log: bool = False, env: dict[str, str] | None = None) -> dict:
    """One run of the job in a new process (a new JVM, new Python workers) writing to `output` (removed first):
    spark-submit jobs/dedup_job.py (`submit`, with `submit_args` before the script) or python -m
    simhash_udf.job.cli, of the checkout `code` (on PYTHONPATH), on `master` (None: the job's own choice, every
    core). java_options:
    SIMHASH_DEDUP_JAVA_OPTIONS of the run (None: unset, the job chooses). With event_log, Spark's event log
    is written and its jobs counted (spark_jobs; writing it costs a cold run ~1 s, so timed runs write none).
    env: more environment variables of the run (e.g. SIMHASH_DEDUP_CLASS_ARCHIVE empty: without the class archive).

    Returns wall (the whole command, the JVM's start included), job (report.json's total_seconds: from the
    session's start to the end), stages (the sum of the report's stage seconds), cpu (the CPU seconds of all
    its processes) and the ProcessWatch figures by kind, and the report itself. (The kernel's account of ended
    children cannot give the CPU: `python -m` leaves its JVM to end unwaited, and with it the workers.)"""
    events = output.rstrip("/") + ".events"
    for old in (output, events):  # an earlier run's, removed before the clock starts
        shutil.rmtree(old, ignore_errors=True)
    event_args = []
    if event_log:
        os.makedirs(events)
        event_args = ["--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.compress=false",
                      "--conf", "spark.eventLog.rolling.enabled=false", "--conf", f"spark.eventLog.dir=file://{events}"]
    more_env = env or {}
    env = dict(os.environ, PYTHONPATH=code, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SIMHASH_DEDUP_JAVA_OPTIONS", None)
    env.update(more_env)
    if java_options is not None:
        env["SIMHASH_DEDUP_JAVA_OPTIONS"] = java_options
    command = [*_job_command(code, submit, master, submit_args, event_args, env), *job_args, "--output", output]
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with ProcessWatch(proc.pid) as watch:
        _, stderr = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{shlex.join(command)} failed (exit {proc.returncode}) in {code}:\n{stderr[-3000:]}")
    with open(os.path.join(output, "report.json")) as fh:
        report = json.load(fh)
    result = {"wall": wall, "job": report["total_seconds"], "stages": sum(report["seconds"].values()),
              "cpu": sum(watch.cpu.values()), **watch.figures(), "report": report}
    if event_log:
        result["spark_jobs"] = spark_jobs(events)
        shutil.rmtree(events, ignore_errors=True)
    return result


# ------------------------------------------------------------------------------------------------------------
# Output


def add_json_option(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--json", metavar="FILE", help="also write the printed tables and notes to FILE as JSON")


def _cell(value, fmt: str | None) -> str:
    if isinstance(value, str):  # a cell that is text ("-") in a column of numbers
        return value
    if fmt is not None:
        return fmt.format(value)
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


class Tables:
    """Prints a benchmark's Markdown tables and notes as they come, and keeps them with their raw values: with
    a path, `write()` saves them as JSON with the command that made them."""

    def __init__(self, json_path: str | None = None):
        self.json_path = json_path
        self.items: list[dict] = []

    def table(self, headers: Sequence[str], rows: Sequence[Sequence], formats: Sequence[str | None] | None = None,
              title: str | None = None) -> None:
        """One table; `formats` per column for its numbers ("{:.1f}"; None: ints with thousands separators,
        floats to 2 places, booleans as yes / NO); text cells print as they are."""
        formats = formats or [None] * len(headers)
        if title:
            print(f"\n{title}\n")
        print("| " + " | ".join(headers) + " |")
        print("|" + "---|" * len(headers))
        for row in rows:
            print("| " + " | ".join(_cell(v, f) for v, f in zip(row, formats)) + " |", flush=True)
        self.items.append({"title": title, "headers": list(headers), "rows": [list(r) for r in rows]})

    def note(self, text: str) -> None:
        print(text, flush=True)
        self.items.append({"note": text})

    def write(self) -> None:
        if self.json_path:
            with open(self.json_path, "w") as fh:
                json.dump({"command": shlex.join([sys.executable, *sys.argv]), "items": self.items}, fh, indent=1,
                          default=str)


# ------------------------------------------------------------------------------------------------------------
# Pages

ZH_MAN_PAGES = "/usr/share/man/zh_CN/man*/*.gz"
EN_MAN_PAGES = "/usr/share/man/man[1-8]/*.gz"
_TROFF_ESCAPE = re.compile(r"\\f[BIRP]|\\\(..|\\[-&e]|\\s[-+]?\d")


def man_page_texts(pattern: str) -> list[str]:
    """Whole man pages with their troff lines and escapes taken out (the fingerprint benchmarks' text;
    evaluation.corpus cuts the same pages into paragraphs)."""
    texts = []
    for path in sorted(glob.glob(pattern)):
        try:
            raw = gzip.open(path, "rt", encoding="utf-8", errors="replace").read()
        except (OSError, EOFError):
            continue
        lines = [_TROFF_ESCAPE.sub("", ln) for ln in raw.splitlines() if not ln.startswith((".", "'"))]
        text = "\n".join(lines).strip()
        if len(text) > 200:
            texts.append(text)
    return texts


def manpages_zh_installed() -> bool:
    """Debian's manpages-zh is installed (dpkg's word where there is one: other packages put a few Chinese
    pages under /usr/share/man/zh_CN too, 43 texts of 108,000 characters on a machine without it, which made
    the fingerprint benchmarks' Chinese pages 88 distinct ones repeated, and a corpus of 550 Chinese pages in
    18,195 instead of thousands)."""
    if shutil.which("dpkg-query"):
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "manpages-zh"], capture_output=True, text=True)
        return status.returncode == 0 and status.stdout.endswith(" installed")
    return len(glob.glob(ZH_MAN_PAGES)) >= 500


def ensure_manpages_zh() -> bool:
    """manpages-zh installed if it is missing and we are root (apt-get; the package list fetched first when a
    fresh machine has none); whether it is installed now."""
    if not manpages_zh_installed() and os.geteuid() == 0 and shutil.which("apt-get"):
        for cmd in (["apt-get", "install", "-y", "-qq", "manpages-zh"], ["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "manpages-zh"]):
            if subprocess.run(cmd, capture_output=True).returncode == 0 and "install" in cmd:
                break
    return manpages_zh_installed()


def man_page_corpus(lang: str, megabytes: float) -> tuple[list[str], str]:
    """Pages of about `megabytes` MB of UTF-8 in all, and where they come from: Chinese (lang zh: Debian's
    manpages-zh, installed if missing and we are root) or English man pages, repeated as needed; without them
    the demo's generated pages (and the source says so)."""
    if lang == "zh":
        installed = ensure_manpages_zh()
        texts = man_page_texts(ZH_MAN_PAGES)
        source = ("Chinese man pages (manpages-zh)" if installed else
                  f"Chinese man pages ({len(texts)} texts of other packages; manpages-zh is not installed)")
    else:
        texts, source = man_page_texts(EN_MAN_PAGES), "English man pages"
    if not texts:
        texts = [r["text"] for r in make_sample_corpus(400) if r["lang"] == lang]
        source = f"generated sample corpus ({lang}); real man pages not found"
    out, size, i = [], 0, 0
    while size < megabytes * 1e6:
        out.append(texts[i % len(texts)])
        size += len(out[-1].encode("utf-8"))
        i += 1
    return out, source


def write_sample_corpus(path: str, originals: int, seed: int) -> int:
    """The demo's sample crawl (sample_corpus: `originals` pages and their copies, ~1.8 rows an original) as one
    Parquet file; the number of rows."""
    rows = make_sample_corpus(originals, seed=seed)
    pd.DataFrame(rows).to_parquet(path)
    return len(rows)
