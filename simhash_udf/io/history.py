"""Incremental runs: the fingerprints and cluster assignments of earlier runs, partitioned by run date.

HISTORY/run_date=YYYY-MM-DD/ holds one row per document of that run: id, fingerprint, cluster_id,
is_duplicate and kept_run_date (the run date of the cluster's kept page), and a band index of the band keys
of the run's signatures (band_index_name, band_index), so a later run reads band keys instead of
computing them from every signature of the history. The first run pins two things beside them, and every
later run checks both before it writes anything: HISTORY/_fingerprint_version names the fingerprint
definition of every row, HISTORY/_id_type the Spark type of the ids (cluster_id of a later page is an id of
an earlier day, so the types must be one); a run with another definition or id type is refused.

A run for date D reads the partitions before D only, so re-running a day (or a day whose run was killed
after its partition was written) gives the same result. Earlier pages always outrank the run's own: a new
page in a component that holds history pages is a duplicate of the best history cluster in it (the earliest
kept page, then the smallest cluster id); history rows are never rewritten.
"""
from __future__ import annotations

import datetime as dt
import logging
import uuid
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..errors import DedupError
from .paths import escape_glob

log = logging.getLogger("simhash_dedup")
VERSION_FILE = "_fingerprint_version"
REPLACED = "-replaced"  # suffix of an earlier attempt's partition moved aside by publish
ID_TYPE_FILE = "_id_type"


def check_run_date(run_date: str) -> str:
    try:
        return dt.date.fromisoformat(run_date).isoformat()
    except ValueError:
        raise DedupError(f"--run-date {run_date!r} is not a date: use YYYY-MM-DD (e.g. Airflow's {{{{ ds }}}})") from None


class History:
    """The history directory on any Hadoop file system."""

    def __init__(self, spark: SparkSession, path: str, run_date: str):
        self.spark = spark
        self.path = path.rstrip("/")
        self.run_date = check_run_date(run_date)
        jvm = spark.sparkContext._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
        self.fs = self._Path(self.path).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        self.staging = f"{self.path}/_staging-{uuid.uuid4().hex[:12]}"  # "_": hidden from Spark's readers
        self._staging_owner = None  # ownership.OwnerFile of the staging directory while it exists
        self.partition = f"{self.path}/run_date={self.run_date}"
        self._stale_seconds = 600.0  # of owner files (--lock-stale-minutes), set by remove_stale_staging
        self._pins: dict[str, str] = {}  # what publish pins (stage)

    def run_dates(self) -> list[str]:
        if not self.fs.exists(self._Path(self.path)):
            return []
        names = [s.getPath().getName() for s in self.fs.listStatus(self._Path(self.path)) if s.isDirectory()]
        return sorted(n.split("=", 1)[1] for n in names if n.startswith("run_date="))

    def _read_pin(self, name: str) -> str | None:
        p = self._Path(f"{self.path}/{name}")
        if not self.fs.exists(p):
            return None
        stream = self.fs.open(p)
        try:
            return self.spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8").strip()
        finally:
            stream.close()

    def _write_pin(self, name: str, value: str) -> None:
        if self._read_pin(name) is not None:
            return
        stream = self.fs.create(self._Path(f"{self.path}/{name}"), True)
        try:
            stream.write(bytearray((value + "\n").encode("utf-8")))
        finally:
            stream.close()

    def stored_version(self) -> str | None:
        return self._read_pin(VERSION_FILE)

    def stored_id_type(self) -> str | None:
        """The pinned id type; for a history written before the pin, the id type of its first run's rows."""
        pinned = self._read_pin(ID_TYPE_FILE)
        if pinned is not None:
            return pinned
        dates = self.run_dates()
        if not dates:
            return None
        try:
            schema = self.spark.read.parquet(escape_glob(f"{self.path}/run_date={dates[0]}")).schema  # the footers only
        except Exception:  # no readable rows there: nothing to compare with
            return None
        return schema["id"].dataType.simpleString() if "id" in schema.fieldNames() else None

    def check_id_type(self, id_col: str, id_type: str) -> None:
        """This run's ids have the history's id type (checked once the input's schema is known, before
        anything is written)."""
        stored = self.stored_id_type()
        if stored is not None and stored != id_type:
            raise DedupError(
                f"history {self.path} holds ids of type {stored}, but this run's id column {id_col!r} has type "
                f"{id_type}: a page's cluster_id may be an id of an earlier day, so the types must be the same; "
                f"make the id column {stored} (cast it upstream, or pass the --id-col that was used before), or "
                "start a new --history directory for ids of the new type"
            )

    def text_ids_as_stored(self, df: DataFrame, id_col: str) -> DataFrame:
        """df with its text ids cast to the history's id type, when the history has another: CSV ids are read
        as text since 2026-11-27, and a history written by earlier CSV runs holds them typed (bigint for
        1, 2, ...). Cast only if every id reads back as written (not 007 for a bigint); else the run stops
        with examples. Any other df is returned as it is (check_id_type then compares the types)."""
        stored = self.stored_id_type()
        if stored in (None, "string") or df.schema[id_col].dataType.simpleString() != "string":
            return df
        ident = F.col(id_col)
        typed = ident.try_cast(stored)
        bad = df.where(ident.isNotNull() & (typed.isNull() | (typed.cast("string") != ident))).select(ident).limit(3)
        examples = [r[0] for r in bad.collect()]
        if examples:
            raise DedupError(
                f"history {self.path} holds ids of type {stored} (CSV ids were typed by runs before 2026-11-27; "
                f"they are now read as written), and this run's ids such as {', '.join(map(repr, examples))} "
                f"are not {stored} as written: start a new --history directory for text ids, or write the ids "
                f"as the history's {stored} values")
        return df.withColumn(id_col, typed)

    def check_version(self, version: str) -> None:
        stored = self.stored_version()
        if stored is not None and stored != version:
            raise DedupError(
                f"history {self.path} holds fingerprints of version {stored!r}, this run makes {version!r}: "
                "use the same tokenizer/weighting/segmenter options as the history; a history written by an older "
                "version of simhash-dedup (without verification signatures, or another definition) cannot be "
                "compared with this one: start a new --history directory (and re-run the earlier days into it "
                "to keep checking against them)"
            )

    def earlier(self) -> tuple[DataFrame | None, list[str], list[str]]:
        """The rows of the runs before this run's date (id, fingerprint, signature, cluster_id, is_duplicate,
        kept_run_date; rows without a fingerprint left out), read lazily from the files: a run reads their
        fingerprints and signatures to search, and the clusters of the few that meet its own
        (per_fingerprint). Also the dates read and the dates skipped (this date and later)."""
        dates = self.run_dates()
        before = [d for d in dates if d < self.run_date]
        later = [d for d in dates if d >= self.run_date]
        if not before:
            return None, [], later
        return self._rows_of(before), before, later

    def _rows_of(self, dates: list[str]) -> DataFrame:
        """The rows with a fingerprint of the runs of these dates."""
        return (self.spark.read.option("basePath", self.path)
                .parquet(*[escape_glob(f"{self.path}/run_date={d}") for d in dates])
                .where(F.col("fingerprint").isNotNull()))

    def band_rows(self, earlier_dates: list[str], bands) -> DataFrame:
        """(fingerprint, keys) of the rows of these earlier runs, keys the array of the band keys of its
        signature (spark.bands.band_key_arrays): read from each run's band index, or computed from the
        signatures for a run without one (written by an earlier version, or with other band settings).
        Reading the index instead of computing the keys from 6M signatures took the band search of 30 days of
        200,000 pages from ~60 to ~15 s."""
        from ..spark.bands import band_key_arrays

        name = band_index_name(bands)
        indexed = [d for d in earlier_dates if self.fs.exists(self._Path(f"{self.path}/run_date={d}/{name}"))]
        computed = [d for d in earlier_dates if d not in indexed]
        parts = []
        if indexed:
            parts.append(self.spark.read.parquet(*[escape_glob(f"{self.path}/run_date={d}/{name}") for d in indexed])
                         .select("fingerprint", "keys"))
        if computed:
            parts.append(band_key_arrays(self._rows_of(computed), bands))
        return reduce(DataFrame.unionByName, parts)

    def stage(self, rows: DataFrame, version: str, bands=None) -> None:
        """Write this run's rows (id, fingerprint, signature, cluster_id, is_duplicate, kept_run_date) beside
        the history, and with the band search on (bands: SignatureBands) their band index."""
        self.claim_staging()
        rows.write.parquet(self.staging)
        if bands is not None and bands.bands > 0:
            staged = self.spark.read.parquet(escape_glob(self.staging))  # the rows as written, not their lineage again
            band_index(staged, bands).write.parquet(f"{self.staging}/{band_index_name(bands)}")
        # pinned when the rows are published, not here: a first run that fails after staging must not pin a
        # history that holds none of its rows
        self._pins = {VERSION_FILE: version, ID_TYPE_FILE: rows.schema["id"].dataType.simpleString()}

    def publish(self) -> None:
        """Move the staged rows to run_date=D. The partition of an earlier attempt of the same date is moved
        aside first (to the staging directory's name + REPLACED, owned by its owner file) and removed only once
        the new rows are in place; if they cannot be moved in, it is put back, so a failed publish never leaves
        the date without rows (before: it was deleted first). A kill in between leaves the date without rows
        and the output without this run (published after the history): the day is run again, and the next
        run removes what is aside (remove_stale_staging)."""
        target, aside = self._Path(self.partition), self._replaced()
        replaced = self._move_earlier_attempt_aside()
        if self.fs.exists(target) or not self.fs.rename(self._Path(self.staging), target):
            # (a partition there again: another run of the same date published meanwhile; a rename onto it
            # would nest this run's rows inside it)
            if replaced and not self.fs.exists(target) and not self.fs.rename(aside, target):
                log.error("could not move the earlier attempt's rows %s back to %s", aside.toString(), self.partition)
            raise DedupError(f"could not move {self.staging} to {self.partition}: check permissions on the history, "
                             "and that no other run of the same --run-date writes into it")
        for name, value in self._pins.items():  # a first run's (kept as they are afterwards)
            self._write_pin(name, value)
        if replaced:
            try:
                self.fs.delete(aside, True)
            except Exception as exc:  # the new rows are in place; the next run removes the old ones
                log.warning("could not remove the replaced rows %s: %s", aside.toString(), exc)
        self._release_staging()

    def abort(self) -> None:
        try:
            self.fs.delete(self._Path(self.staging), True)
        except Exception:  # the original error matters more than a failed clean-up
            pass
        self._release_staging()

    # Staging directories of dead runs. Several runs (of different dates and outputs) may write into one
    # history, so a staging directory's owner is an owner file beside it, `_staging-X.owner`, created before
    # the directory and removed after it (ownership.py: pid, host, heartbeat).

    def check_usable(self) -> None:
        """Before anything is written: the history is a directory, or can be made one (its nearest existing
        ancestor is a directory). Before: a regular file as --history failed with a traceback after the whole
        computation."""
        from .hadoop_fs import HadoopFS

        found = HadoopFS.for_spark(self.spark, self.path).nearest_existing(self.path)
        if found is not None and not found[1]:
            where = "is a file" if found[0] == self.path else f"cannot be created: {found[0]} is a file"
            raise DedupError(f"--history {self.path} {where}, not a directory: choose a directory for the history "
                             "(the job creates it)")

    def claim_staging(self) -> None:
        """Create the owner file of this run's staging directory (once): done at the start of a run, so that a
        history this run cannot write into stops it before the computation, with a message naming --history."""
        if self._staging_owner is not None:
            return
        from py4j.protocol import Py4JJavaError

        from .hadoop_fs import HadoopFS, java_message
        from .ownership import Owner, OwnerFile

        token = self.staging.rsplit("-", 1)[-1]
        owner = OwnerFile(HadoopFS.for_spark(self.spark, self.path), f"{self.staging}.owner",
                          Owner.this_process(token, self.staging), self._stale_seconds)
        try:
            owner.create()
        except (Py4JJavaError, OSError) as exc:
            why = java_message(exc) if isinstance(exc, Py4JJavaError) else str(exc)
            raise DedupError(f"cannot write into --history {self.path} ({why}): check the path and its permissions") from None
        self._staging_owner = owner

    def remove_date(self) -> bool:
        """Remove this date's partition (an earlier attempt's rows), as publish replaces it: for a re-run of the
        date whose input turned out empty (--allow-empty), so that the history holds what the date's output
        holds. Returns whether there was one."""
        if not self._move_earlier_attempt_aside():
            return False
        self.fs.delete(self._replaced(), True)
        return True

    def _replaced(self):
        """Where an earlier attempt's partition is moved aside: the staging directory's name + REPLACED."""
        return self._Path(self.staging + REPLACED)

    def _move_earlier_attempt_aside(self) -> bool:
        """Rename this date's partition, if there is one, to the staging directory's name + REPLACED (owned by
        this run's owner file); returns whether there was one."""
        target = self._Path(self.partition)
        if not self.fs.exists(target):
            return False
        if not self.fs.rename(target, self._replaced()):
            raise DedupError(f"could not move the earlier attempt's {self.partition} aside: check permissions on the "
                             "history")
        return True

    def _release_staging(self) -> None:
        if self._staging_owner is not None:
            self._staging_owner.release()
            self._staging_owner = None

    def remove_stale_staging(self, stale_seconds: float) -> list[str]:
        """Remove `_staging-*` directories (and owner files) of dead runs: no owner file (a run of a version
        before owner files, or one killed between removing its directory and its owner file), or an owner
        that is dead (ownership.stale_reason). Returns the paths removed."""
        from .hadoop_fs import HadoopFS
        from .ownership import judge

        self._stale_seconds = stale_seconds
        fs = HadoopFS.for_spark(self.spark, self.path)
        entries = dict(fs.list(self.path))
        removed = []
        for name in sorted(entries):
            if not name.startswith("_staging-") or name.endswith(".owner"):
                continue
            path = f"{self.path}/{name}"
            owner_name = name.removesuffix(REPLACED) + ".owner"  # a partition moved aside: its run's owner file
            owner_path = f"{self.path}/{owner_name}"
            if owner_name in entries:
                owner, why = judge(fs, owner_path, stale_seconds)
                if why is None and (owner is not None or fs.exists(owner_path)):
                    continue  # a live run's
            fs.delete(path)
            if not name.endswith(REPLACED):
                fs.delete(owner_path)
            removed.append(path)
        for name in entries:  # owner files whose directory is gone already
            if name.startswith("_staging-") and name.endswith(".owner") and name[: -len(".owner")] not in entries \
                    and name[: -len(".owner")] + REPLACED not in entries:
                owner, why = judge(fs, f"{self.path}/{name}", stale_seconds)
                if why is not None:
                    fs.delete(f"{self.path}/{name}")
                    removed.append(f"{self.path}/{name}")
        if removed:
            log.warning("removed staging directories of dead runs from the history: %s", ", ".join(removed))
        return removed


def band_index_name(bands) -> str:
    """The directory of a run's band index inside its partition (hidden from Spark's readers by the "_"); it
    names the layout and the band settings, so a run with other settings (or an index of the layout before,
    v1: one row per band) computes the keys instead of reading wrong ones."""
    return f"_band_index-v2-{bands.bands}x{bands.bins}x{bands.signature.bits}"


def band_index(rows: DataFrame, bands) -> DataFrame:
    """A run's band index: (fingerprint, keys) per distinct row with a signature, keys its band keys as an
    array (spark.bands.band_key_arrays). One row per page rather than per band: a later run hands the index to
    a Bloom filter in Python, and 3 x 10^7 rows of ten-key arrays cross to Python in 10.7 s against 61.7 s for
    3 x 10^8 rows of one key (measured side by side, 2 cores)."""
    from ..spark.bands import band_key_arrays

    return band_key_arrays(rows, bands).distinct()


def row_filter_keys(batch):
    """Filter keys of a batch of (band, key) rows, one a row (the day's side of the band filter)."""
    from ..core.key_filter import band_filter_keys

    return band_filter_keys(batch.column("band").to_numpy(zero_copy_only=False),
                            batch.column("key").to_numpy(zero_copy_only=False))


def array_filter_keys(batch) -> tuple:
    """Filter keys (n, bands) of a batch of (fingerprint, keys) rows and which of them are not null."""
    import numpy as np
    import pyarrow.compute as pc

    from ..core.key_filter import band_filter_keys

    lists = batch.column("keys")
    n = len(lists)
    if n == 0:
        return np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1), dtype=bool)
    values = lists.flatten()
    width = len(values) // n  # every array has one element per band
    keys = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).reshape(n, width)
    valid = values.is_valid().to_numpy(zero_copy_only=False).reshape(n, width)
    band = np.broadcast_to(np.arange(width, dtype=np.int32), (n, width))
    return band_filter_keys(band, keys), valid


# A run's distinct search keys are broadcast to the history's rows (no shuffle of the history) when at most
# this many can exist: 4 tables of 16-bit keys hold at most 262,144 whatever the day's size.
BROADCAST_KEYS = 2_000_000


def small(df: DataFrame, most: int) -> DataFrame:
    """df marked for broadcast when `most` (a bound on its rows known before it is computed) is at most
    BROADCAST_KEYS."""
    return F.broadcast(df) if most <= BROADCAST_KEYS else df


def day_keys(rows: DataFrame, key_col: str | None, most: int) -> DataFrame:
    """The distinct (key_col, key) of this run's search rows (key alone if key_col is None), broadcast when at
    most `most` <= BROADCAST_KEYS."""
    return small(rows.select(*([key_col] if key_col else []), "key").distinct(), most)


def with_day_keys(rows: DataFrame, today_rows: DataFrame, key_col: str, most: int, key_is_unique: bool) -> DataFrame:
    """rows (key_col, key, ...) whose (key_col, key) is one of today_rows'. A semi-join on one long key probes
    Spark's hash table for longs (measured on 6.2M history fingerprints: 62M table rows 21.6 -> 8.7 s, 59M band
    rows 64.3 -> 17.0 s), so the key alone is matched first; when it does not identify key_col too (band keys
    are hashes, which may collide across bands) the few rows left are matched on both."""
    matching = rows.join(day_keys(today_rows, None, most), "key", "left_semi")
    if key_is_unique:
        return matching
    return matching.join(day_keys(today_rows, key_col, most), [key_col, "key"], "left_semi")


def per_fingerprint(history: DataFrame, fps: DataFrame, n_fps: int) -> DataFrame:
    """(fingerprint, h_cluster, h_kept_date, signature, kept_signature) per distinct history fingerprint in
    fps (n_fps of them, broadcast when few): the best cluster holding it (earliest kept page, then smallest
    cluster id), the signature of its best row and the signature of that cluster's kept page (null if the kept
    page has none). Only the rows of these fingerprints and of their clusters' kept pages are grouped, not the
    whole history.

    history: the rows of earlier runs (History.earlier), or rows already per fingerprint (h_cluster column:
    the Python API and the tests give them so), which are only filtered."""
    fps = small(fps.select("fingerprint"), n_fps)
    rows = history.join(fps, "fingerprint", "left_semi")
    if "h_cluster" in history.columns:
        return rows
    best = F.min(F.struct(F.col("kept_run_date"), F.col("cluster_id"), F.col("signature")))
    per_fp = rows.groupBy("fingerprint").agg(best.alias("b")).select(
        "fingerprint", F.col("b.cluster_id").alias("h_cluster"), F.col("b.kept_run_date").alias("h_kept_date"),
        F.col("b.signature").alias("signature"),
    )
    # the kept pages of these clusters only (at most one cluster per fingerprint)
    clusters = small(per_fp.select(F.col("h_cluster").alias("id")).distinct(), n_fps)
    kept = (history.where(~F.col("is_duplicate")).join(clusters, "id", "left_semi")
            .groupBy(F.col("id").alias("h_cluster")).agg(F.min("signature").alias("kept_signature")))
    return per_fp.join(kept, "h_cluster", "left")


def history_rows(history: DataFrame) -> DataFrame:
    """The fingerprint column of the history's rows (one row per page of an earlier run with a fingerprint, or
    per fingerprint when the history is given per fingerprint)."""
    return history.select("fingerprint")


def related_block_rows(history: DataFrame, today_rows: DataFrame, today_fps: DataFrame, plan, n_today: int) -> DataFrame:
    """Block rows (table, key, fingerprint) of the history fingerprints whose key is also a key of this run.

    A history fingerprint within k of one of this run's shares a key with it in every table where the two
    agree (pigeonhole), so its rows for all those tables are here and the pair is found and counted in its
    first shared table as usual. Keys held by history fingerprints alone are left out: pairs among earlier
    pages were settled by earlier runs. Only the fingerprint column of the history is read; a Bloom filter of
    this run's keys (key_filter.py) drops the history fingerprints without a shared key before anything is
    exploded or shuffled, then the few left are matched to the run's keys exactly and made distinct (a
    fingerprint may be on several rows of the history).
    today_fps: this run's distinct fingerprints, n_today of them (bounds its keys)."""
    from ..core.blocks import packed_key_shift
    from ..core.key_filter import table_filter_keys
    from ..spark.blocks import block_rows
    from ..spark.key_filter import build_key_bloom

    def keys_of(batch):
        return table_filter_keys(batch.column("fingerprint").to_numpy(zero_copy_only=False), plan)

    most = sum(min(n_today, 1 << bits) for bits in plan.key_bits())
    bloom = build_key_bloom(today_fps.select("fingerprint"), keys_of, most)
    passed = bloom.rows_that_may_match(history.select("fingerprint"), keys_of)
    rows = block_rows(passed, plan)
    packed = packed_key_shift(plan) is not None  # the key holds the table index
    return with_day_keys(rows, today_rows, "table", most, packed).distinct()


def related_band_rows(history: DataFrame, today_band_rows: DataFrame, today_fps: DataFrame, bands,
                      n_today: int, history_band_rows: DataFrame | None = None) -> DataFrame:
    """Band rows (band, key, fingerprint) of the history fingerprints that share a band key with this run's
    and are not this run's own (their band rows are in the run's already). A Bloom filter of this run's band
    keys drops the other history rows before anything is exploded or shuffled (key_filter.py), the exact key
    match comes next, so only the few matching rows meet the anti-join with this run's fingerprints and are
    made distinct (the rows of a fingerprint on several rows of the history; the signature of each is
    searched, and verification uses the fingerprint's best one, per_fingerprint). Columns in band_rows' order
    (the anti-join would put its `fingerprint` first), so that a union with the run's own rows is safe.
    history_band_rows: the history's (fingerprint, keys) rows when known (History.band_rows: read from the
    runs' band indexes); otherwise computed from the history's signatures."""
    from ..spark.bands import band_key_arrays, exploded_band_keys
    from ..spark.key_filter import build_key_bloom

    arrays = history_band_rows if history_band_rows is not None else band_key_arrays(history, bands)
    most = n_today * bands.bands
    bloom = build_key_bloom(today_band_rows.select("band", "key"), row_filter_keys, most)
    passed = exploded_band_keys(bloom.rows_that_may_match(arrays.select("fingerprint", "keys"), array_filter_keys))
    matching = with_day_keys(passed, today_band_rows, "band", most, False)
    return matching.join(today_fps, "fingerprint", "left_anti").select("band", "key", "fingerprint").distinct()


def attach_history(clusters: DataFrame, roots: DataFrame, history: DataFrame, run_date: str) -> DataFrame:
    """Re-point this run's clusters at history clusters.

    clusters: (id, fingerprint, cluster_id, is_duplicate, kept_fp) as resolved among this run's pages; roots:
    (node, root) of the components over this run's and the related history fingerprints; history:
    (fingerprint, h_cluster, h_kept_date) of the related history fingerprints. A page whose component holds history
    fingerprints becomes a duplicate of the best history cluster there (earliest kept page, then smallest
    cluster id); the others keep their own resolution. Adds kept_run_date; kept_fp (the kept page's
    fingerprint, clusters.cluster_shape) becomes null where the kept page is an earlier run's."""

    def with_comp(df: DataFrame) -> DataFrame:
        return df.join(roots, df["fingerprint"] == roots["node"], "left").withColumn(
            "comp", F.coalesce("root", "fingerprint")
        ).drop("node", "root")

    best = (
        with_comp(history)
        .groupBy("comp")
        .agg(F.min(F.struct("h_kept_date", "h_cluster")).alias("b"))
        .select("comp", F.col("b.h_cluster").alias("h_cluster"), F.col("b.h_kept_date").alias("h_kept_date"))
    )
    id_type = dict(clusters.dtypes)["id"]
    matched = F.col("h_cluster").isNotNull()
    return with_comp(clusters).join(best, "comp", "left").select(
        "id",
        "fingerprint",
        F.when(matched, F.col("h_cluster").cast(id_type)).otherwise(F.col("cluster_id")).alias("cluster_id"),
        (matched | F.col("is_duplicate")).alias("is_duplicate"),
        F.when(matched, F.col("h_kept_date")).otherwise(F.lit(run_date)).alias("kept_run_date"),
        F.when(~matched, F.col("kept_fp")).alias("kept_fp"),
    )
