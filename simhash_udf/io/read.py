"""Spark stage 1: find the input files, read them into a DataFrame and check it before any expensive work.

Which files: --input is a file, a directory or a Hadoop glob (`/crawl/day-*/*.jsonl`); an existing path is
taken literally even when its name holds glob characters (`a[1].jsonl`). Directories are read recursively,
hidden files and directories (`_*`, `.*`, as Spark skips them) aside. When every file lies below `key=value`
directories (the same keys in every branch) Spark's partition discovery turns them into columns; any other
tree is read with Spark's `recursiveFileLookup` (no partition columns, as Spark cannot derive them there).
The listing happens once on the driver (file names only, no data) and also decides the format.
"""
from __future__ import annotations

import logging
import re
import urllib.parse
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from ..errors import DedupError
from ..spark.session import unique_key_aggregation
from .paths import COMPRESSIONS, escape_glob, has_glob, is_hidden
from .wet import read_wet

log = logging.getLogger("simhash_dedup")
CORRUPT = "_corrupt_record"  # Spark's column for lines/rows its JSON and CSV parsers cannot read
SOURCE_FILE = "_source_file"
# Jackson's default limit is 20,000,000 characters per JSON string; pages are capped later (max_text_chars),
# so the reader takes any string a Spark row can hold.
JSON_OPTIONS = {"maxStringLen": str(2**31 - 1)}

_EXTENSIONS = {
    ".parquet": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".txt": "text",
    ".wet": "wet",
}
# Not readable here: no Hadoop codec, or a Hadoop codec whose framing is not the command-line tool's.
UNSUPPORTED_COMPRESSIONS = (".xz", ".lzma", ".lz4", ".snappy", ".lzo", ".br", ".zip", ".7z", ".rar", ".tar", ".tgz", ".z")
PARSED_FORMATS = ("json", "csv", "wet")  # parsed at some cost: cached once read (pipeline)
FIRST_FILES = 100  # input files InputFiles names (first listed), for messages that point at examples
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # a partition directory's name for a null value
_HADOOP_PACKAGES = {
    "s3a": "org.apache.hadoop:hadoop-aws:{hadoop}",
    "s3": "org.apache.hadoop:hadoop-aws:{hadoop} (and write the path as s3a://)",
    "s3n": "org.apache.hadoop:hadoop-aws:{hadoop} (and write the path as s3a://)",
    "abfs": "org.apache.hadoop:hadoop-azure:{hadoop}",
    "abfss": "org.apache.hadoop:hadoop-azure:{hadoop}",
    "wasb": "org.apache.hadoop:hadoop-azure:{hadoop}",
    "wasbs": "org.apache.hadoop:hadoop-azure:{hadoop}",
    "gs": "com.google.cloud.bigdataoss:gcs-connector:hadoop3-<version> (the GCS connector)",
}


class EmptyInput(DedupError):
    """The input holds no rows; `df` is the (empty) input when its schema is known, else None."""

    def __init__(self, message: str, df: DataFrame | None = None):
        super().__init__(message)
        self.df = df





def file_system(spark: SparkSession, path: str):
    """The Hadoop FileSystem of path; a scheme without its connector on the classpath is a clear error."""
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    try:
        return p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    except Exception as exc:  # py4j's Py4JJavaError: UnsupportedFileSystemException, ClassNotFoundException
        text = str(exc)
        if "No FileSystem for scheme" not in text and "ClassNotFoundException" not in text:
            raise
        scheme = path.split("://", 1)[0] if "://" in path else path.split(":", 1)[0]
        hadoop = jvm.org.apache.hadoop.util.VersionInfo.getVersion()
        package = _HADOOP_PACKAGES.get(scheme.lower(), "").format(hadoop=hadoop)
        fix = (f"add --packages {package} to spark-submit (Hadoop {hadoop} is the version this Spark ships)" if package
               else f"add the Hadoop file system for {scheme}:// to the classpath (spark-submit --packages or --jars)")
        raise DedupError(f"no Hadoop file system for {scheme}:// paths ({path}) is on the classpath: {fix}") from None


def check_file_systems(spark: SparkSession, *paths: str) -> None:
    """Every path's file system is there, before anything is read or written."""
    for path in paths:
        if path:
            file_system(spark, path)


def _format_of(name: str) -> tuple[str | None, str | None]:
    """(format, unsupported compression suffix) of a file name, e.g. ('json', None) for x.jsonl.gz."""
    base = name.lower()
    for ext in UNSUPPORTED_COMPRESSIONS:
        if base.endswith(ext):
            return None, ext
    for ext in COMPRESSIONS:
        if base.endswith(ext):
            base = base[: -len(ext)]
            break
    for ext, fmt in _EXTENSIONS.items():
        if base.endswith(ext):
            return fmt, None
    return None, None


@dataclass
class InputFiles:
    """What --input names, from one listing on the driver (file names only)."""

    path: str  # as given
    spark_path: str  # what Spark's readers get: a literal path's glob characters escaped
    files: int = 0
    bytes: int = 0  # of the data files, as listed (compressed or not)
    formats: Counter = field(default_factory=Counter)  # format (None: unknown) -> files
    examples: dict = field(default_factory=dict)  # format or compression -> up to 3 file paths
    unsupported: Counter = field(default_factory=Counter)  # unsupported compression suffix -> files
    layout: str = "flat"  # flat: files only at the top; partitioned: key=value dirs; recursive: any other tree
    partition_keys: list = field(default_factory=list)
    dirs: set = field(default_factory=set, repr=False)  # distinct directories of the files, relative to the input
    # files of 0 bytes, as (URI as input_file_name gives it, directories relative to the input): Spark's file scans
    # skip them, so a reader of one document per file adds them itself (read_text)
    empty_files: list = field(default_factory=list, repr=False)
    first_files: list = field(default_factory=list, repr=False)  # the first FIRST_FILES paths, for messages

    @property
    def reader_options(self) -> dict:
        return {"recursiveFileLookup": "true"} if self.layout == "recursive" else {}

    def describe(self) -> dict:
        return {"files": self.files, "layout": self.layout, "partition_columns": self.partition_keys}

    def add(self, status, rel_dirs: tuple) -> None:
        """One data file (its Hadoop FileStatus), in directories `rel_dirs` below the input."""
        path = status.getPath().toString()
        if not status.getLen():
            self.empty_files.append((status.getPath().toUri().toString(), rel_dirs))
        if len(self.first_files) < FIRST_FILES:
            self.first_files.append(path)
        name = path.rsplit("/", 1)[-1]
        fmt, bad = _format_of(name)
        self.files += 1
        self.bytes += status.getLen()
        key = bad or fmt
        self.formats[fmt] += 1
        if bad:
            self.unsupported[bad] += 1
        examples = self.examples.setdefault(key, [])
        if len(examples) < 3:
            examples.append(path)
        self.dirs.add(rel_dirs)

    def decide_layout(self) -> None:
        dirs = self.dirs
        if dirs <= {()}:
            self.layout = "flat"
            return
        keys = {tuple(part.split("=", 1)[0] for part in d) for d in dirs}
        if () not in dirs and all("=" in part for d in dirs for part in d) and len(keys) == 1:
            self.layout, self.partition_keys = "partitioned", list(keys.pop())
            return
        self.layout = "recursive"
        if any("=" in part for d in dirs for part in d):
            log.warning("input %s: some files lie outside key=value directories, so the directories are not "
                        "turned into columns (Spark's partition discovery needs every file below them)", self.path)


def list_input(spark: SparkSession, path: str) -> InputFiles:
    """List the data files --input names (a file, a directory read recursively, or a glob)."""
    jvm = spark.sparkContext._jvm
    fs = file_system(spark, path)
    p = jvm.org.apache.hadoop.fs.Path(path)
    if fs.exists(p):  # an existing path is literal, whatever characters its name holds
        roots = [fs.getFileStatus(p)]
        info = InputFiles(path, escape_glob(path) if has_glob(path) else path)
    elif has_glob(path):
        roots = [s for s in (fs.globStatus(p) or []) if not is_hidden(s.getPath().getName())]
        if not roots:
            raise DedupError(f"input {path} matches no file or directory: fix --input")
        info = InputFiles(path, path)
    else:
        raise DedupError(f"input {path} does not exist: fix --input")
    for root in roots:
        if not root.isDirectory():
            info.add(root, ())
            continue
        prefix = root.getPath().toString().rstrip("/") + "/"
        it = fs.listFiles(root.getPath(), True)
        while it.hasNext():
            status = it.next()
            file_path = status.getPath().toString()
            parts = file_path[len(prefix):].split("/") if file_path.startswith(prefix) else [file_path]
            if not any(is_hidden(part) for part in parts):
                info.add(status, tuple(parts[:-1]))
    info.decide_layout()
    return info


def detect_format(info: InputFiles, requested: str = "auto") -> str:
    """The input format from the file names (requested unless 'auto'); unreadable compression is refused."""
    if info.unsupported:
        ext, n = info.unsupported.most_common(1)[0]
        raise DedupError(
            f"{n} input files are compressed with {ext}, which this job cannot read (e.g. {info.examples[ext][0]}): "
            "decompress them, or recompress them as .gz, .bz2 or .zst")
    if requested != "auto":
        return requested
    known = sorted(f for f in info.formats if f is not None)
    unknown = info.formats.get(None, 0)
    if len(known) == 1 and not unknown:
        return known[0]
    shown = [e for f in known + [None] for e in info.examples.get(f, [])][:3]
    if not known:
        what = "no known file extension"
    elif len(known) > 1:
        what = f"a mix of {known}"
    else:
        what = f"{unknown} files without a known extension among the {known[0]} files, e.g. {info.examples[None][:3]}"
        raise DedupError(f"cannot tell the input format ({what}): pass a glob that selects the {known[0]} files "
                         f"only, or --input-format {known[0]} to read every file as {known[0]}")
    raise DedupError(f"cannot tell the input format ({what} among files such as {shown}): "
                     "pass --input-format parquet|json|csv|text|wet")


def read_files(spark: SparkSession, info: InputFiles, fmt: str, typed: tuple[str, ...] = ()) -> DataFrame:
    """The input as Spark reads it; JSON Lines and CSV still with the corrupt-record and source-file columns
    (refuse_corrupt drops them once the rows are cached). typed: CSV columns whose type is inferred (read_csv)."""
    reader = spark.read.options(**info.reader_options)
    path = info.spark_path
    if fmt in ("parquet", "fingerprints"):
        # the schema of all files' footers (Spark's default takes one file's: a column added during the day was
        # missing from kept/ for every row, silently); files that disagree on a column's type are refused
        try:
            return reader.option("mergeSchema", True).parquet(path)
        except Exception as exc:
            if "CANNOT_MERGE_SCHEMAS" not in str(exc):
                raise input_error(exc) or exc from None  # a footer that cannot be read names its file
            raise schema_conflict(spark, info, str(exc)) from None
    if fmt == "json":
        return read_json_lines(spark, info)
    if fmt == "csv":
        return read_csv(spark, info, typed)
    if fmt == "text":
        return read_text(spark, info)
    if fmt == "wet":
        return read_wet(reader.format("binaryFile").load(path))
    raise DedupError(f"--input-format {fmt!r} is unknown")


_MERGED_SCHEMAS = re.compile(r'Initial schema:\s*"(?P<a>STRUCT<.*?>)"\s*Schema that cannot be merged with the initial '
                             r'schema:\s*"(?P<b>STRUCT<.*?>)"(?:\.|\s|$)', re.S)


def schema_conflict(spark: SparkSession, info: InputFiles, text: str) -> DedupError:
    """Spark's CANNOT_MERGE_SCHEMAS (two files' footers disagree on a column's type) as a message that names the
    column, its two types and, when one of the first input files has each, a file of each type."""
    match = _MERGED_SCHEMAS.search(text)
    found = differing_column(match["a"], match["b"]) if match else None
    if found is None:  # not the message this parses: Spark's own words, its innermost cause (the two types)
        why = next((ln.split("] ", 1)[-1].strip() for ln in reversed(text.splitlines()) if "CANNOT_MERGE" in ln), "")
        return DedupError(f"the Parquet files of input {info.path} do not agree on their columns' types ({why[:300]}): "
                          "make them agree upstream (cast the column in every file), or read the files separately")
    column, first, second = found
    examples = files_with_types(spark, info, column, (first, second))
    where = [f" (e.g. {examples[t]})" if t in examples else "" for t in (first, second)]
    return DedupError(f"the Parquet files of input {info.path} do not agree on their columns' types: column {column!r} "
                      f"is {first} in some files{where[0]} and {second} in others{where[1]}: make them agree upstream "
                      f"(write {column!r} with one type in every file), or read the files of each type separately")


def struct_fields(struct: str) -> list[tuple[str, str]]:
    """(name, type) of the fields of a Spark SQL struct type as its messages write it: `STRUCT<id: BIGINT, a:
    STRUCT<b: INT>>` (names with other characters in backquotes)."""
    body = struct.strip()[len("STRUCT<"):-1]
    fields, depth, quoted, start = [], 0, False, 0
    for i, c in enumerate(body + ","):
        if c == "`":
            quoted = not quoted
        elif not quoted and c in "<(":
            depth += 1
        elif not quoted and c in ">)":
            depth -= 1
        elif not quoted and depth == 0 and c == ",":
            fields.append(body[start:i].strip())
            start = i + 1
    pairs = []
    for f in filter(None, fields):
        named = re.match(r"(`(?:[^`]|``)*`|[^:]*):\s*(.*)", f, re.S)
        if named:
            name, dtype = named.groups()
            pairs.append((name[1:-1].replace("``", "`") if name.startswith("`") else name, dtype.strip()))
    return pairs


def differing_column(a: str, b: str, prefix: str = "") -> tuple[str, str, str] | None:
    """The first column (a.b for a nested one) whose type differs between struct types a and b, with both types."""
    theirs = dict(struct_fields(b))
    for name, dtype in struct_fields(a):
        other = theirs.get(name)
        if other is None or other == dtype:
            continue
        if dtype.startswith("STRUCT<") and other.startswith("STRUCT<"):
            inner = differing_column(dtype, other, f"{prefix}{name}.")
            if inner is not None:
                return inner
        return f"{prefix}{name}", dtype, other
    return None


def files_with_types(spark: SparkSession, info: InputFiles, column: str, types: tuple[str, ...]) -> dict[str, str]:
    """A file of each type of `column` among the input's first files (their footers read on the driver, one at a
    time, until each type has one); {} where the footers cannot be read this way. For an error message only."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    parquet = jvm.org.apache.parquet.hadoop
    try:
        to_spark = jvm.org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter(
            spark._jsparkSession.sessionState().conf())
    except Exception:  # another Spark's internals: the message goes without examples
        return {}
    found: dict[str, str] = {}
    for path in info.first_files:
        try:
            file = parquet.util.HadoopInputFile.fromPath(jvm.org.apache.hadoop.fs.Path(path), conf)
            reader = parquet.ParquetFileReader.open(file)
            try:
                dtype = to_spark.convert(reader.getFooter().getFileMetaData().getSchema())
            finally:
                reader.close()
            for name in column.split("."):
                dtype = dtype.apply(name).dataType()
        except Exception:  # not a Parquet file, or one without the column: not an example
            continue
        found.setdefault(dtype.sql(), path)
        if all(t in found for t in types):
            break
    return {t: found[t] for t in types if t in found}


def read_text(spark: SparkSession, info: InputFiles) -> DataFrame:
    """One document per file, its id the file's path (input_file_name). Spark's file scans skip files of 0 bytes,
    which would lose an empty file's document without a trace: each is added as a document with empty text (a
    bad row of the report's no_features count, kept as a cluster of its own), its partition columns taken from
    its directories as Spark's partition discovery takes them."""
    docs = spark.read.options(**info.reader_options).text(info.spark_path, wholetext=True).select(
        F.input_file_name().alias("id"), F.col("value").alias("text"), *info.partition_keys)
    if not info.empty_files:
        return docs
    keys = info.partition_keys
    rows = [(uri, "", *partition_values(dirs, keys)) for uri, dirs in info.empty_files]
    empty = spark.createDataFrame(rows, StructType([StructField(c, StringType()) for c in ["id", "text", *keys]]))
    return docs.unionByName(empty.select("id", "text", *[F.col(k).cast(docs.schema[k].dataType).alias(k) for k in keys]))


def partition_values(dirs: tuple, keys: list) -> list:
    """The values of partition columns `keys` in a file's `key=value` directories, as text (Spark escapes
    characters such as `/` and `%` in a value as %XX; its default partition name stands for null)."""
    found = dict(part.split("=", 1) for part in dirs if "=" in part)
    return [None if found.get(k) in (None, HIVE_DEFAULT_PARTITION) else urllib.parse.unquote(found[k]) for k in keys]


def _with_corrupt_column(schema: StructType) -> StructType:
    return StructType([f for f in schema.fields if f.name != CORRUPT] + [StructField(CORRUPT, StringType())])


def _repeated_key_error(spark: SparkSession, info: InputFiles, exc: Exception) -> DedupError:
    """A JSON object with a key twice (Spark's schema inference stops there): name the key and a line."""
    match = re.search(r"column `([^`]*)` already exists", str(exc))
    key = match.group(1) if match else "?"
    lines = spark.read.options(**info.reader_options).text(info.spark_path)
    pattern = f'(?i)"\\Q{key}\\E"\\s*:'  # a Java regex: the key quoted, any case, then a colon
    example = lines.where(F.regexp_count("value", F.lit(pattern)) > 1).select(
        F.input_file_name().alias("file"), "value").limit(1).collect() if match else []
    where = f", e.g. {example[0]['file']}: {example[0]['value'][:80]!r}" if example else ""
    return DedupError(f"a JSON object holds the key {key!r} twice (keys that differ only in case count as the same)"
                      f"{where}: Spark cannot tell which value is meant; remove the repeated key upstream")


def read_json_lines(spark: SparkSession, info: InputFiles) -> DataFrame:
    """JSON Lines, one object per line, parsed from lines decoded as UTF-8 with replacement: Spark's JSON
    reader would turn a line with invalid bytes into a corrupt record; this way the page is kept, and
    counted later (its text holds U+FFFD). Blank lines are not rows. Partition columns come from the lines'
    files, not from the objects."""
    options = {**info.reader_options, **JSON_OPTIONS}
    try:
        inferred = spark.read.options(**options).json(info.spark_path).schema
    except Exception as exc:
        if "COLUMN_ALREADY_EXISTS" in str(exc):
            raise _repeated_key_error(spark, info, exc) from None
        raise
    fields = [f for f in inferred.fields if f.name not in info.partition_keys]
    if not fields:
        raise EmptyInput(f"input {info.path} holds no JSON objects ({info.files} files, all empty or blank)")
    lines = spark.read.options(**info.reader_options).text(info.spark_path).where(F.trim("value") != "")
    parse = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT, **JSON_OPTIONS}
    parsed = lines.select(F.from_json("value", _with_corrupt_column(StructType(fields)), parse).alias("_r"),
                          *info.partition_keys, F.input_file_name().alias(SOURCE_FILE))
    return parsed.select("_r.*", *info.partition_keys, SOURCE_FILE)


def read_csv(spark: SparkSession, info: InputFiles, typed: tuple[str, ...] = ()) -> DataFrame:
    """CSV with a header; quoted fields may span lines. Every column is read as text, as written: with types
    inferred, an id such as 007 became 7 (and no longer matched the user's own 007) and a 20-digit number a
    double, in clusters/ and kept/ alike. Columns named in `typed` (the --keep earliest column) get the type
    Spark infers from every file (one more pass), so that they order as numbers or times, not as text. The
    rows are read with Spark's corrupt-record column, so a row with more or fewer fields than the header is
    caught instead of being padded or cut silently."""
    options = dict(header=True, multiLine=True, escape='"', **info.reader_options)
    schema = spark.read.options(**options).csv(info.spark_path).schema  # the header: every column a string
    if not [f for f in schema.fields if f.name not in info.partition_keys]:
        raise EmptyInput(f"input {info.path} holds no CSV header or rows ({info.files} files, all empty)")
    wanted = [f.name for f in schema.fields if f.name in typed and f.name not in info.partition_keys]
    if wanted:
        inferred = spark.read.options(inferSchema=True, **options).csv(info.spark_path).schema
        schema = StructType([inferred[f.name] if f.name in wanted else f for f in schema.fields])
    # enforceSchema off: every file's header is checked against the columns (Spark's default takes them by
    # position and drops each file's first line unchecked, so a file with its columns in another order had its
    # text read as ids, and a part file without a header lost its first row)
    rows = spark.read.options(columnNameOfCorruptRecord=CORRUPT, mode="PERMISSIVE", enforceSchema=False,
                              **options).schema(_with_corrupt_column(schema)).csv(info.spark_path)
    return rows.select("*", F.input_file_name().alias(SOURCE_FILE))


def refuse_corrupt(df: DataFrame, what: str) -> DataFrame:
    """Stop with the file and a sample of the first rows Spark could not parse; else drop the helper columns.
    Such a row has no trustworthy id, so it can be neither kept nor reported as a duplicate. Runs on the
    cached rows (Spark refuses a query of raw CSV that reads only the corrupt-record column)."""
    data_cols = [c for c in df.columns if c not in (CORRUPT, SOURCE_FILE)][:1]
    bad = df.where(F.col(CORRUPT).isNotNull()).select(SOURCE_FILE, CORRUPT, *data_cols)
    examples = bad.limit(3).collect()
    if examples:
        n = bad.count()
        shown = "; ".join(f"{r[SOURCE_FILE]}: {r[CORRUPT][:80]!r}" for r in examples)
        raise DedupError(
            f"{n} {what} rows cannot be parsed (malformed, or a different number of fields than the header), "
            f"e.g. {shown}: fix or remove those rows or files"
        )
    return df.drop(CORRUPT, SOURCE_FILE)


@dataclass
class LoadedInput:
    df: DataFrame  # the input rows (cached when parsed: PARSED_FORMATS)
    fmt: str
    rows: int
    files: InputFiles
    largest_partition: int = 0  # rows of the read partition that holds the most
    ids_checked: bool = False  # every id found non-null and unique in the counting pass (check_ids not needed)


# Spark's loggers that print a failed task's Java stack trace in the driver's log (local mode runs the tasks in the
# driver's JVM): the executor's "Exception in task" and the scheduler's "Lost task".
TASK_FAILURE_LOGGERS = ("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager")


@contextmanager
def quiet_task_failures(spark: SparkSession):
    """Within: the task-failure loggers (TASK_FAILURE_LOGGERS) print nothing below ERROR, the executor's not even
    that. Reading the input is where a user's mistake (a damaged file, Parquet files of two schemas) fails a task;
    the job turns that failure into one clear message (input_error, schema_conflict), which a Java stack trace
    printed first would bury. Nothing is hidden: a failure the job does not recognise still ends the run with its
    traceback, and the scheduler's "aborting job" line still shows. Put back as they were on the way out; a no-op
    where the driver does not log with log4j 2."""
    try:
        log4j = spark.sparkContext._jvm.org.apache.logging.log4j
        context = log4j.LogManager.getContext(False)
        config = context.getConfiguration()
        before = []
        for name, level in zip(TASK_FAILURE_LOGGERS, ("OFF", "ERROR")):
            current = config.getLoggerConfig(name)
            before.append((name, current.getLevel() if current.getName() == name else None))
            log4j.core.config.Configurator.setLevel(name, log4j.Level.getLevel(level))
    except Exception as exc:  # another logging backend: its own levels stand
        log.debug("task-failure loggers left as they are: %s", exc)
        before = None
    try:
        yield
    finally:
        for name, level in before or ():
            if level is not None:
                log4j.core.config.Configurator.setLevel(name, level)
            else:  # there was no configuration of its own: inherit again
                config.removeLogger(name)
        if before:
            context.updateLoggers()


def load_input(spark: SparkSession, path: str, fmt: str, keep: Callable[[DataFrame], DataFrame],
               typed: tuple[str, ...] = (), id_col: str | None = None) -> LoadedInput:
    """List, read and count the input, parsing each file once: JSON Lines, CSV and WET rows are cached
    (keep: persisted MEMORY_AND_DISK by the pipeline) and counted in one pass, which also checks them; the id
    check, the fingerprints and kept/ then read the cache. Raises EmptyInput for 0 rows. typed: CSV columns
    read with an inferred type instead of as text (read_csv). id_col: for an input of at most
    IDS_IN_COUNT_BYTES, the counting pass also finds whether the ids are non-null and unique (ids_checked;
    partition_rows). A task that fails on a bad input file logs no Java stack trace before the job's message
    (quiet_task_failures)."""
    with quiet_task_failures(spark):
        return _load(spark, path, fmt, keep, typed, id_col)


# Input bytes up to which the counting pass checks the ids too (partition_rows): one Spark action and query
# fewer, which is a small run's cost; its two-phase aggregation by id would hold every id of a large input in the
# map side's hash table, where check_ids' own pass aggregates them in one phase.
IDS_IN_COUNT_BYTES = 128 * 2**20


def _load(spark: SparkSession, path: str, fmt: str, keep: Callable[[DataFrame], DataFrame],
          typed: tuple[str, ...], id_col: str | None = None) -> LoadedInput:
    info = list_input(spark, path)
    if not info.files:
        raise EmptyInput(f"input {path} holds no data files (only hidden ones such as _SUCCESS, or none)")
    fmt = detect_format(info, fmt)
    df = read_files(spark, info, fmt, typed)
    if fmt in PARSED_FORMATS:
        df = keep(df)
    checkable = id_col in df.columns and _ID_TYPES.fullmatch(df.schema[id_col].dataType.simpleString())
    # rows per read partition, in the pass that counts them: a Parquet file of one row group is read as
    # several partitions of which one holds every row, so the partition count alone misleads input_split
    per_partition, ids_checked = partition_rows(
        df, id_col if checkable and info.bytes <= IDS_IN_COUNT_BYTES else None)
    rows = sum(per_partition)
    if CORRUPT in df.columns:
        df = refuse_corrupt(df, "JSON Lines" if fmt == "json" else "CSV")
    if rows == 0:
        raise EmptyInput(f"input {path} holds no rows ({info.files} {fmt} files)", df)
    return LoadedInput(df, fmt, rows, info, max(per_partition, default=0), ids_checked)


def partition_rows(df: DataFrame, id_col: str | None = None) -> tuple[list[int], bool]:
    """The rows of each read partition, in one Spark action, and with id_col whether every id is non-null and
    unique, found in the same pass (what check_ids checks; when it is not so, check_ids finds the examples for
    its message). With id_col each id's rows count in the first partition that holds one of them: exact when the
    ids are unique, the only case in which the counts are used."""
    part = F.spark_partition_id()
    if id_col is None:
        return [int(r[1]) for r in df.groupBy(part).count().collect()], False
    per_id = df.select(part.alias("p"), F.col(id_col).alias("i")).groupBy("i").agg(
        F.count(F.lit(1)).alias("n"), F.min("p").alias("p"))
    rows = per_id.groupBy("p").agg(F.sum("n").alias("rows"), F.max("n").alias("most"),
                                   F.count(F.when(F.col("i").isNull(), 1)).alias("null_ids")).collect()
    unique = all(int(r["most"]) == 1 and not r["null_ids"] for r in rows)
    return [int(r["rows"]) for r in rows], unique


_FAILED_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?(?:\s|$)")
_NOT_WARC = re.compile(r"NotWarc: (\S+) is not a readable WARC/WET file: ([^\n]*)")
# a directory the job's user may not list (Hadoop's local file system, HDFS)
_DENIED = re.compile(r"(?:java\.nio\.file\.AccessDeniedException|org\.apache\.hadoop\.security\.AccessControlException"
                     r"|java\.io\.IOException: Permission denied): ([^\n]{0,300})")


def input_error(exc: BaseException) -> DedupError | None:
    """A Spark failure to read one input file (truncated Parquet, a bad gzip stream, a broken WET file, a
    codec without its native library, a file or directory the job's user may not read) as a clear error that
    names the file; None for any other failure."""
    if isinstance(exc, DedupError):
        return None
    text = str(exc)
    match = _NOT_WARC.search(text)
    if match:
        return DedupError(f"input file {match.group(1)} is not a readable WARC/WET file ({match.group(2)[:200]}): "
                          "replace or remove it, or fix --input-format")
    if "zStandard" in text and "native" in text:
        return DedupError("reading .zst input needs Hadoop's native zstd library, which this Spark does not have: "
                          "recompress the files as .gz or .bz2, or install Hadoop's native libraries (libhadoop)")
    match = _FAILED_FILE.search(text)
    if match:
        path = match.group(1)
        cause = next((ln.split(": ", 1)[-1] for ln in text.splitlines() if ln.startswith("Caused by:")), "")
        advice = ("give the user this job runs as read access to it, or remove it from the input"
                  if "Permission denied" in cause else "replace or remove it, or fix --input-format")
        return DedupError(f"input file {path} cannot be read ({cause[:200] or 'corrupt or of another format'}): {advice}")
    match = _DENIED.search(text)
    if match:  # listing the input (the driver) or a path of the output or history
        return DedupError(f"permission denied: {match.group(1).strip()}: give the user this job runs as access to it "
                          "(read for --input, write for --output and --history), or choose other paths")
    return None


# Types an id can have: clusters/ and the history store it, group and compare it (cluster_id is an id).
_ID_TYPES = re.compile(r"(string|tinyint|smallint|int|bigint|decimal\(\d+,\d+\)|date|timestamp|timestamp_ntz|binary)")


def check_columns(df: DataFrame, id_col: str, text_col: str, extra=(), text_types=("string", "binary")) -> None:
    """The id column, the text column (or `fingerprint` for stored fingerprints) and the keep column exist."""
    cols = df.columns
    text_option = "--text-col" if text_col != "fingerprint" else "an input with a 'fingerprint' column, or another --input-format"
    for col, option in [(id_col, "--id-col NAME"), (text_col, text_option)] + [(c, "--keep earliest:COLUMN") for c in extra]:
        if col not in cols:
            raise DedupError(f"column {col!r} is not in the input (columns: {', '.join(cols)}): pass {option}")
    id_type = df.schema[id_col].dataType.simpleString()
    if not _ID_TYPES.fullmatch(id_type):
        raise DedupError(f"the id column {id_col!r} has type {id_type}: ids must be strings, integers, decimals, dates "
                         "or timestamps (they are compared and stored as cluster ids); pass --id-col with such a "
                         "column, or make one upstream")
    dtype = df.schema[text_col].dataType.simpleString()
    if dtype not in text_types:
        raise DedupError(
            f"column {text_col!r} has type {dtype}, not {' or '.join(text_types)}: pass {text_option}"
        )


def check_ids(df: DataFrame, id_col: str) -> None:
    """Null or repeated ids would make `clusters` ambiguous: stop with examples instead of merging rows.
    One pass: the null ids are a group of their own, listed first."""
    groups = df.groupBy(id_col).count()
    dups = groups.where("count > 1")
    with unique_key_aggregation(df.sparkSession):  # ids are unique but for the errors this looks for
        examples = groups.where(F.col(id_col).isNull() | (F.col("count") > 1)).orderBy(
            F.col(id_col).isNotNull(), F.desc("count"), id_col).limit(5).collect()
    if examples and examples[0][0] is None:
        raise DedupError(f"the id column {id_col!r} has null values: every row needs an id (or pass --id-col NAME)")
    if examples:
        n = dups.count()
        shown = ", ".join(f"{r[0]!r} ({r[1]} rows)" for r in examples)
        raise DedupError(
            f"{n} id values occur more than once in column {id_col!r}, e.g. {shown}: ids must be unique; "
            "deduplicate the ids upstream or pass --id-col with a unique column"
        )
