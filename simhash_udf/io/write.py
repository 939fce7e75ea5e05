"""Spark stage 8: write clusters/, kept/ and report.json into a staging directory beside DIR, then replace
DIR with it so that DIR never looks finished (has _SUCCESS) unless it holds one complete run.

Around DIR (in its parent directory), each named after DIR:
- `DIR.__lock`: the owner file of the run writing DIR (ownership.py); a second run onto DIR is refused.
- `DIR.__staging-TOKEN`: the run's new output while it is written.
- `DIR.__old-TOKEN`: the previous output while it is being replaced.
Whatever a dead run (a kill, a lost machine) left of these is removed by the next run onto DIR, which
first takes over the dead run's lock; a live run's are never touched (it holds the lock). DIR is the directory
--output names with symbolic links resolved, so all of these lie beside a link's target, whatever the spelling.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import re

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from ..errors import DedupError
from .hadoop_fs import HadoopFS, glob_root, java_message, qualified_path, relation
from .ownership import Owner, OwnerFile, acquire, new_token

log = logging.getLogger("simhash_dedup")

# What only this job's output holds: a DIR with one of these may be replaced, if it holds nothing else than
# what a run of this job writes.
OWN_ENTRIES = frozenset({"report.json", "clusters", "kept", "related"})
# Every entry a run of this job writes at the top of DIR (report_plots.PLOTS are the pictures). Replacing DIR
# deletes all of its entries at every depth, so a DIR that also holds anything else (a file a downstream task or a
# person put there, at the top or inside clusters/ or kept/) is refused even with --overwrite. Hadoop's checksum
# files of these (`.report.json.crc`) count as theirs.
LAYOUT_ENTRIES = OWN_ENTRIES | frozenset({"_SUCCESS", "report.html", "cluster_sizes.png", "pair_distances.png",
                                          "pair_similarity.png", "duplicates_to_kept.png"})
# The directories Spark writes into (DataFrameWriter.parquet), and the files it leaves there: part files, its
# committer's markers (_SUCCESS; _started_*/_committed_* of transactional committers) and checksum files.
DATA_DIRS = frozenset({"clusters", "kept", "related"})
SPARK_FILE = re.compile(r"part-.*\.parquet|_SUCCESS|_started_.*|_committed_.*")
# DIR/_SUCCESS holds the list of the files the run wrote (JSON: this key and the list, paths relative to DIR;
# S3A's committers write a JSON _SUCCESS the same way). A later --overwrite replaces such a DIR only while every
# file in it is listed, so a file someone added is found even when it is named like a part file (a downstream
# task appending to kept/). A DIR without one (an unfinished run's, one written by an older version) is judged
# by the names above.
MANIFEST_KEY = "simhash_dedup_files"


def _checksummed(name: str) -> str | None:
    """The file a Hadoop checksum file (`.NAME.crc`) belongs to; None for any other name."""
    return name[1:-4] if name.startswith(".") and name.endswith(".crc") and len(name) > 5 else None


def written_by_this_job(path: str, manifest: frozenset[str] | None = None) -> bool:
    """Whether `path` (relative to DIR; a directory that was not listed ends with `/`) is what a run of this job
    writes: listed in the manifest of DIR's _SUCCESS when there is one, else named as the job's layout names its
    entries (LAYOUT_ENTRIES at the top, Spark's files directly inside DATA_DIRS). A checksum file counts as its
    file's."""
    if path.endswith("/"):
        return False  # a directory the job does not write into
    folder, _, name = path.rpartition("/")
    name = _checksummed(name) or name
    path = f"{folder}/{name}" if folder else name
    if path == "_SUCCESS":
        return True
    if manifest is not None:
        return path in manifest
    if not folder:
        return name in LAYOUT_ENTRIES
    return folder in DATA_DIRS and bool(SPARK_FILE.fullmatch(name))


def foreign_entries(paths: list[str], manifest: frozenset[str] | None = None) -> list[str]:
    """The paths (relative to DIR) that a run of this job does not write (written_by_this_job)."""
    return [p for p in paths if not written_by_this_job(p, manifest)]


def read_manifest(data: bytes | None) -> frozenset[str] | None:
    """The files listed in a _SUCCESS this job wrote; None for an empty or another program's _SUCCESS."""
    try:
        found = json.loads((data or b"").decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    files = found.get(MANIFEST_KEY) if isinstance(found, dict) else None
    return frozenset(f for f in files if isinstance(f, str)) if isinstance(files, list) else None


def manifest_bytes(files: list[str]) -> bytes:
    return (json.dumps({MANIFEST_KEY: sorted(files)}, indent=0) + "\n").encode("utf-8")


# The steps of OutputDir.commit, in order; a test ends the process right after each one.
COMMIT_STEPS = ("begin", "unmark_old", "move_old_aside", "move_new_in", "mark_new", "drop_old")
EXIT_AFTER_ENV = "SIMHASH_DEDUP_TEST_EXIT_AFTER"
EXIT_AFTER_CODE = 86


def exit_after_env(step: str) -> None:
    """Crash-safety tests: with SIMHASH_DEDUP_TEST_EXIT_AFTER=<step> the process ends right after that step
    of the commit the way a kill ends it (os._exit: no clean-up, no `finally`)."""
    if os.environ.get(EXIT_AFTER_ENV) == step:
        os._exit(EXIT_AFTER_CODE)


def output_errors(method):
    """A file-system error while checking or locking the output (no connector for its scheme, no permission
    to list or create) becomes a DedupError that names --output, not a Java traceback."""

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Py4JJavaError as exc:
            raise DedupError(f"cannot use --output {self.path} ({java_message(exc)}): check the path and its "
                             "permissions, or (another scheme) that its file system's connector is on the classpath, "
                             "e.g. s3a:// needs hadoop-aws") from None

    return checked


class OutputDir:
    """The job's output directory on any Hadoop file system (local, HDFS, S3A, ...)."""

    @output_errors
    def __init__(self, spark: SparkSession | None, path: str, *, fs: HadoopFS | None = None, token: str | None = None):
        self.given = self.path = self.shown = path.rstrip("/") or path
        self.fs = fs or HadoopFS.for_spark(spark, self.path)
        # DIR is what the path names, not how it is spelled: through a symbolic link (to DIR or to a folder
        # above it) the lock, the staging directory and the replacement are those of the link's target, so two
        # runs onto one directory under two names share one lock, and a link to DIR stays a link to the new output.
        self.path, through_link = self.fs.resolve(self.given)
        if through_link:
            self.shown = f"{self.given} (through a symbolic link: {self.path})"
            if fs is None and spark is not None:  # onto another file system (a viewfs mount's): resolved there too
                self.fs = HadoopFS.for_spark(spark, self.path)
                self.path = self.fs.resolve(self.path)[0]
        self.token = token or new_token()
        self.staging = f"{self.path}.__staging-{self.token}"
        self.old = f"{self.path}.__old-{self.token}"
        self.lock_path = f"{self.path}.__lock"
        self.lock: OwnerFile | None = None

    # --- checks before anything is written -------------------------------------------------------------

    @output_errors
    def refuse_overlap(self, input_path: str, history: str = "") -> None:
        """Refuse an output that is, contains or lies inside the input or the history, compared as the file
        systems resolve them (scheme, relative paths, `.`/`..`, trailing `/`, symbolic links on local disks),
        with or without --overwrite: replacing DIR deletes everything under it."""
        jvm, conf = self.fs._jvm, self.fs._conf
        out = self.fs.qualified(self.path)
        crawl = input_root(jvm, conf, input_path)
        guarded = [("input", "--input", crawl, input_path)]
        if history:
            history_q = qualified_path(jvm, conf, history)
            guarded.append(("history", "--history", history_q, history))
        for what, option, other, given in guarded:
            how = relation(out, other)
            if how is None:
                continue
            why = {
                "equals": f"is the {what} {given}",
                "contains": f"contains the {what} {given} (replacing the output would delete it)",
                "inside": f"lies inside the {what} {given} (later runs would read or replace it as part of the {what})",
            }[how]
            raise DedupError(f"--output {self.given} {why}: choose an --output outside the {what} (for example a "
                             f"sibling directory), or change {option} (resolved: output {out}, {what} {other})")
        how = relation(history_q, crawl) if history else None
        if how is not None:  # the input's reader would read the history's rows as pages, a publish replace input files
            why = {"equals": "is", "contains": "contains", "inside": "lies inside"}[how]
            raise DedupError(f"--history {history} {why} the input {input_path}: choose a --history outside the "
                             f"input (for example a sibling directory) (resolved: history {history_q}, input {crawl})")

    def is_finished(self) -> bool:
        return self.fs.exists(self.path + "/_SUCCESS")

    @output_errors
    def check_writable(self, overwrite: bool) -> None:
        """Refuse what this run must not replace: a file, another program's files at any depth (even with
        --overwrite), a finished or unfinished run of this job without --overwrite; an output under a file.
        Nothing is written or deleted here."""
        status = self.fs.status(self.path)
        if status is None:
            self._check_parent()
            return
        if not status[0]:
            raise DedupError(f"output {self.shown} is a file, not a directory: choose another --output (a directory "
                             "the job creates)")
        top = self.fs.list(self.path)
        if not top:
            return
        manifest = read_manifest(self.fs.read(self.path + "/_SUCCESS")) if ("_SUCCESS", False) in top else None
        paths = sorted(self.entries(top, manifest))
        foreign = foreign_entries(paths, manifest)
        ours = any(p.split("/", 1)[0] in OWN_ENTRIES for p in paths if p not in foreign)
        if ours and foreign:
            raise DedupError(f"output {self.shown} holds a run of this job and also {_shown(foreign)}, which this job "
                             "did not write and replacing the output would delete: move those files away, or choose "
                             "another --output (--overwrite replaces only this job's own output, never other files)")
        if ours and ("_SUCCESS", False) in top:
            if not overwrite:
                raise DedupError(f"output {self.shown} already holds a finished run (_SUCCESS): pass --overwrite to "
                                 "replace it, or choose another --output")
        elif ours:
            if not overwrite:
                raise DedupError(f"output {self.shown} holds an unfinished run of this job (no _SUCCESS: a failed or "
                                 "killed run): pass --overwrite to replace it, or choose another --output")
        elif paths:
            raise DedupError(f"output {self.shown} exists and is not a finished run of this job: it holds "
                             f"{_shown(paths)}, which this job did not write; choose another --output, or move those "
                             "files away (--overwrite replaces only this job's own output, never other files)")

    def entries(self, top: list[tuple[str, bool]], manifest: frozenset[str] | None) -> list[str]:
        """DIR's files at every depth, relative to DIR (`top`: DIR's own listing). Only the directories a run of
        this job writes into are listed (those of the manifest's files, else DATA_DIRS): one listing each, however
        many part files they hold. Any other directory is one entry, `name/`, foreign as a whole (not walked)."""
        if manifest is None:
            into = DATA_DIRS
        else:
            into = {f.rsplit("/", i)[0] for f in manifest for i in range(1, f.count("/") + 1)}
        found, folders = [], [("", top)]
        while folders:
            folder, listing = folders.pop()
            for name, is_dir in listing:
                path = f"{folder}/{name}" if folder else name
                if is_dir and path in into:
                    folders.append((path, self.fs.list(f"{self.path}/{path}")))
                else:
                    found.append(path + "/" if is_dir else path)
        return found

    def _check_parent(self) -> None:
        """DIR does not exist: the nearest existing ancestor must be a directory (not a regular file)."""
        found = self.fs.nearest_existing(self.fs.parent(self.path))
        if found is not None and not found[1]:
            raise DedupError(f"output {self.shown} cannot be created: {found[0]} is a file, not a directory; "
                             "choose an --output under a directory")

    # --- ownership ---------------------------------------------------------------------------------------

    @output_errors
    def acquire(self, stale_seconds: float) -> None:
        """Take the output's lock (DedupError naming the run holding it), then remove what dead runs left."""
        self.lock = acquire(self.fs, self.lock_path, Owner.this_process(self.token, self.path), stale_seconds,
                            f"output {self.shown}")
        self.remove_stale()

    def remove_stale(self) -> list[str]:
        """Remove the staging and old directories of dead runs beside DIR (only while holding the lock: every
        live run onto DIR holds it, so all others' are dead). Returns what was removed."""
        parent = self.fs.parent(self.path)
        if parent is None:
            return []
        base = self.path.rsplit("/", 1)[-1]
        prefixes = tuple(f"{base}.__{kind}" for kind in ("staging-", "old-", "lock.stale-"))
        removed = []
        for name, _ in self.fs.list(parent):
            if name.startswith(prefixes) and not name.endswith(self.token):
                path = f"{parent.rstrip('/')}/{name}"
                self.fs.delete(path)
                removed.append(path)
        if removed:
            log.warning("removed what dead runs left beside the output: %s", ", ".join(removed))
        return removed

    def check_still_owner(self) -> None:
        """Refuse to publish anything once another run has taken this run's lock over (as stale)."""
        if self.lock is not None and not self.lock.held():
            other = self.lock.current()
            who = other.describe() if other else "unknown"
            raise DedupError(
                f"this run's lock {self.lock_path} was taken over by another run ({who}) while it ran (no heartbeat "
                f"for --lock-stale-minutes?): its result is not moved into {self.path}; run it again when the other "
                "run has finished")

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    # --- writing ---------------------------------------------------------------------------------------

    def staged(self, name: str) -> str:
        return f"{self.staging}/{name}"

    def remove_staged(self, name: str) -> None:
        self.fs.delete(self.staged(name))

    def write_bytes(self, path: str, data: bytes) -> None:
        self.fs.write(path, data)

    def write_text(self, path: str, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def write_report(self, report: dict) -> None:
        self.write_text(self.staged("report.json"), json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n")

    def commit(self, after_step=exit_after_env) -> None:
        """Replace DIR by the staging directory; DIR has _SUCCESS only while it holds one complete run.

        1. unmark_old: remove DIR/_SUCCESS (from here on DIR does not look finished);
        2. move_old_aside: rename DIR to DIR.__old-TOKEN;
        3. move_new_in: rename the staging directory to DIR;
        4. mark_new: write DIR/_SUCCESS (the commit point), listing the files of the run (MANIFEST_KEY);
        5. drop_old: remove DIR.__old-TOKEN.
        A failure in 1-4 puts the old output back as it was; a kill leaves DIR without _SUCCESS (or absent,
        or finished with the new run) and the next run removes the rest. `after_step(name)` runs after each
        step (COMMIT_STEPS), for tests."""
        self.check_still_owner()
        files = self.fs.files_under(self.staging)  # one recursive listing, before anything moves
        after_step("begin")
        success = self.path + "/_SUCCESS"
        old_exists = self.fs.status(self.path) is not None
        old_marker = self.fs.read(success) if old_exists else None  # None: not finished
        moved_aside = moved_in = False
        try:
            if old_exists:
                if old_marker is not None:
                    self.fs.delete(success)
                after_step("unmark_old")
                if not self.fs.rename(self.path, self.old):
                    raise DedupError(f"could not move the old output {self.path} aside to {self.old}: check "
                                     "permissions on the output's parent directory")
                moved_aside = True
                after_step("move_old_aside")
            if not self.fs.rename(self.staging, self.path):
                raise DedupError(f"could not move {self.staging} to {self.path}: check permissions on the output's "
                                 "parent directory")
            moved_in = True
            after_step("move_new_in")
            self.fs.write(success, manifest_bytes(files))
        except BaseException:
            self._roll_back(old_marker, moved_aside, moved_in)
            raise
        after_step("mark_new")
        if old_exists:
            try:
                self.fs.delete(self.old)
            except Exception as exc:  # the new output is in place; the next run removes the old one
                log.warning("could not remove the replaced output %s: %s", self.old, java_message(exc))
        after_step("drop_old")

    def _roll_back(self, old_marker: bytes | None, moved_aside: bool, moved_in: bool) -> None:
        """After a failure inside the commit: the new run back to staging, the old one back to DIR, and its
        _SUCCESS (`old_marker`: its bytes) back if it had one. Best effort: what cannot be undone is logged, and DIR never has a
        _SUCCESS it should not have."""
        try:
            if moved_in and not self.fs.rename(self.path, self.staging):
                log.error("could not move the new output %s back to %s: %s holds the new run without _SUCCESS",
                          self.path, self.staging, self.path)
                return
            if moved_aside and not self.fs.rename(self.old, self.path):
                log.error("could not move the old output %s back to %s", self.old, self.path)
                return
            if old_marker is not None:
                self.fs.write(self.path + "/_SUCCESS", old_marker)
        except Exception as exc:
            log.error("could not restore the old output %s: %s", self.path, java_message(exc))

    def abort(self) -> None:
        """Remove the staging directory after a failure (DIR itself is untouched)."""
        try:
            self.fs.delete(self.staging)
        except Exception:  # the original error matters more than a failed clean-up
            pass


def _shown(names: list[str]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def input_root(jvm, hadoop_conf, path: str) -> str:
    """The qualified directory or file everything the input path can name lies under: the path itself when
    it exists (a name may hold `[`), else the part before its first glob component."""
    try:
        p = jvm.org.apache.hadoop.fs.Path(path)
        if p.getFileSystem(hadoop_conf).exists(p):
            return qualified_path(jvm, hadoop_conf, path)
    except Exception:
        pass
    return qualified_path(jvm, hadoop_conf, glob_root(path))
