"""What the history records about each date, and how a date is checked against it.

Two copies of one manifest per date: `run_date=D/_manifest.json`, written into the run's staging directory
before the publish (so it moves into place with the rows, in the same rename), and the date's record
`HISTORY/_manifests/run_date=D.json`, written after the rows are in place. The record lives outside the
date's directory, so a date that vanished (its directory renamed away or deleted) is still known; the copy
inside tells which run's rows a directory holds, so a later run can finish a publish that was killed between
moving the rows in and writing the record.

A manifest lists the date's data files (Parquet parts, those of the band index too) with their byte sizes,
the row count, the fingerprint version and id type of its rows, and the run's token. Checking a date costs one
call per date: the directory's file count and bytes (Hadoop's getContentSummary: one name-node call on HDFS,
one listing inside the JVM on object stores) against the manifest's. Only when they differ are the files
listed one by one and compared, to name what is missing, shorter or longer, or not the run's. Row counts are
not read back from the footers at every run: a file of the recorded size is the file the run wrote, and the
count is recorded for the messages and for people (it is counted once, when the run writes it).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from .hadoop_fs import HadoopFS, java_class

MANIFEST = "_manifest.json"  # inside a date's directory (hidden from Spark's readers by the "_")
RECORDS = "_manifests"  # HISTORY/_manifests/run_date=D.json: each date's record
FORMAT = 1


@dataclass
class Manifest:
    run_date: str
    token: str  # the run that wrote the rows (its staging directory's token)
    rows: int
    files: dict[str, int]  # path below the date's directory -> bytes, the data files only
    summary: list[int]  # [files, bytes] of everything in the directory but the manifest itself
    fingerprint_version: str
    id_type: str
    band_index: str | None = None
    format: int = FORMAT
    raw: bytes = field(default=b"", repr=False, compare=False)

    def to_bytes(self) -> bytes:
        d = asdict(self)
        d.pop("raw")
        return (json.dumps(d, indent=1, sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def parse(cls, data: bytes | None) -> "Manifest | None":
        """None for a missing or unreadable file (a half-written one is never renamed into place; anything
        else unreadable is treated as no manifest, and the date's own copy is used instead)."""
        try:
            d = json.loads((data or b"").decode("utf-8"))
            m = cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "raw"})
        except (ValueError, TypeError, KeyError, UnicodeDecodeError):
            return None
        m.raw = data
        return m

    def describe(self) -> str:
        return f"{self.rows} rows in {len(self.files)} files"


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


def summary_matches(manifest: Manifest, found: tuple[int, int] | None) -> bool:
    """Whether a directory's (files, bytes) are the manifest's, with or without the manifest's own copy
    inside (of the same bytes as the record)."""
    if found is None:
        return False
    files, size = manifest.summary
    return tuple(found) in ((files, size), (files + 1, size + len(manifest.raw or manifest.to_bytes())))


def differences(manifest: Manifest, found: dict[str, int], index_removed: bool = False) -> list[str]:
    """What is wrong with a date's data files against its manifest ([] when nothing), in words. A band index
    removed whole (index_removed: its directory is gone) is not missing: a run computes the band keys of a date
    without one from its signatures (history.band_rows); one with some of its files gone would miss band keys,
    and is."""
    expected = manifest.files
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


def write_record(fs: HadoopFS, history: str, manifest: Manifest, token: str) -> None:
    """Write a date's record: into a temporary file first, then renamed over the record, so that a record is
    never half-written (a kill in between leaves the old record, or none: the date's own copy then stands)."""
    final = record_path(history, manifest.run_date)
    temporary = f"{history}/{RECORDS}/_tmp-{token}-run_date={manifest.run_date}.json"
    fs.write(temporary, manifest.raw or manifest.to_bytes())
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
    m = Manifest(run_date, token, rows, data_files(fs, directory), list(summary), fingerprint_version, id_type,
                 band_index)
    m.raw = m.to_bytes()
    return m
