"""Parse one generated WET file with fastwarc and with warcio, side by side, in one run.

    python scripts/bench/wet.py [--mb 60] [--repeat 3] [--keep work/bench.warc.wet.gz | --file FILE]

The file is written like Common Crawl's: one gzip member per record, a warcinfo record, then `conversion`
records of generated English and Chinese pages (~3-5 KB each). Each parser runs over the same bytes in memory:
- "job": `wet.wet_records` as the job runs it with that parser (fastwarc: fastwarc decompresses, and the
  last record's gzip member is decompressed again here to see a cut; warcio: decompressed here member by
  member, which notices a cut stream, then warcio on the plain WARC stream);
- "native gzip": the parser alone, reading gzip itself (no check for a cut file).
The four take turns; prints each one's best of --repeat seconds, MB/s of compressed input and pages/s, and
checks that both parsers give the same pages.
"""
from __future__ import annotations

import argparse
import io
import time

import numpy as np
from fastwarc.warc import ArchiveIterator as FastwarcIterator
from fastwarc.warc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator as WarcioIterator
from warcio.warcwriter import WARCWriter

from simhash_udf.evaluation.benchmark import Tables, add_json_option, best, take_turns
from simhash_udf.io.wet import fastwarc_records, warcio_records, wet_records


def generate(target_mb: float, seed: int = 7) -> bytes:
    """A gzipped WET file of about target_mb MB."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i:x}" for i in range(20000)]
                     + list("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动"))
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    writer.write_record(writer.create_warc_record("", "warcinfo", payload=io.BytesIO(b"software: bench_wet\r\n")))
    i = 0
    while buf.tell() < target_mb * 1e6:
        n = int(rng.integers(200, 1500))
        text = " ".join(words[rng.zipf(1.3, n) % len(words)]).encode()
        writer.write_record(writer.create_warc_record(
            f"https://site{i % 997}.example/page/{i}", "conversion", payload=io.BytesIO(text),
            warc_content_type="text/plain"))
        i += 1
    return buf.getvalue()


def native(records, content: bytes):
    """The parser reading gzip itself (fastwarc: stream_detect; warcio: always)."""
    if records is fastwarc_records:
        for r in FastwarcIterator(io.BytesIO(content), record_types=WarcRecordType.conversion, parse_http=False):
            yield r.headers.get("WARC-Record-ID"), r.reader.read()
    else:
        for r in WarcioIterator(io.BytesIO(content), check_digests=False):
            if r.rec_type == "conversion":
                yield r.rec_headers.get_header("WARC-Record-ID"), r.content_stream().read()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=60, help="compressed size of the generated file")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="also write the generated file here")
    ap.add_argument("--file", help="parse this .warc.wet.gz file instead of generating one")
    add_json_option(ap)
    args = ap.parse_args()
    start = time.perf_counter()
    if args.file:
        with open(args.file, "rb") as fh:
            content = fh.read()
    else:
        content = generate(args.mb)
    if args.keep:
        with open(args.keep, "wb") as fh:
            fh.write(content)
    mb = len(content) / 1e6
    print(f"{'read' if args.file else 'generated'} {mb:.1f} MB gzip WET in {time.perf_counter() - start:.1f} s")
    variants = {(name, mode): fn for name, records in (("fastwarc", fastwarc_records), ("warcio", warcio_records))
                for mode, fn in (("job", lambda records=records: wet_records("bench", content, records)),
                                 ("native gzip", lambda records=records: native(records, content)))}
    pages: dict[str, list] = {}  # each variant's pages of its last run (only those: 60 MB of pages a run)

    def parse(key: str, fn):
        def run() -> dict:
            pages[key] = list(fn())
            return {"pages": len(pages[key])}
        return run

    turns = take_turns({f"{name}, {mode}": parse(f"{name}, {mode}", fn) for (name, mode), fn in variants.items()},
                       args.repeat)
    rows = []
    for name, mode in variants:
        b = best(turns[f"{name}, {mode}"])
        rows.append([name, mode, b["seconds"], mb / b["seconds"], b["pages"] / b["seconds"], b["pages"]])
    tables = Tables(args.json)
    tables.table(["parser", "mode", "seconds", "MB/s", "pages/s", "pages"], rows, [None, None, None, "{:.1f}", "{:.0f}", None],
                 title=f"{mb:.1f} MB of gzip WET, best of {args.repeat}, the four taking turns:")
    job_pages = {name: [(r[0], r[3]) for r in pages[f"{name}, job"]] for name in ("fastwarc", "warcio")}
    assert job_pages["fastwarc"] == job_pages["warcio"], "the two parsers disagree"
    assert all(not r[5] for r in pages["fastwarc, job"]), "a record of the generated file looks cut"
    tables.note(f"same pages from both parsers: {len(job_pages['fastwarc'])}")
    tables.write()


if __name__ == "__main__":
    main()
