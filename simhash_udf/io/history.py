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

Crash safety. Each date has a manifest inside its directory (history_manifest.py: its data files with their
sizes, its row count, fingerprint version and id type, the token of the run that wrote it), written into the
staging directory before the publish, and a record HISTORY/_manifests/run_date=D.json (the same without the
file list), written after the rows are in place. The publish (HISTORY_COMMIT_STEPS) is:
1. history_move_old_aside: an earlier attempt's run_date=D is renamed to _staging-TOKEN-replaced-D (the date in
   the name, the run's owner file _staging-TOKEN.owner beside it);
2. history_move_new_in: the staging directory is renamed to run_date=D (the rows and their manifest at once);
3. history_record: the record is written (a temporary file renamed over the earlier attempt's record);
4. history_pin: a first run's pins;
5. history_drop_old: the earlier attempt's rows are deleted, now that the new ones are in place and recorded.
A run killed at any point leaves either the old rows aside with no run_date=D (1), or the new rows in place
with their own manifest but not (yet) their record or pins (2-4). The next run of any date, before it reads
anything, settles what dead runs left (recover): an earlier attempt's rows aside are moved back to run_date=D
when there is no run_date=D, and removed only when there is one; a date whose own manifest is complete but not
recorded (a publish killed after moving the rows in) has its publish finished (record, pins). Finishing rather
than undoing: the rows are a complete run of that date against the same earlier dates, what a re-run gives
again (the run's output was not committed, so that day is re-run anyway), and a later day is better compared
with them than with no rows of that date. Then every date is checked against its record (cheap: one listing
summary per date): a date whose record exists but whose directory is gone, a part file missing, shorter or
longer, a file no run wrote, or a missing _fingerprint_version while the history holds dates stop the run
(exit 2) naming the date and what to do, when the date is one this run reads; a later date's damage is a
warning (the run does not read it), and so is its own date's (the run replaces it).

A history written before manifests: a date without its record and without a manifest of its own is read as
before, unchecked, with one warning naming how many (re-running such a date records it). A pin is never written
by a run whose history holds dates without it (a deleted pin would otherwise be re-pinned by the next run, of
whatever tokenizer), except from the record of a first run killed before its pins.
"""
from __future__ import annotations

import datetime as dt
import logging
import re
import time
from functools import reduce

from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..errors import DedupError
from ..spark.bands import band_key_arrays
from .hadoop_fs import HadoopFS, java_message, relation
from .history_manifest import (
    MANIFEST,
    RECORDS,
    Manifest,
    content_summary,
    data_files,
    differences,
    new_manifest,
    read_records,
    record_path,
    summary_matches,
    write_record,
)
from .ownership import Owner, OwnerFile, judge, new_token
from .paths import escape_glob
from .write import exit_after_env

log = logging.getLogger("simhash_dedup")
VERSION_FILE = "_fingerprint_version"
REPLACED = "-replaced"  # an earlier attempt's partition moved aside by publish: STAGING-replaced-D
ID_TYPE_FILE = "_id_type"
# The steps of History.publish, in order (a step that has nothing to do is skipped: a first run of a date moves
# nothing aside and drops nothing); a test ends the process right after each one (write.exit_after_env).
HISTORY_COMMIT_STEPS = ("history_begin", "history_move_old_aside", "history_move_new_in", "history_record",
                        "history_pin", "history_drop_old")
# The steps of History.remove_date (an --allow-empty re-run of a date whose input is now empty).
HISTORY_REMOVE_STEPS = ("history_remove_move_aside", "history_remove_record", "history_remove_drop")
# _staging-TOKEN-replaced-D, or _staging-TOKEN-replaced (left by a version that did not name the date)
_ASIDE = re.compile(r"(?P<staging>_staging-.+?)-replaced(?:-(?P<date>\d{4}-\d{2}-\d{2}))?")
_FAILED_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?(?:\s|$)")
_JAVA_CLASS = re.compile(r"^(?:[\w$]+\.)+[\w$]+(?:Exception|Error): ")  # "java.lang.RuntimeException: "
_SHOWN = 5  # problems named per date in a message


def check_run_date(run_date: str) -> str:
    try:
        return dt.date.fromisoformat(run_date).isoformat()
    except ValueError:
        raise DedupError(f"--run-date {run_date!r} is not a date: use YYYY-MM-DD (e.g. Airflow's {{{{ ds }}}})") from None


class History:
    """The history directory on any Hadoop file system. spark may be None when fs is given (a bare JVM: the
    publish and remove_date alone, as the crash-safety tests run them)."""

    def __init__(self, spark: SparkSession | None, path: str, run_date: str, *, fs: HadoopFS | None = None,
                 token: str | None = None):
        self.spark = spark
        self.path = path.rstrip("/")
        self.run_date = check_run_date(run_date)
        self.hfs = fs or HadoopFS.for_spark(spark, self.path)
        self.fs = self.hfs.fs  # Hadoop's FileSystem: the publish's renames
        self._Path = self.hfs._jvm.org.apache.hadoop.fs.Path
        self.token = token or new_token()
        self.staging = f"{self.path}/_staging-{self.token}"  # "_": hidden from Spark's readers
        self._staging_owner = None  # ownership.OwnerFile of the staging directory while it exists
        self.partition = f"{self.path}/run_date={self.run_date}"
        self._stale_seconds = 600.0  # of owner files (--lock-stale-minutes), set by remove_stale_staging
        self._live_stagings: set[str] = set()  # staging names of live runs (remove_stale_staging)
        self._live_asides: dict[str, str] = {}  # date -> a live run's aside directory holding its earlier rows
        self._dead_tokens: set[str] = set()  # of the dead runs whose owner files remove_stale_staging removed
        self.repairs: list[str] = []  # what recover did, in words (report.json: history.repaired)
        self.unchecked: list[str] = []  # dates without any manifest (written before them), read unchecked

    def run_dates(self) -> list[str]:
        names = [name for name, is_dir in self.hfs.list(self.path) if is_dir]
        return sorted(n.split("=", 1)[1] for n in names if n.startswith("run_date="))

    def _read_pin(self, name: str) -> str | None:
        data = self.hfs.read(f"{self.path}/{name}")
        return None if data is None else data.decode("utf-8").strip()

    def _write_pin(self, name: str, value: str) -> bool:
        """Write a pin unless it is there (pins are never changed); returns whether it was written."""
        if self._read_pin(name) is not None:
            return False
        self.hfs.write(f"{self.path}/{name}", (value + "\n").encode("utf-8"))
        return True

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
        """This run's fingerprint version is the history's. Without the pin, the version its dates' records
        name is compared (a history without either is checked again once dead runs are settled: recover)."""
        stored = self.stored_version()
        if stored is None:
            recorded = {r.fingerprint_version for r in read_records(self.hfs, self.path).values() if r is not None}
            stored = recorded.pop() if len(recorded) == 1 else None
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
        (spark.history_search.per_fingerprint). Also the dates read and the dates skipped (this date and later)."""
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
        the history, with the band search on (bands: SignatureBands) their band index, and last their manifest
        (the row count read from the written files' footers: one small Spark job)."""
        self.claim_staging()
        rows.write.parquet(self.staging)
        staged = self.spark.read.parquet(escape_glob(self.staging))  # the rows as written, not their lineage again
        index = None
        if bands is not None and bands.bands > 0:
            index = band_index_name(bands)
            band_index(staged, bands).write.parquet(f"{self.staging}/{index}")
        # the pins are written when the rows are published, from the manifest: a first run that fails after
        # staging must not pin a history that holds none of its rows
        manifest = new_manifest(self.hfs, self.staging, self.run_date, self.token, staged.count(), version,
                                rows.schema["id"].dataType.simpleString(), index)
        self.hfs.write(f"{self.staging}/{MANIFEST}", manifest.raw)

    def publish(self, after_step=exit_after_env) -> None:
        """Move the staged rows to run_date=D (the steps: module docstring, HISTORY_COMMIT_STEPS). The
        partition of an earlier attempt of the same date is moved aside first and removed only once the new
        rows are in place and recorded; if they cannot be moved in, it is put back, so a failed publish never
        leaves the date without rows. A kill at any step is settled by the next run (recover).
        `after_step(name)` runs after each step, for tests."""
        manifest = Manifest.parse(self.hfs.read(f"{self.staging}/{MANIFEST}"))
        if manifest is None:
            raise DedupError(f"{self.staging} has no readable {MANIFEST}: this run's rows were not staged completely; "
                             "run it again")
        after_step("history_begin")
        target, aside = self._Path(self.partition), self._Path(self._aside())
        replaced = self._move_earlier_attempt_aside()
        if replaced:
            after_step("history_move_old_aside")
        if self.fs.exists(target) or not self.fs.rename(self._Path(self.staging), target):
            # (a partition there again: another run of the same date published meanwhile; a rename onto it
            # would nest this run's rows inside it)
            if replaced and not self.fs.exists(target) and not self.fs.rename(aside, target):
                log.error("could not move the earlier attempt's rows %s back to %s", aside.toString(), self.partition)
            raise DedupError(f"could not move {self.staging} to {self.partition}: check permissions on the history, "
                             "and that no other run of the same --run-date writes into it")
        after_step("history_move_new_in")
        self._record(manifest.record())
        after_step("history_record")
        self._write_pins(manifest)  # a first run's (kept as they are afterwards)
        after_step("history_pin")
        if replaced:
            try:
                self.fs.delete(aside, True)
            except Exception as exc:  # the new rows are in place; the next run removes the old ones
                log.warning("could not remove the replaced rows %s: %s", aside.toString(), java_message(exc))
            after_step("history_drop_old")
        self._release_staging()

    def _record(self, record: Manifest) -> None:
        try:
            write_record(self.hfs, self.path, record, self.token)
        except (Py4JJavaError, OSError) as exc:
            why = java_message(exc) if isinstance(exc, Py4JJavaError) else str(exc)
            raise DedupError(f"could not write the record of run_date={record.run_date} into {self.path}/{RECORDS} "
                             f"({why}): check permissions on the history (the next run finishes this one's publish)"
                             ) from None

    def _write_pins(self, manifest: Manifest) -> list[str]:
        """The pins from a date's manifest, those not there yet; returns the ones written."""
        pins = ((VERSION_FILE, manifest.fingerprint_version), (ID_TYPE_FILE, manifest.id_type))
        return [name for name, value in pins if self._write_pin(name, value)]

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
        found = self.hfs.nearest_existing(self.path)
        if found is not None and not found[1]:
            where = "is a file" if found[0] == self.path else f"cannot be created: {found[0]} is a file"
            raise DedupError(f"--history {self.path} {where}, not a directory: choose a directory for the history "
                             "(the job creates it)")

    def claim_staging(self) -> None:
        """Create the owner file of this run's staging directory (once): done at the start of a run, so that a
        history this run cannot write into stops it before the computation, with a message naming --history."""
        if self._staging_owner is not None:
            return
        owner = OwnerFile(self.hfs, f"{self.staging}.owner", Owner.this_process(self.token, self.staging),
                          self._stale_seconds)
        try:
            owner.create()
        except (Py4JJavaError, OSError) as exc:
            why = java_message(exc) if isinstance(exc, Py4JJavaError) else str(exc)
            raise DedupError(f"cannot write into --history {self.path} ({why}): check the path and its permissions") from None
        self._staging_owner = owner

    def remove_date(self, after_step=exit_after_env) -> bool:
        """Remove this date's partition (an earlier attempt's rows) and its record, as publish replaces it: for
        a re-run of the date whose input turned out empty (--allow-empty), so that the history holds what the
        date's output holds. The rows are moved aside first and deleted last, so that a kill in between leaves
        them where the next run restores them (HISTORY_REMOVE_STEPS). Returns whether there was a partition."""
        if not self._move_earlier_attempt_aside():
            self.hfs.delete(record_path(self.path, self.run_date))  # the record of a date that was gone
            return False
        after_step("history_remove_move_aside")
        self.hfs.delete(record_path(self.path, self.run_date))
        after_step("history_remove_record")
        self.fs.delete(self._Path(self._aside()), True)
        after_step("history_remove_drop")
        return True

    def _aside(self) -> str:
        """Where an earlier attempt's partition is moved aside: the staging directory's name + REPLACED + the
        date (so that the next run knows where to put it back)."""
        return f"{self.staging}{REPLACED}-{self.run_date}"

    def _move_earlier_attempt_aside(self) -> bool:
        """Rename this date's partition, if there is one, aside (_aside; owned by this run's owner file);
        returns whether there was one."""
        target = self._Path(self.partition)
        if not self.fs.exists(target):
            return False
        if not self.fs.rename(target, self._Path(self._aside())):
            raise DedupError(f"could not move the earlier attempt's {self.partition} aside: check permissions on the "
                             "history")
        return True

    def _release_staging(self) -> None:
        if self._staging_owner is not None:
            self._staging_owner.release()
            self._staging_owner = None

    # --- what dead runs left, and the dates checked against their records ------------------------------

    def recover(self, stale_seconds: float, version: str) -> None:
        """Before a run reads or writes the history (holding its output's lock): settle what dead runs left
        (remove_stale_staging), check every date against its record (check_dates), and the fingerprint version
        again (a pin written by finishing a dead first run's publish). DedupError when a date this run reads
        is damaged or gone, or the pin is missing."""
        self.remove_stale_staging(stale_seconds)
        self.check_dates()
        self.check_version(version)

    def remove_stale_staging(self, stale_seconds: float) -> list[str]:
        """Settle the `_staging-*` entries of dead runs: no owner file (a run of a version before owner files, or
        one killed between removing its directory and its owner file), or an owner that is dead
        (ownership.stale_reason). A staging directory is removed; an earlier attempt's partition that a dead
        run moved aside is moved back to its date when the date has no partition (a publish killed between
        its two renames), and removed when it has one; then the dead runs' owner files. Returns the paths
        removed."""
        self._stale_seconds = stale_seconds
        entries = dict(self.hfs.list(self.path))
        dead = {}  # staging name -> whether its run is dead (judged once)

        def is_dead(staging: str) -> bool:
            if staging not in dead:
                owner_path = f"{self.path}/{staging}.owner"
                owner, why = judge(self.hfs, owner_path, stale_seconds) if f"{staging}.owner" in entries else (None, "")
                dead[staging] = not (why is None and (owner is not None or self.hfs.exists(owner_path)))
            return dead[staging]

        removed = []
        for name in sorted(entries):
            if not name.startswith("_staging-") or name.endswith(".owner"):
                continue
            aside = _ASIDE.fullmatch(name)
            staging = aside["staging"] if aside else name
            if not is_dead(staging):
                self._live_stagings.add(staging)
                if aside and aside["date"]:
                    self._live_asides[aside["date"]] = name
                continue
            if aside is None or self._settle_aside(name, aside["date"]):
                self.hfs.delete(f"{self.path}/{name}")
                removed.append(f"{self.path}/{name}")
        for name in entries:  # the owner files of dead runs, once what they owned is settled
            if not (name.startswith("_staging-") and name.endswith(".owner")):
                continue
            if is_dead(name[: -len(".owner")]):
                self.hfs.delete(f"{self.path}/{name}")
                removed.append(f"{self.path}/{name}")
                self._dead_tokens.add(name[len("_staging-"): -len(".owner")])
            else:
                self._live_stagings.add(name[: -len(".owner")])
        removed += self._remove_stale_records(stale_seconds)
        if removed:
            log.warning("removed staging directories of dead runs from the history: %s", ", ".join(removed))
        return removed

    def _settle_aside(self, name: str, date: str | None) -> bool:
        """A dead run's earlier attempt of a date moved aside: moved back to the date when the date has no
        partition (False: nothing to remove); True when it is to be removed (the date has its partition: the
        dead run's new rows, or a later run's). An aside named without its date (a run before dates were in the
        name) has its date read from its rows (the kept pages' kept_run_date is their run's date); when that
        cannot be told it is kept, with a warning."""
        path = f"{self.path}/{name}"
        date = date or self._date_of_rows(path)
        if date is None:
            log.warning("history %s: cannot tell which date the rows in %s (moved aside by a run that died) belong "
                        "to: if a run_date=YYYY-MM-DD is missing from the history, move them back there by hand; "
                        "else remove them", self.path, path)
            return False
        partition = f"{self.path}/run_date={date}"
        if self.hfs.exists(partition):
            return True
        if not self.hfs.rename(path, partition):
            log.error("could not move the rows of run_date=%s back from %s", date, path)
            return False
        self.repairs.append(f"run_date={date} restored from {name}: a run killed while replacing it had moved it aside")
        log.warning("history %s: %s", self.path, self.repairs[-1])
        return False

    def _date_of_rows(self, path: str) -> str | None:
        """The run date of a partition's rows: the kept_run_date of its kept pages (None when it has none, or
        cannot be read)."""
        if self.spark is None:
            return None
        try:
            found = (self.spark.read.parquet(escape_glob(path)).where(~F.col("is_duplicate"))
                     .agg(F.max("kept_run_date")).first()[0])
        except Exception as exc:  # unreadable rows: nothing to restore by their date
            log.debug("reading the run date of %s: %s", path, exc)
            return None
        return str(found) if found else None

    def _remove_stale_records(self, stale_seconds: float) -> list[str]:
        """Temporary record files (write_record) older than stale_seconds: left by a run killed while writing."""
        removed = []
        folder = f"{self.path}/{RECORDS}"
        for name, _ in self.hfs.list(folder):
            status = self.hfs.status(f"{folder}/{name}") if name.startswith("_tmp-") else None
            if status is not None and time.time() - status[1] / 1000 > stale_seconds:
                self.hfs.delete(f"{folder}/{name}")
                removed.append(f"{folder}/{name}")
        return removed

    def check_dates(self) -> None:
        """Every date against its record (a missing directory; missing, shorter, longer or foreign files) and
        the pin; publishes that dead runs left unfinished are finished (recover). A problem in a date this run
        reads (before its own) is a DedupError naming the date and what to do; in a later date or its own, a
        warning."""
        records = read_records(self.hfs, self.path)
        partitions = set(self.run_dates())
        problems: dict[str, list[str]] = {}
        for date in sorted(partitions | set(records)):
            found = self._check_date(date, records.get(date)) if date in partitions else [self._gone(date, records[date])]
            if found:
                problems[date] = found
        for record in records.values():  # a first run killed between its record and its pins
            written = self._write_pins(record) if record is not None and record.token in self._dead_tokens else []
            if written:
                self.repairs.append(f"{' and '.join(written)} written from the record of run_date={record.run_date}: "
                                    "its run was killed before it pinned them")
        pin = self.stored_version()
        if pin is None and (partitions or records):
            raise DedupError(self._missing_pin(sorted(partitions | set(records)), records))
        for date, record in sorted(records.items()):
            if record is not None and record.fingerprint_version != pin:
                problems.setdefault(date, []).append(
                    f"its rows have fingerprint version {record.fingerprint_version!r}, the history's pin {pin!r}")
        if self.unchecked:
            log.warning("history %s: %d dates (%s) have no manifest (written by a version before manifests): they "
                        "are read without checking their files; re-running such a date records it", self.path,
                        len(self.unchecked), _dates(self.unchecked))
        self._report(problems)

    def _check_date(self, date: str, record: Manifest | None) -> list[str]:
        """A date's problems ([] when it is complete). Fast path: the directory's file count and bytes are the
        record's. Otherwise its files are listed and compared with its manifest: a complete date whose manifest
        is not its record's (another run's token, or no record) is a publish killed after moving its rows in,
        finished here unless its run is alive; a date with neither is a history's from before manifests."""
        directory = f"{self.path}/run_date={date}"
        found = content_summary(self.hfs, directory)
        if record is not None and summary_matches(record, found):
            return []
        own = Manifest.parse(self.hfs.read(f"{directory}/{MANIFEST}"))
        if own is None and record is None:
            self.unchecked.append(date)
            return []
        if own is None:
            return [f"({record.describe()} when written) its directory holds {found[0]} files of {found[1]} bytes where "
                    f"the run left {record.summary[0]} of {record.summary[1]}, and its {MANIFEST}, which names the "
                    "files, is gone"]
        index_removed = bool(own.band_index) and not self.hfs.exists(f"{directory}/{own.band_index}")
        wrong = differences(own, data_files(self.hfs, directory), index_removed)
        if wrong:
            return [f"({own.describe()} when written) " + "; ".join(wrong[:_SHOWN])
                    + (f"; and {len(wrong) - _SHOWN} more" if len(wrong) > _SHOWN else "")]
        if (record is None or record.token != own.token) and f"_staging-{own.token}" not in self._live_stagings:
            write_record(self.hfs, self.path, own.record(), self.token)
            self._write_pins(own)
            self.repairs.append(f"run_date={date}: the publish of a run killed after moving its rows in was finished "
                                "(its record and pins written)")
            log.warning("history %s: %s", self.path, self.repairs[-1])
        return []

    def _gone(self, date: str, record: Manifest | None) -> str:
        if date in self._live_asides:
            return (f"is being replaced by a run that is still running (its earlier rows are in "
                    f"{self._live_asides[date]}): run again once that run has finished")
        listed = f" ({record.describe()})" if record is not None else ""
        return (f"is gone: its record {RECORDS}/run_date={date}.json lists the date{listed}, but there is no "
                f"run_date={date} directory, and no run's staging directory holds its rows")

    def _missing_pin(self, dates: list[str], records: dict[str, Manifest | None]) -> str:
        versions = sorted({r.fingerprint_version for r in records.values() if r is not None})
        if len(versions) == 1:
            how = f"its dates' manifests record version {versions[0]!r}: write that line into {self.path}/{VERSION_FILE}"
        else:
            how = (f"write the fingerprint_version named in the report.json of the runs that wrote these dates into "
                   f"{self.path}/{VERSION_FILE}")
        return (f"history {self.path} holds {len(dates)} dates ({_dates(dates)}) but no {VERSION_FILE} file (deleted?): "
                "without it this run cannot tell whether its fingerprints are comparable with theirs, and a run "
                f"would pin its own; restore the file ({how}), or start a new --history directory")

    def _report(self, problems: dict[str, list[str]]) -> None:
        """Warnings for the dates this run does not read, a DedupError for the ones it reads."""
        for date, found in problems.items():
            if date >= self.run_date:
                why = "this run replaces it" if date == self.run_date else "this run does not read it, but later runs will"
                log.warning("history %s: run_date=%s %s (%s): re-run --run-date %s", self.path, date,
                            "; ".join(found), why, date)
        read = {d: p for d, p in problems.items() if d < self.run_date}
        if read:
            named = "; ".join(f"run_date={d}: {'; '.join(p)}" for d, p in sorted(read.items()))
            first = min(read)
            raise DedupError(
                f"history {self.path} is damaged in dates this run reads: {named}. Re-run each date named "
                f"(--run-date {first} with that day's input, and so on: a run reads only the dates before its own, "
                "so later dates stay valid), or restore what is missing from a backup; a date that cannot be "
                f"recovered is dropped from the history by removing its record ({self.path}/{RECORDS}/"
                f"run_date={first}.json) and its directory")

    def read_error(self, exc: BaseException) -> DedupError | None:
        """A Spark failure to read a file of this history (a damaged Parquet part, of a date without manifest or
        changed in place) as a clear error naming the history, the date and the file; None for any other."""
        if isinstance(exc, DedupError):
            return None
        text = str(exc)
        match = _FAILED_FILE.search(text)
        if match is None:
            return None
        home, failed = self.hfs.qualified(self.path), self.hfs.qualified(match.group(1))
        if relation(home, failed) != "contains":
            return None
        name = failed[len(home):].lstrip("/")
        date = re.search(r"run_date=([0-9-]+)", name)
        cause = next((ln.split(": ", 1)[-1] for ln in text.splitlines() if ln.startswith("Caused by:")), "")
        cause = _JAVA_CLASS.sub("", cause).replace(match.group(1), "the file")
        cause = _shortened(cause or "corrupt or not Parquet")
        which, rerun = (f"run_date={date.group(1)}", f"--run-date {date.group(1)}") if date else ("a date", "that date")
        return DedupError(f"history {self.path}: the file {name} cannot be read ({cause}): {which} of the history is "
                          f"damaged: re-run {rerun} with that day's input to write it again, or restore the file from a "
                          "backup")


def _dates(dates: list[str]) -> str:
    return ", ".join(dates) if len(dates) <= 3 else f"{dates[0]}, {dates[1]}, ..., {dates[-1]}"


def _shortened(text: str, most: int = 240) -> str:
    """text cut at a word boundary to at most `most` characters (" ..." marking the cut)."""
    text = " ".join(text.split())
    if len(text) <= most:
        return text
    return text[: text.rfind(" ", 0, most)].rstrip(",;:") + " ..."


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
    return band_key_arrays(rows, bands).distinct()
