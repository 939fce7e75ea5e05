"""WARC-WET input: Common Crawl's plain-text extracts, one `conversion` record per page, read with warcio.

Files are parsed on the executors (`binaryFiles`: one whole file per task, as Common Crawl's WET files are
~100 MB compressed). The text stays bytes so the job's UTF-8 check counts and repairs invalid pages like
any other input; a file that is not WARC stops the job with its name.
"""
from __future__ import annotations

import io
from typing import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BinaryType, StringType, StructField, StructType

WET_SCHEMA = StructType(
    [
        StructField("id", StringType(), False),  # WARC-Record-ID
        StructField("url", StringType(), True),  # WARC-Target-URI
        StructField("date", StringType(), True),  # WARC-Date
        StructField("text", BinaryType(), True),
        StructField("file", StringType(), False),
    ]
)


def wet_records(path: str, content: bytes) -> Iterator[tuple]:
    """(record id, url, date, text bytes, file) for every conversion record of one WET file."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    if not content.startswith((b"\x1f\x8b", b"WARC/")):
        raise ValueError(f"{path} is not a readable WARC/WET file: it starts with neither gzip nor 'WARC/'")
    try:
        for record in ArchiveIterator(io.BytesIO(content)):
            if record.format != "warc":
                raise ValueError(f"found a {record.format} record")
            if record.rec_type != "conversion":
                continue
            headers = record.rec_headers
            yield (
                headers.get_header("WARC-Record-ID"),
                headers.get_header("WARC-Target-URI"),
                headers.get_header("WARC-Date"),
                record.content_stream().read(),
                path,
            )
    except (ArchiveLoadFailed, ValueError, EOFError, OSError) as exc:
        raise ValueError(f"{path} is not a readable WARC/WET file: {exc}") from exc


def read_wet(spark: SparkSession, path: str) -> DataFrame:
    files = spark.sparkContext.binaryFiles(path)
    return spark.createDataFrame(files.flatMap(lambda kv: wet_records(kv[0], kv[1])), WET_SCHEMA)
