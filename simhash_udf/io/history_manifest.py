"""What the history records about each date, and how a date is checked against it.

Per date two files: its manifest `run_date=D/_manifest.json`, written into the run's staging directory before
the publish (so it moves into place with the rows, in the same rename), and its record
`HISTORY/_manifests/run_date=D.json`, written after the rows are in place. The manifest lists the date's data
files (Parquet parts, those of the band index too) with their byte sizes; both hold the row count, the file
count and bytes of the whole directory (its summary), the fingerprint version and id type of the rows and the
run's token. The record lives outside the date's directory, so a date that vanished (its directory renamed
away or deleted) is still known; the manifest inside tells which run's rows a directory holds, so a later run
can finish a publish that was killed between moving the rows in and writing the record.

Checking a date costs two calls: its record (a few hundred bytes: the file list stays in the manifest, since a
day of a large crawl has hundreds of part files, and py4j carried a 68 KB list in ~50 ms against ~2 ms for a
short record) and its directory's summary (Hadoop's getContentSummary: one name-node call on HDFS, one listing
inside the JVM on object stores). Only when the summary differs are the manifest read and the files listed one
by one, to name what is missing, shorter or longer, or not the run's. Row counts are not read back from the
footers at every run: a file of the recorded size is the file the run wrote, and the count is recorded for the
messages and for people (it is counted once, when the run writes it).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace

from .hadoop_fs import HadoopFS, java_class

MANIFEST = "_manifest.json"  # inside a date's directory (hidden from Spark's readers by the "_")
RECORDS = "_manifests"  # HISTORY/_manifests/run_date=D.json: each date's record
FORMAT = 1


@dataclass
class Manifest:
    """A date's manifest (files: its data files) or its record (files None; manifest_bytes: the size of the
    manifest inside the directory, which the summary leaves out)."""

    run_date: str
    token: str  # the run that wrote the rows (its staging directory's token)
    rows: int
    data_files: int
    summary: list[int]  # [files, bytes] of everything in the directory but the manifest itself
    fingerprint_version: str
    id_type: str
    band_index: str | None = None
    files: dict[str, int] | None = None  # path below the date's directory -> bytes, the data files only
    manifest_bytes: int = 0
    format: int = FORMAT
    raw: bytes = field(default=b"", repr=False, compare=False)

    def to_bytes(self) -> bytes:
        d = asdict(self)
        d.pop("raw")
        return (json.dumps(d, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")

    @classmethod
    def parse(cls, data: bytes | None) -> "Manifest | None":
        """None for a missing or unreadable file (a half-written record is never renamed into place; anything
        else unreadable is treated as no record, and the date's manifest is used instead)."""
        try:
            d = json.loads((data or b"").decode("utf-8"))
            m = cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "raw"})
        except (ValueError, TypeError, KeyError, UnicodeDecodeError):
            return None
        m.raw = data
        return m

    def record(self) -> "Manifest":
        """The record of the date this manifest describes."""
        r = replace(self, files=None, manifest_bytes=len(self.raw))
        r.raw = r.to_bytes()
        return r

    def describe(self) -> str:
        return f"{self.rows} rows in {self.data_files} files"


def _path(fs: HadoopFS, path: str):
    return fs._jvm.org.apache.hadoop.fs.Path(path)


def data_files(fs: HadoopFS, root: str) -> dict[str, int]:
    """{path below root: bytes} of the data files under root at any depth: files whose name does not start
    with "_" or "." (not _SUCCESS, checksum files or the manifest), in any directory (the band index's
    `_band_index-*` too). {} when root does not exist."""
    found: dict[str, int] = {}
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            statuses = fs.fs.listStatus(_path(fs, f"{root}/{rel}" if rel else root))
        except Exception as exc:
            if java_class(exc) == "java.io.FileNotFoundException":
                continue
            raise
        for s in statuses:
            name = s.getPath().getName()
            sub = f"{rel}/{name}" if rel else name
            if s.isDirectory():
                pending.append(sub)
            elif not name.startswith(("_", ".")):
                found[sub] = int(s.getLen())
    return found


def content_summary(fs: HadoopFS, root: str) -> tuple[int, int] | None:
    """(files, bytes) of everything under root, in one call; None when root does not exist."""
    try:
        s = fs.fs.getContentSummary(_path(fs, root))
    except Exception as exc:
        if java_class(exc) == "java.io.FileNotFoundException":
            return None
        raise
    return int(s.getFileCount()), int(s.getLength())


def summary_matches(record: Manifest, found: tuple[int, int] | None) -> bool:
    """Whether a directory's (files, bytes) are the record's, with or without the manifest inside."""
    if found is None:
        return False
    files, size = record.summary
    return tuple(found) in ((files, size), (files + 1, size + record.manifest_bytes))


def differences(manifest: Manifest, found: dict[str, int], index_removed: bool = False) -> list[str]:
    """What is wrong with a date's data files against its manifest ([] when nothing), in words. A band index
    removed whole (index_removed: its directory is gone) is not missing: a run computes the band keys of a date
    without one from its signatures (history.band_rows); one with some of its files gone would miss band keys,
    and is."""
    expected = manifest.files or {}
    if index_removed and manifest.band_index:
        expected = {name: size for name, size in expected.items() if not name.startswith(f"{manifest.band_index}/")}
    problems = []
    for name, size in sorted(expected.items()):
        if name not in found:
            problems.append(f"{name} is missing")
        elif found[name] != size:
            how = "shorter (truncated?)" if found[name] < size else "longer"
            problems.append(f"{name} is {found[name]} bytes, {how} than the {size} written")
    problems += [f"{name} was not written by the run that wrote the date" for name in sorted(set(found) - set(expected))]
    return problems


def record_path(history: str, run_date: str) -> str:
    return f"{history}/{RECORDS}/run_date={run_date}.json"


def write_record(fs: HadoopFS, history: str, record: Manifest, token: str) -> None:
    """Write a date's record: into a temporary file first, then renamed over the record, so that a record is
    never half-written (a kill in between leaves the old record, or none: the date's manifest then stands)."""
    final = record_path(history, record.run_date)
    temporary = f"{history}/{RECORDS}/_tmp-{token}-run_date={record.run_date}.json"
    fs.write(temporary, record.raw)
    if not fs.rename(temporary, final):  # HDFS and object stores do not rename onto an existing file
        fs.delete(final)
        if not fs.rename(temporary, final):
            raise OSError(f"could not rename {temporary} to {final}")


def read_records(fs: HadoopFS, history: str) -> dict[str, Manifest | None]:
    """{date: its record} of every record file (None: unreadable); temporary files left out."""
    records: dict[str, Manifest | None] = {}
    for name, is_dir in fs.list(f"{history}/{RECORDS}"):
        if not is_dir and name.startswith("run_date=") and name.endswith(".json"):
            records[name[len("run_date="):-len(".json")]] = Manifest.parse(fs.read(f"{history}/{RECORDS}/{name}"))
    return records


def new_manifest(fs: HadoopFS, directory: str, run_date: str, token: str, rows: int, fingerprint_version: str,
                 id_type: str, band_index: str | None) -> Manifest:
    """The manifest of a staged date's directory as it is now (before its manifest is written into it)."""
    summary = content_summary(fs, directory) or (0, 0)
    files = data_files(fs, directory)
    m = Manifest(run_date, token, rows, len(files), list(summary), fingerprint_version, id_type, band_index, files)
    m.raw = m.to_bytes()
    return m
