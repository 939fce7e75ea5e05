"""Spark stage 1: read the input into a DataFrame and check it before any expensive work."""
from __future__ import annotations

import re

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from .errors import DedupError

CORRUPT = "_corrupt_record"  # Spark's column for lines/rows its JSON and CSV parsers cannot read
SOURCE_FILE = "_source_file"

_EXTENSIONS = {
    ".parquet": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".txt": "text",
    ".wet": "wet",
}


def _hadoop_path(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p, p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def data_files(spark: SparkSession, path: str, limit: int = 1000) -> list[str]:
    """Names of (up to `limit`) visible data files under path; raises a clear error when path is missing."""
    p, fs = _hadoop_path(spark, path)
    if not fs.exists(p):
        raise DedupError(f"input {path} does not exist: fix --input")
    names = []
    it = fs.listFiles(p, True)
    while it.hasNext() and len(names) < limit:
        name = it.next().getPath().getName()
        if not name.startswith(("_", ".")):
            names.append(name)
    if not names:
        raise DedupError(f"input {path} holds no data files: fix --input")
    return names


def detect_format(names: list[str]) -> str:
    found = set()
    for name in names:
        base = name[:-3] if name.endswith(".gz") else name
        for ext, fmt in _EXTENSIONS.items():
            if base.endswith(ext) or (fmt == "parquet" and ".parquet" in base):
                found.add(fmt)
    if len(found) != 1:
        what = "no known file extension" if not found else f"a mix of {sorted(found)}"
        raise DedupError(
            f"cannot tell the input format ({what} among files such as {names[:3]}): "
            "pass --input-format parquet|json|csv|text|wet"
        )
    return found.pop()


def read_input(spark: SparkSession, path: str, fmt: str) -> DataFrame:
    if fmt == "auto":
        fmt = detect_format(data_files(spark, path))
    else:
        data_files(spark, path)
    if fmt in ("parquet", "fingerprints"):
        return spark.read.parquet(path)
    if fmt == "json":
        return refuse_corrupt(read_json_lines(spark, path), "JSON Lines")
    if fmt == "csv":
        return refuse_corrupt(read_csv(spark, path), "CSV")
    if fmt == "text":
        # One document per file: the id is the file's path.
        return spark.read.text(path, wholetext=True).select(
            F.input_file_name().alias("id"), F.col("value").alias("text")
        )
    if fmt == "wet":
        from .wet import read_wet

        return read_wet(spark, path)
    raise DedupError(f"--input-format {fmt!r} is unknown")


def _with_corrupt_column(schema: StructType) -> StructType:
    return StructType([f for f in schema.fields if f.name != CORRUPT] + [StructField(CORRUPT, StringType())])


def read_json_lines(spark: SparkSession, path: str) -> DataFrame:
    """JSON Lines, one object per line, parsed from lines decoded as UTF-8 with replacement: Spark's JSON
    reader would turn a line with invalid bytes into a corrupt record; this way the page is kept, and
    counted later (its text holds U+FFFD). Blank lines are not rows."""
    schema = _with_corrupt_column(spark.read.json(path).schema)
    lines = spark.read.text(path).where(F.trim("value") != "")
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
    parsed = lines.select(F.from_json("value", schema, options).alias("_r"), F.input_file_name().alias(SOURCE_FILE))
    return parsed.select("_r.*", SOURCE_FILE)


def read_csv(spark: SparkSession, path: str) -> DataFrame:
    """CSV with a header; quoted fields may span lines. The types are inferred in a first pass, then rows
    are read with Spark's corrupt-record column, so a row with more or fewer fields than the header is
    caught instead of being padded or cut silently."""
    options = dict(header=True, multiLine=True, escape='"')
    schema = _with_corrupt_column(spark.read.options(inferSchema=True, **options).csv(path).schema)
    rows = spark.read.options(columnNameOfCorruptRecord=CORRUPT, mode="PERMISSIVE", **options).schema(schema).csv(path)
    return rows.select("*", F.input_file_name().alias(SOURCE_FILE))


def refuse_corrupt(df: DataFrame, what: str) -> DataFrame:
    """Stop with the file and a sample of the first rows Spark could not parse; else drop the helper columns.
    Such a row has no trustworthy id, so it can be neither kept nor reported as a duplicate."""
    # one data column more than the corrupt-record column: Spark refuses a scan of raw CSV that reads only it
    data_cols = [c for c in df.columns if c not in (CORRUPT, SOURCE_FILE)][:1]
    bad = df.where(F.col(CORRUPT).isNotNull()).select(SOURCE_FILE, CORRUPT, *data_cols)
    examples = bad.limit(3).collect()
    if examples:
        n = bad.cache().count()  # cached: Spark refuses a count of raw CSV that would read the corrupt column only
        bad.unpersist()
        shown = "; ".join(f"{r[SOURCE_FILE]}: {r[CORRUPT][:80]!r}" for r in examples)
        raise DedupError(
            f"{n} {what} rows cannot be parsed (malformed, or a different number of fields than the header), "
            f"e.g. {shown}: fix or remove those rows or files"
        )
    return df.drop(CORRUPT, SOURCE_FILE)


_FAILED_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?(?:\s|$)")


def input_error(exc: BaseException) -> DedupError | None:
    """A Spark failure to read one input file (truncated Parquet, a bad gzip stream, ...) as a clear error that
    names the file; None for any other failure."""
    text = str(exc)
    match = _FAILED_FILE.search(text)
    if not match:
        return None
    path = match.group(1)
    cause = next((ln.split(": ", 1)[-1] for ln in text.splitlines() if ln.startswith("Caused by:")), "")
    return DedupError(f"input file {path} cannot be read ({cause[:200] or 'corrupt or of another format'}): "
                      "replace or remove it, or fix --input-format")


def check_columns(df: DataFrame, id_col: str, text_col: str, extra=(), text_types=("string", "binary")) -> None:
    """The id column, the text column (or `fingerprint` for stored fingerprints) and the keep column exist."""
    cols = df.columns
    text_option = "--text-col" if text_col != "fingerprint" else "an input with a 'fingerprint' column, or another --input-format"
    for col, option in [(id_col, "--id-col NAME"), (text_col, text_option)] + [(c, "--keep earliest:COLUMN") for c in extra]:
        if col not in cols:
            raise DedupError(f"column {col!r} is not in the input (columns: {', '.join(cols)}): pass {option}")
    dtype = df.schema[text_col].dataType.simpleString()
    if dtype not in text_types:
        raise DedupError(
            f"column {text_col!r} has type {dtype}, not {' or '.join(text_types)}: pass {text_option}"
        )


def check_ids(df: DataFrame, id_col: str) -> None:
    """Null or repeated ids would make `clusters` ambiguous: stop with examples instead of merging rows."""
    nulls = df.where(F.col(id_col).isNull()).limit(1).count()
    if nulls:
        raise DedupError(f"the id column {id_col!r} has null values: every row needs an id (or pass --id-col NAME)")
    dups = df.groupBy(id_col).count().where("count > 1")
    examples = dups.orderBy(F.desc("count"), id_col).limit(5).collect()
    if examples:
        n = dups.count()
        shown = ", ".join(f"{r[0]!r} ({r[1]} rows)" for r in examples)
        raise DedupError(
            f"{n} id values occur more than once in column {id_col!r}, e.g. {shown}: ids must be unique; "
            "deduplicate the ids upstream or pass --id-col with a unique column"
        )
