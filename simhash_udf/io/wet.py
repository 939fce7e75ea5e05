"""WARC-WET input: Common Crawl's plain-text extracts, one `conversion` record per page, parsed with fastwarc.

Files are read by Spark's `binaryFile` source (so globs, recursive lookup and partition directories behave as
for every other format) and parsed on the executors by `mapInArrow`: Arrow batches of whole files in, Arrow
batches of pages out. fastwarc parses ~2.5x faster than warcio (scripts/bench/wet.py, docs/operations.md, "Inputs").

Truncation: a WET file cut off mid-record (an interrupted download) is recognised, never read silently:
- a compressed stream that ends inside a member is seen (fastwarc and warcio both silently drop a record
  whose gzip member is cut): gzip files, one member per record as Common Crawl writes them, are decompressed
  by fastwarc and the last record's member once more here (_gzip_rows); bzip2 and zstd files are
  decompressed here (Decompressed);
- a record whose body is shorter than its Content-Length is cut, and so is a record header without
  Content-Length that the end of the file cuts (no blank line after it). A complete header without
  Content-Length is not a cut: the file is refused (where its body ends is unknown, and treating it as a cut
  would lose every later page of the file).
Either way the cut record becomes a row with `truncated_record` true, its text the bytes present (null if the
cut is inside its header; its id is then the WARC-Record-ID if that header line arrived, else
`FILE#cut@OFFSET`). The pipeline fingerprints no cut page: it is a cluster of its own, counted in
report.json -> bad_rows.truncated_records. Bytes that are not WARC (not at the cut) stop the job with the
file's name.

Line endings: WARC's header lines end in CRLF; fastwarc cannot parse a file whose lines end in LF alone (a
file converted by a text tool) and would see its first header as cut. Such files (first line `WARC/...\n`)
are parsed by warcio, which reads both.
"""
from __future__ import annotations

import bz2
import io
import re
import zlib
from datetime import datetime, timezone
from typing import Callable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import BinaryType, BooleanType, StringType, StructField, StructType, TimestampType

PARSED_SCHEMA = StructType(
    [
        StructField("id", StringType(), False),  # WARC-Record-ID
        StructField("url", StringType(), True),  # WARC-Target-URI
        StructField("date", TimestampType(), True),  # WARC-Date
        StructField("text", BinaryType(), True),  # made a valid UTF-8 string by read_wet
        StructField("file", StringType(), False),
        StructField("truncated_record", BooleanType(), False),
    ]
)
_ARROW_SCHEMA = pa.schema([
    ("id", pa.string()), ("url", pa.string()), ("date", pa.timestamp("us", tz="UTC")), ("text", pa.binary()),
    ("file", pa.string()), ("truncated_record", pa.bool_()),
])
_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\x28\xb5\x2f\xfd": "zstd", b"WARC/": None}
_CHUNK = 1 << 14  # small pieces: a member that ends early copies the rest of its piece (unused_data)
_BATCH_ROWS, _BATCH_BYTES = 1000, 16 << 20


class NotWarc(ValueError):
    """The file is not a readable WARC/WET file (the message starts with its path)."""


def compression_of(path: str, content: bytes) -> str | None:
    """'gzip', 'bzip2', 'zstd' or None (plain WARC) from the first bytes; NotWarc for anything else."""
    for magic, kind in _MAGIC.items():
        if content.startswith(magic):
            return kind
    raise NotWarc(f"{path} is not a readable WARC/WET file: it starts with none of gzip, bzip2, zstd or 'WARC/'")


def _decompressor(kind: str):
    if kind == "gzip":
        return zlib.decompressobj(wbits=31)
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    import zstandard  # only for .zst files

    return zstandard.ZstdDecompressor().decompressobj()


class Decompressed:
    """A read(n) stream of the decompressed bytes of all members of `content`; `cut` is true once the input
    ended inside a member, and `size` counts the bytes delivered. getvalue() decompresses them all once more
    (as io.BytesIO's: the rare check of _refuse_header_without_length)."""

    def __init__(self, content: bytes, kind: str):
        self._content, self._kind = content, kind
        self._chunks = self._decompress(memoryview(content), kind)
        self._chunk, self._offset = b"", 0
        self.cut = False
        self.size = 0

    def _decompress(self, data: memoryview, kind: str) -> Iterator[bytes]:
        pos, d, fed, pending = 0, _decompressor(kind), False, b""
        while True:
            if pending:
                piece, pending = pending, b""
            elif pos < len(data):
                piece, pos = data[pos:pos + _CHUNK], pos + _CHUNK
            else:
                break
            fed = True
            out = d.decompress(piece)
            if out:
                yield out
            if d.eof:  # the member ended: what follows is the next member
                pending = d.unused_data
                d, fed = _decompressor(kind), False
        self.cut = fed  # input ended after some bytes of a member that never reached its end

    def read(self, n: int = -1) -> bytes:
        parts, want = [], n if n is not None and n >= 0 else float("inf")
        while want > 0:
            if self._offset >= len(self._chunk):
                self._chunk, self._offset = next(self._chunks, b""), 0
                if not self._chunk:
                    break
            take = int(min(want, len(self._chunk) - self._offset))
            parts.append(self._chunk[self._offset:self._offset + take])
            self._offset += take
            want -= take
        out = b"".join(parts)
        self.size += len(out)
        return out

    def tell(self) -> int:  # fastwarc asks for the stream position
        return self.size

    def getvalue(self) -> bytes:
        return Decompressed(self._content, self._kind).read()


def _iso_date(value: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(value).astimezone(timezone.utc) if value else None
    except ValueError:
        return None


def fastwarc_records(stream, native_gzip: bool = False) -> Iterator[tuple]:
    """(is conversion, id, url, date, body, Content-Length or None, stream offset) of every record, parsed by
    fastwarc; native_gzip: fastwarc decompresses (gzip, zstd, lz4) and the offset is the compressed one."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType  # here, not at the top: for WET input only (workers)

    conversion = WarcRecordType.conversion
    for record in ArchiveIterator(stream, parse_http=False, stream_detect=native_gzip):
        length = record.content_length
        if length == 0 and not record.headers.contains_key("Content-Length"):
            length = None
        yield (record.record_type == conversion, record.record_id, record.headers.get("WARC-Target-URI"),
               record.record_date, record.reader.read(), length, record.stream_pos)


def warcio_records(stream, native_gzip: bool = False) -> Iterator[tuple]:
    """The same from warcio (the parser before fastwarc, used for files with LF line endings, which fastwarc
    cannot parse; scripts/bench/wet.py compares the two). warcio always reads gzip itself."""
    from warcio.archiveiterator import ArchiveIterator  # here, not at the top: for WET files fastwarc cannot parse

    records = ArchiveIterator(stream, check_digests=False)
    for record in records:
        headers = record.rec_headers
        length = headers.get_header("Content-Length")
        body = record.content_stream().read()
        yield (record.rec_type == "conversion", headers.get_header("WARC-Record-ID"),
               headers.get_header("WARC-Target-URI"), _iso_date(headers.get_header("WARC-Date")),
               body, int(length) if length is not None else None, records.get_record_offset())


_BLANK_LINE = re.compile(rb"\r?\n\r?\n")


def _refuse_header_without_length(path: str, stream, pos: int | None, rid: str | None) -> None:
    """A record header without Content-Length is a cut only if the file ends inside it (no blank line after
    its start in the decompressed bytes, which stream.getvalue() gives once more; this path is rare); else
    NotWarc."""
    if pos is not None and _BLANK_LINE.search(stream.getvalue(), pos):
        raise NotWarc(f"{path} is not a readable WARC/WET file: record {rid or '(no WARC-Record-ID)'} has a complete "
                      "header without Content-Length, so the end of its body and every later record of the file "
                      "are unknown")


def _plain_rows(path: str, stream, records: Callable, cut: Callable[[], bool]) -> Iterator[tuple]:
    """Rows of an uncompressed WARC stream (io.BytesIO or Decompressed); `cut()` tells whether the stream is
    known to end inside a record (else a record is cut only if its body is shorter than its Content-Length or
    the file ends inside its header)."""
    cut_record = False
    try:
        for is_conversion, rid, url, date, body, length, pos in records(stream):
            if length is None:  # a header without Content-Length: a header cut by the end of the file, or refused
                _refuse_header_without_length(path, stream, pos, rid)
                yield (rid or f"{path}#cut@{stream.tell()}", url, date, None, path, True)
                return
            cut_record = len(body) < length
            if is_conversion:  # a cut record of another type (warcinfo, ...) is not a page
                yield rid, url, date, body, path, cut_record
    except NotWarc:
        raise
    except Exception as exc:  # fastwarc: OSError, warcio: ArchiveLoadFailed, zlib.error, EOFError, ...
        if not cut():
            raise NotWarc(f"{path} is not a readable WARC/WET file: {exc}") from exc
        cut_record = False  # the parser stopped at the cut: the row below reports it
    if cut() and not cut_record:  # the cut fell between records or inside a header the parser could not read
        yield f"{path}#cut@{stream.tell()}", None, None, None, path, True


def _gzip_rows(path: str, content: bytes, records: Callable) -> Iterator[tuple]:
    """Rows of a gzip WET file. fastwarc decompresses (3x faster than zlib here) but silently drops a record
    whose gzip member the file's end cuts, so the last record is held back and the file from its member on is
    decompressed and parsed again here, where a cut is seen. Common Crawl writes one member per record, so
    that is one record; a file of one member for all records is decompressed again as a whole."""
    held, start, done = None, 0, 0
    try:
        for is_conversion, rid, url, date, body, length, pos in records(io.BytesIO(content), native_gzip=True):
            if held is not None:
                yield held
                done += 1
            held, start = None, pos
            if is_conversion:
                held = (rid, url, date, body, path, length is None or len(body) < length)
    except Exception:  # read again below from the last record on, where the error is raised or is the cut
        held = None
    if content.startswith(b"\x1f\x8b", start):  # the last record's member starts here
        tail = Decompressed(content[start:], "gzip")
        yield from _plain_rows(path, tail, records, lambda: tail.cut)
        return
    whole = Decompressed(content, "gzip")  # records share a member: the offset is not a record's start
    if held is not None:
        while whole.read(_CHUNK):
            pass
        if not whole.cut:
            yield held
            return
        whole = Decompressed(content, "gzip")
    for i, row in enumerate(_plain_rows(path, whole, records, lambda: whole.cut)):
        if i >= done:
            yield row


def wet_records(path: str, content: bytes, records: Callable = fastwarc_records) -> Iterator[tuple]:
    """(id, url, date, text bytes, file, truncated_record) for every conversion record of one WET file, and one
    row for a record cut off by the end of the file (module docstring)."""
    kind = compression_of(path, content)
    if records is fastwarc_records and _lf_line_endings(content, kind):
        records = warcio_records
    if kind == "gzip" and records is fastwarc_records:
        yield from _gzip_rows(path, content, records)
    elif kind is None:
        yield from _plain_rows(path, io.BytesIO(content), records, lambda: False)
    else:
        stream = Decompressed(content, kind)
        yield from _plain_rows(path, stream, records, lambda: stream.cut)


def _lf_line_endings(content: bytes, kind: str | None) -> bool:
    """Whether the file's first line (`WARC/1.x`) ends in LF alone. Decompressed lazily: a few bytes are enough
    (a bzip2 block's worth); a stream that cannot be decompressed is left to the parser, which names the file."""
    try:
        head = content[:64] if kind is None else Decompressed(content, kind).read(64)
    except Exception:  # zlib.error, OSError, zstandard.ZstdError, EOFError
        return False
    end = head.find(b"\n")
    return end > 0 and head.startswith(b"WARC/") and head[end - 1:end] != b"\r"


def parse_file_batches(batches: Iterator[pa.RecordBatch], carried: list[str],
                       carried_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """mapInArrow: batches of (path, content, *carried) files in, batches of at most ~16 MB of pages out; the
    carried columns (partition values) are repeated on every page of their file."""
    for batch in batches:
        paths, contents = batch.column("path"), batch.column("content")
        for i in range(batch.num_rows):
            values = [batch.column(c)[i].as_py() for c in carried]

            def emit(rows: list[tuple]) -> pa.RecordBatch:
                arrays = [pa.array(col, type=f.type) for col, f in zip(zip(*rows), _ARROW_SCHEMA)]
                arrays += [pa.array([v] * len(rows), type=f.type) for v, f in zip(values, carried_schema)]  # noqa: B023 (called in this iteration)
                return pa.RecordBatch.from_arrays(arrays, names=_ARROW_SCHEMA.names + carried)

            rows, size = [], 0
            for row in wet_records(paths[i].as_py(), contents[i].as_py()):
                rows.append(row)
                size += len(row[3] or b"")
                if len(rows) >= _BATCH_ROWS or size >= _BATCH_BYTES:
                    yield emit(rows)
                    rows, size = [], 0
            if rows:
                yield emit(rows)


def read_wet(files: DataFrame) -> DataFrame:
    """Pages of the WET files in `files` (Spark's binaryFile rows, any partition columns after them): id,
    url, date (timestamp), text (string: invalid UTF-8 replaced by U+FFFD as for every other input, and
    counted by the pipeline), file, truncated_record, then the partition columns of the page's file."""
    carried = [f for f in files.schema.fields if f.name not in ("path", "modificationTime", "length", "content")]
    carried_schema = to_arrow_schema(StructType(carried))
    names = [f.name for f in carried]
    pages = files.select("path", "content", *names).mapInArrow(
        lambda batches: parse_file_batches(batches, names, carried_schema), StructType(PARSED_SCHEMA.fields + carried))
    return pages.withColumn("text", F.make_valid_utf8(F.col("text").cast("string")))
