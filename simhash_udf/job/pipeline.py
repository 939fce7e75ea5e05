"""The job: read -> fingerprint -> short text -> exact collapse -> blocks -> candidates -> verify ->
components -> resolve -> write -> report, with the output's safety around it (checks before anything is
written, a lock, a staging directory moved into place last). The stages are in stages/ (run_stages), report.json
is built in report.py; the Python API (api.py) runs the same stages on a DataFrame."""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, BooleanType, DoubleType, LongType, StringType, StructField, StructType

from ..errors import DedupError
from ..io.history import History
from ..io.paths import escape_glob, local_input_bytes
from ..io.read import (
    EmptyInput,
    LoadedInput,
    check_columns,
    check_file_systems,
    check_ids,
    input_error,
    load_input,
)
from ..io.write import OutputDir
from ..spark.joins import without_ids
from ..spark.jvm_figures import jvm_figures
from ..spark.session import scoped_settings
from ..spark.warm_workers import WorkerWarmUp, start_worker_warm_up
from . import termination
from .config import DedupConfig
from .plot_process import plots_aside
from .report import dedup_report, empty_report, run_report
from .report_html import PageData, collect_page_data, render_html
from .report_plots import write_plots
from .report_schema import DriverJvm, InputFiles, Report, RunHistory
from .stages import (
    Clustered,
    Fingerprinted,
    HistoryView,
    Persist,
    Related,
    StageTimer,
    pass_specs,
    persisting,
    run_stages,
)

log = logging.getLogger("simhash_dedup")


def run(cfg: DedupConfig, spark: SparkSession, new_process: bool = False) -> dict:
    """Run the job for a validated configuration; returns the report as written to DIR/report.json (a dict;
    report_schema.Report.from_dict types it).
    The session's settings are put back as they were when it returns. new_process: a one-off run in a driver
    and JVM started for it (the command line's): the report's pictures are drawn by a process started now
    (plot_process), and a small input's queries are interpreted (one_off_settings)."""
    started, timer, persisted = time.time(), StageTimer(), []
    out, history = check_before_writing(spark, cfg)
    persist = persisting(persisted)
    out.acquire(cfg.lock_stale_minutes * 60)  # one run at a time onto DIR; dead runs' leftovers removed
    # a one-off run's first Python worker made ready while the driver reads the input (spark.warm_workers)
    warm_up = start_worker_warm_up(spark, pass_specs(cfg, cfg.features)) if (
        new_process and cfg.input_format != "fingerprints") else None
    with plots_aside(new_process) as drawer, cleaned_up(spark, out, history, persisted, warm_up):
        out.check_writable(cfg.overwrite)  # again: a run that held the lock may have finished DIR meanwhile
        if history is not None:
            history.recover(cfg.lock_stale_minutes * 60, cfg.fingerprint_version())  # dead runs settled, dates checked
            history.claim_staging()  # a history that cannot be written stops the run here, not after the work
        settings = {**job_settings(cfg, spark), **(one_off_settings(cfg) if new_process else {})}
        with scoped_settings(spark, settings, cfg.checkpoint_dir or out.staged("_checkpoints")):
            try:
                loaded = read_stage(spark, cfg, history, persist, timer)
            except EmptyInput as empty:
                return write_empty_output(spark, cfg, out, empty, timer, started, history)
            partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
            if not cfg.shuffle_partitions:
                partitions = shuffle_partitions_for(loaded.rows, partitions)
                spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
            earlier, earlier_bands, history_report = read_history(history, cfg)
            view = HistoryView(earlier, earlier_bands, history.run_date) if earlier is not None else None
            stages = run_stages(loaded.df, cfg, timer=timer, persist=persist, history=view)
            fp, found = stages.fingerprinted, stages.clustered
            kept_rows = count_kept(found, history, history_report)
            write_stage(cfg, out, history, loaded.df, found, fp, kept_rows, timer,
                        stages.related.pairs if stages.related is not None else None)
            page = report_stage(spark, cfg, out, loaded.df, found, fp.stats["input_rows"] - kept_rows, timer,
                                stages.related)
            report = run_report(cfg, dedup_report(cfg, fp, stages.short_text, found, kept_rows, stages.related),
                                input_files=InputFiles(format=loaded.fmt, **loaded.files.describe()),
                                history=history_report, seconds=timer.seconds, spark_version=spark.version,
                                started=started)
            report.shuffle_partitions = partitions
            report.driver_jvm = DriverJvm(**jvm_figures(spark))
            write_report_files(cfg, out, report, page, started, drawer)
        commit(cfg, out, history)
        return report.to_dict()


# How long a run that fails, or ends early, waits for its worker warm-up (about a second's job) to end
WARM_UP_WAIT_SECONDS = 10.0


@contextmanager
def cleaned_up(spark: SparkSession, out: OutputDir, history: History | None, persisted: list[DataFrame],
               warm_up: WorkerWarmUp | None = None):
    """Whatever happens in the run: on a failure its Spark jobs cancelled, the staging directories removed
    and an input error turned into a clear message; always the cached data freed and the lock released.
    warm_up: the run's worker warm-up, let finish (up to WARM_UP_WAIT_SECONDS) before the jobs are cancelled and
    before the run ends, so that a user's error (most are found while the input is read) or an empty input's run is not shown
    beside a warning of its killed task."""
    try:
        yield
    except BaseException as exc:
        if warm_up is not None:
            warm_up.join(WARM_UP_WAIT_SECONDS)
        settle_spark_jobs(spark)
        out.abort()
        if history is not None:
            history.abort()
        clear = (history.read_error(exc) if history is not None else None) or input_error(exc)
        if clear is not None:
            raise clear from None
        raise
    finally:
        if warm_up is not None:  # a run that ends early (an empty input's) may end before it
            warm_up.join(WARM_UP_WAIT_SECONDS)
        for df in persisted:
            df.unpersist()
        out.release()


def check_before_writing(spark: SparkSession, cfg: DedupConfig) -> tuple[OutputDir, History | None]:
    """Every check that needs the file systems but writes nothing: schemes, overlaps, a finished output,
    the history's fingerprint version."""
    termination.check()
    check_file_systems(spark, cfg.input, cfg.output, cfg.history)
    out = OutputDir(spark, cfg.output)
    out.refuse_overlap(cfg.input, cfg.history)
    out.check_writable(cfg.overwrite)  # refused before anything is written, the lock included
    history = History(spark, cfg.history, cfg.run_date) if cfg.history else None
    if history is not None:
        history.check_usable()
        history.check_version(cfg.fingerprint_version())
    return out, history


# Characters of a query plan's description (the Spark UI's, explain's). Spark builds one at every query and
# every adaptive re-plan, and a plan prints in full every cached plan it reads: with --history the report's
# queries read a dozen caches and made strings of many megabytes, which can fill a small driver heap and cost
# a large share of a small run's time (docs/performance.md).
PLAN_STRING_CHARS = 100_000


def job_settings(cfg: DedupConfig, spark: SparkSession | None = None) -> dict[str, str]:
    """Session settings of a run (put back afterwards): Arrow batches sized for page text, plan strings capped
    (PLAN_STRING_CHARS), and the shuffle partitions when given. With the session, its shuffle partitions are in
    the dict even when not given, so that the run can raise them for its input's size (shuffle_partitions_for)
    and still put them back."""
    conf = {"spark.sql.execution.arrow.maxRecordsPerBatch": str(cfg.arrow_batch_size),
            "spark.sql.execution.arrow.maxBytesPerBatch": str(cfg.arrow_batch_mb << 20),
            "spark.sql.maxPlanStringLength": str(PLAN_STRING_CHARS)}
    if cfg.shuffle_partitions:
        conf["spark.sql.shuffle.partitions"] = str(cfg.shuffle_partitions)
    elif spark is not None:
        conf["spark.sql.shuffle.partitions"] = spark.conf.get("spark.sql.shuffle.partitions")
    return conf


# Session settings of a one-off run (run's new_process) on a small input: Spark's expressions interpreted instead
# of compiled. A new JVM compiles each query's generated Java source with Janino and then runs each class on a few
# hundred rows: a cold 200-page run compiled 243 classes (seconds of its CPU), interpreted 28 remain (the ones
# Spark always generates, such as the cache's column readers). A process that stays (tests, notebooks) keeps
# compiling: later runs reuse the classes. Speed only: Spark's interpreted and compiled expressions give the same
# rows.
INTERPRETED_SETTINGS = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# The local input bytes up to which a one-off run is interpreted (io.paths.local_input_bytes: compressed files
# counted 4x; an input elsewhere is not sized and keeps the compiled code).
INTERPRETED_RUN_BYTES = 16 * 2**20


def one_off_settings(cfg: DedupConfig) -> dict[str, str]:
    """INTERPRETED_SETTINGS for a local input of at most INTERPRETED_RUN_BYTES without --history (a history can
    hold many times the day's rows), nothing otherwise (logged)."""
    if cfg.history:
        return {}
    size = local_input_bytes(cfg.input, INTERPRETED_RUN_BYTES)
    if size is None or size > INTERPRETED_RUN_BYTES:
        return {}
    log.info("a small input in a new JVM: Spark's expressions are interpreted, not compiled (%s)",
             ", ".join(f"{k}={v}" for k, v in INTERPRETED_SETTINGS.items()))
    return dict(INTERPRETED_SETTINGS)


# Pages per shuffle partition the run asks for at least. The widest shuffles carry ~150 bytes a page (the
# pages with their signatures, by fingerprint) or ~10 rows a page (the signature bands), so this keeps a
# partition's sort within ~40-60 MB; with fewer, larger partitions the band sort of 10^7 pages spills gigabytes
# to disk. Adaptive execution
# merges partitions that turn out small, so a larger count costs little on a small input.
PAGES_PER_SHUFFLE_PARTITION = 250_000


def shuffle_partitions_for(rows: int, current: int) -> int:
    """The run's spark.sql.shuffle.partitions when not given (--shuffle-partitions): the session's, raised
    to one partition per PAGES_PER_SHUFFLE_PARTITION input rows; never lowered (a cluster's own setting
    stands when it is already larger)."""
    return max(current, -(-rows // PAGES_PER_SHUFFLE_PARTITION))


# Pages per shuffle partition the Python API asks for at most below two partitions a core: a shuffle task costs
# tens of milliseconds whatever it holds, and the clustering stages spend microseconds a page.
API_PAGES_PER_SMALL_PARTITION = 10_000


def api_shuffle_partitions(rows: int, cores: int) -> int:
    """The Python API's spark.sql.shuffle.partitions when not given (shuffle_partitions=0), sized from the rows
    it was given rather than taken from the caller's session, whose 200 (Spark's default) cost a small call
    ~12x its time in empty tasks: two a core as on the job's local session (get_spark), fewer for a small input
    (one per API_PAGES_PER_SMALL_PARTITION rows, at least one), raised for a large one as the job's
    (shuffle_partitions_for)."""
    small = min(2 * cores, -(-rows // API_PAGES_PER_SMALL_PARTITION))
    return shuffle_partitions_for(rows, max(1, small))


def read_stage(spark: SparkSession, cfg: DedupConfig, history: History | None, persist: Persist,
               timer: StageTimer) -> LoadedInput:
    """Stage 1: the input's rows, their columns and ids checked (raises EmptyInput for --allow-empty)."""
    with timer("read") as counts:
        try:
            # the --keep earliest column orders by its type: a CSV column's is inferred (the others, and the ids,
            # are read as text)
            typed = (cfg.keep_column,) if cfg.keep_column not in (None, cfg.id_col) else ()
            loaded = load_input(spark, cfg.input, cfg.input_format, persist, typed, cfg.id_col)
        except EmptyInput as empty:
            if not cfg.allow_empty:
                raise DedupError(f"{empty}: check that the input is complete (a missing day, a wrong --input), "
                                 "or pass --allow-empty to write an empty, finished output") from None
            raise
        raw = loaded.df
        check_input_columns(raw, cfg)
        if cfg.input_format == "fingerprints" and cfg.verify is not None and "signature" not in raw.columns:
            raise DedupError(
                f"input {cfg.input} has no signature column, which verification needs (clusters/ of this "
                "version has one): pass --min-similarity 0 to cluster by fingerprint distance alone")
        if history is not None:  # before anything is written
            if loaded.fmt == "csv":  # a history of CSV ids typed by runs before they were read as text
                loaded.df = raw = history.text_ids_as_stored(raw, cfg.id_col)
                loaded.ids_checked = False  # typed ids may meet where their texts did not ("01", "1")
            history.check_id_type(cfg.id_col, raw.schema[cfg.id_col].dataType.simpleString())
        parts = raw.rdd.getNumPartitions()
        split = input_split(parts, spark.sparkContext.defaultParallelism, cfg.input_partitions,
                            loaded.rows, cfg.arrow_batch_size, loaded.largest_partition,
                            stored=cfg.input_format == "fingerprints")
        if split:
            loaded.df = raw = raw.repartition(split, F.col(cfg.id_col))
        if not loaded.ids_checked:
            check_ids(raw, cfg.id_col)
        counts.update(rows=loaded.rows, files=loaded.files.files, columns=len(raw.columns), partitions=split or parts)
    return loaded


def check_input_columns(raw: DataFrame, cfg: DedupConfig) -> None:
    """The id column, the text column (`fingerprint` for stored fingerprints) and the keep column exist and have
    usable types (the job's read stage and the Python API)."""
    extra = [cfg.keep_column] if cfg.keep_column else []
    if cfg.input_format == "fingerprints":
        check_columns(raw, cfg.id_col, "fingerprint", extra, text_types=("bigint",))
    else:
        check_columns(raw, cfg.id_col, cfg.text_col, extra)


def input_split(partitions: int, cores: int, requested: int = 0, rows: int = 0, batch: int = 1,
                largest: int = 0, stored: bool = False) -> int:
    """Partitions to spread the input over before the fingerprint stage (0: keep the reader's). The Python
    fingerprint function is the costliest step of a run and runs one task per partition, so an input read as
    fewer partitions than the session has cores (one Parquet file under 128 MB is one partition) would leave
    cores idle: it is split into two tasks per core by a hash of the id (no sort, the same rows for any
    retry), if it has rows for at least one Arrow batch a task (a smaller input costs more to shuffle than
    it gains). `--input-partitions N` forces N.

    largest: the rows of the fullest read partition. The partitions that count are rows / largest, not the
    reader's: Spark cuts a Parquet file into byte ranges, and a file of one row group (pyarrow's default up
    to a million rows) gives one range all the rows and the others none, leaving a core idle in the fingerprint stage
    (scripts/bench/job_fingerprint.py measures it).

    stored: the input holds stored fingerprints (--input-format fingerprints), which skip the Python function
    and are not cached (stages.fingerprint_stage): a split would spread nothing, and each pass over the rows
    would shuffle them again. Only --input-partitions splits them."""
    if requested:
        return requested
    if stored:
        return 0
    holding = min(partitions, rows // largest) if largest else partitions
    return 2 * cores if holding < cores and rows >= 2 * cores * batch else 0


def read_history(history: History | None, cfg: DedupConfig) -> tuple[DataFrame | None, DataFrame | None,
                                                                     RunHistory | None]:
    """The earlier runs' rows (--history; read lazily, not cached: a run reads their fingerprints, and the
    clusters and signatures of the few that meet its own), their band rows (from the runs' band indexes), and
    the history part of the report."""
    if history is None:
        return None, None, None
    earlier, dates_read, dates_ignored = history.earlier()
    bands = history.band_rows(dates_read, cfg.bands) if earlier is not None and cfg.bands is not None else None
    report = RunHistory(path=history.path, run_date=history.run_date, runs_read=len(dates_read),
                        first_run=dates_read[0] if dates_read else None, later_or_same_runs_ignored=dates_ignored,
                        duplicates_of_earlier_runs=0, history_rows=0, history_fingerprints_compared=0,
                        repaired=history.repairs, runs_without_manifest=len(history.unchecked))
    if dates_ignored:
        log.warning("history %s has runs on or after %s (%s): they are not read, and the later ones did not see "
                    "this run's pages", history.path, history.run_date, ", ".join(dates_ignored))
    return earlier, bands, report


def count_kept(found: Clustered, history: History | None, history_report: RunHistory | None) -> int:
    """Pages kept by this run; with a history, also how many became duplicates of earlier runs' pages."""
    if history_report is None or found.stats.history_rows is None:
        return sum(found.histogram.values())  # one kept document per cluster
    counts = found.clusters.agg(
        F.sum((~F.col("is_duplicate")).cast("long")).alias("kept"),
        F.sum((F.col("kept_run_date") != history.run_date).cast("long")).alias("of_history"),
    ).first()
    history_report.duplicates_of_earlier_runs = int(counts["of_history"] or 0)
    history_report.history_rows = found.stats.history_rows
    history_report.history_fingerprints_compared = found.stats.history_fingerprints_compared
    return int(counts["kept"] or 0)


# clusters/'s columns (README's output layout): similarity is a duplicate's estimated Jaccard index to its kept
# page (null for a kept page)
CLUSTERS_COLUMNS = ("id", "fingerprint", "signature", "cluster_id", "is_duplicate", "similarity")
# related/'s columns: rank 1 is the nearest; similarity is the two pages' estimated Jaccard index (null without
# signatures)
RELATED_COLUMNS = ("id", "related_id", "distance", "rank", "similarity")


def write_stage(cfg: DedupConfig, out: OutputDir, history: History | None, raw: DataFrame, found: Clustered,
                fp: Fingerprinted, kept_rows: int, timer: StageTimer, related: DataFrame | None = None) -> None:
    """clusters/, kept/ (the input's rows of the kept pages), related/ (with --related N: RELATED_COLUMNS) and
    this run's rows of the history, staged."""
    clusters = found.clusters
    with timer("write") as counts:
        clusters.select(*CLUSTERS_COLUMNS).write.parquet(out.staged("clusters"))
        if history is not None:
            rows = clusters if "kept_run_date" in clusters.columns else clusters.withColumn(
                "kept_run_date", F.lit(history.run_date))
            history.stage(rows.select("id", "fingerprint", "signature", "cluster_id", "is_duplicate", "kept_run_date"),
                          cfg.fingerprint_version(), cfg.bands)
        dup_ids = clusters.where(F.col("is_duplicate")).select(F.col("id").alias("_dup_id"))
        kept_docs = without_ids(raw, cfg.id_col, dup_ids, fp.stats["input_rows"] - kept_rows)
        kept_docs.write.parquet(out.staged("kept"))
        if related is not None:
            related.select(*RELATED_COLUMNS).write.parquet(out.staged("related"))
        counts.update(clusters_rows=fp.stats["input_rows"], kept=kept_rows)


def report_stage(spark: SparkSession, cfg: DedupConfig, out: OutputDir, raw: DataFrame, found: Clustered,
                 duplicates: int, timer: StageTimer, related: Related | None = None) -> PageData:
    """report.html's aggregates: histograms and a few example pairs (small Spark aggregates; no per-page
    data reaches the driver); the texts of the related stage's example pages too."""
    with timer("report") as counts:
        # (Spark's readers glob their paths: an --output named out[1] is read as itself)
        kept_written = spark.read.schema(raw.schema).parquet(escape_glob(out.staged("kept")))  # no footer-reading job
        sentence_keys = found.stats.candidates.sentence_keys
        more_ids = [i for e in sentence_keys.examples.values() for i in e.ids] if sentence_keys else []
        if related is not None:
            more_ids += [i for e in related.stats.examples for i in (e.id, e.related_id)]
        page = collect_page_data(found.clusters, raw, kept_written, cfg, duplicates, more_ids)
        counts["example_pairs"] = len(page.examples)
    return page


def write_report_files(cfg: DedupConfig, out: OutputDir, report: Report, page: PageData, started: float,
                       drawer=None) -> None:
    """The plots, report.html and report.json, staged. total_seconds (from `started`, the run's time.time() at
    its start) is taken again once the plots are drawn (~1 s in a new driver), so that both files count them;
    only rendering those two files and the commit come after it. drawer: plot_process.PlotProcess or None."""
    if not cfg.checkpoint_dir:
        out.remove_staged("_checkpoints")
    report.duplicates_to_kept = page.duplicates_to_kept
    report.duplicate_rate_by = page.duplicate_rate_by
    report.example_pairs = page.example_pairs
    report.plots = write_plots(report, out, drawer)
    report.total_seconds = round(time.time() - started, 3)
    report.report_html = "report.html"
    out.write_text(out.staged("report.html"), render_html(report, page.examples, page.more_texts))
    out.write_report(report.to_dict())


def commit(cfg: DedupConfig, out: OutputDir, history: History | None) -> None:
    """Publish the history's rows, then move the output into place (_SUCCESS last)."""
    termination.check()  # a SIGTERM from here on lets the commit finish
    out.check_still_owner()  # before the history too
    if history is not None:
        history.publish()  # before _SUCCESS: a run killed in between is re-run, and reads the same history
    out.commit()


def write_empty_output(spark: SparkSession, cfg: DedupConfig, out: OutputDir, empty: EmptyInput, timer: StageTimer,
                       started: float, history: History | None = None) -> dict:
    """--allow-empty and an input of 0 rows: an empty, finished output (clusters/ and kept/ with no rows,
    report.json with zero counts and why, _SUCCESS). The history is not read, and a day without pages adds
    nothing to it; an earlier attempt's rows of the same date are removed (before the commit, as a run's
    rows are published), so that the history holds what the date's output holds."""
    df = empty.df
    id_type = df.schema[cfg.id_col].dataType if df is not None and cfg.id_col in df.columns else StringType()
    clusters = StructType([StructField("id", id_type), StructField("fingerprint", LongType()),
                           StructField("signature", BinaryType()), StructField("cluster_id", id_type),
                           StructField("is_duplicate", BooleanType()), StructField("similarity", DoubleType())])
    spark.createDataFrame([], clusters).write.parquet(out.staged("clusters"))
    kept_schema = df.schema if df is not None else StructType([StructField(cfg.id_col, id_type),
                                                                StructField(cfg.text_col, StringType())])
    spark.createDataFrame([], kept_schema).write.parquet(out.staged("kept"))
    log.warning("input %s: %s; writing an empty output (--allow-empty)", cfg.input, empty)
    report = empty_report(cfg, str(empty), timer.seconds, spark.version, started)
    if not cfg.checkpoint_dir:
        out.remove_staged("_checkpoints")
    termination.check()
    out.check_still_owner()  # before the history too
    if history is not None:
        report.history.earlier_attempt_removed = history.remove_date()
        history.abort()  # this run's staging owner file
    out.write_report(report.to_dict())
    out.commit()
    return report.to_dict()


def settle_spark_jobs(spark: SparkSession, timeout: float = 30.0) -> None:
    """After a failure: cancel the run's Spark jobs and wait (up to `timeout` seconds) until no task runs, so
    that no task of a cancelled job writes into the staging directory after it has been removed."""
    try:
        sc = spark.sparkContext
        sc.cancelAllJobs()
        tracker = sc.statusTracker()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = sum(e.numRunningTasks() for e in sc._jsc.sc().statusTracker().getExecutorInfos())
            if not tracker.getActiveJobsIds() and not running:
                return
            time.sleep(0.2)
        log.warning("Spark tasks still running %.0f s after the run was cancelled", timeout)
    except Exception as exc:  # a stopped context has nothing running
        log.debug("settling Spark jobs: %s", exc)
