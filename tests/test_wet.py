"""WARC-WET input, parsed with fastwarc: conversion records become documents; a Common Crawl tree is read from
its root; a record cut off by the end of its file is counted and kept without a fingerprint; each file is
parsed once per run; bad files name themselves."""
import bz2
import gzip
import io
import os
import shutil

import pandas as pd
import pytest
from warcio.warcwriter import WARCWriter

from simhash_udf.errors import DedupError
from simhash_udf.io.wet import wet_records
from simhash_udf.job import pipeline
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import run


def wet_bytes(pages, gzip_members=True):
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=gzip_members)
    writer.write_record(writer.create_warc_record("", "warcinfo", payload=io.BytesIO(b"software: test\r\n")))
    for url, body in pages:
        writer.write_record(writer.create_warc_record(url, "conversion", payload=io.BytesIO(body),
                                                      warc_content_type="text/plain"))
    return buf.getvalue()


def write_wet(path, pages, cut=0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = wet_bytes(pages)
    with open(path, "wb") as fh:
        fh.write(data[: len(data) - cut])


ARTICLE = "北京今日召开人工智能发展大会，多位专家讨论了大模型的未来。会议持续三天，吸引了上千名观众。".encode()
# varied words: a cut keeps a part of the body (a repeated phrase compresses into the member's last bytes)
LONG = " ".join(f"word{i * 7919 % 1000} item{i}" for i in range(80)).encode()
PAGES = [("https://x.example/1", b"first page of the file with some words"), ("https://x.example/2", LONG)]


@pytest.mark.parametrize("layout", ["gzip members", "plain", "one gzip member", "bzip2"])
@pytest.mark.parametrize("cut", [0, 40, 150, 320])
def test_a_cut_record_is_flagged_never_dropped(layout, cut):
    """Whatever the compression and wherever the file ends, every page is a row and a cut one is flagged
    (warcio and fastwarc both return a gzip-cut file without its last record and without a word)."""
    plain = wet_bytes(PAGES, gzip_members=False)
    data = {"gzip members": wet_bytes(PAGES), "plain": plain, "one gzip member": gzip.compress(plain),
            "bzip2": bz2.compress(plain)}[layout]
    rows = list(wet_records("f.wet", data[: len(data) - cut]))
    complete = [r for r in rows if not r[5]]
    assert len(rows) == (2 if cut == 0 or layout != "bzip2" else 1)  # bzip2 loses its whole cut block
    assert len([r for r in rows if r[5]]) == (cut > 0)
    assert [r[1] for r in complete] == [u for u, _ in PAGES[: len(complete)]]
    assert all(r[3] == body for r, (_, body) in zip(complete, PAGES))
    if cut and layout in ("plain", "gzip members") and cut <= 150:
        cut_row = rows[-1]  # the header arrived: the page's own id and url, the text it has so far
        assert cut_row[0].startswith("<urn:uuid:") and cut_row[1] == PAGES[1][0]
        assert 0 < len(cut_row[3]) < len(LONG) and LONG.startswith(cut_row[3])


def lf_wet_bytes(pages, missing_length=None):
    """A WET file whose lines end in LF alone (a file converted by a text tool); record `missing_length` has
    no Content-Length."""
    records = [b"WARC/1.0\nWARC-Type: warcinfo\nWARC-Record-ID: <urn:uuid:info>\nContent-Length: 15\n\nsoftware: test\n\n\n"]
    for i, (url, body) in enumerate(pages):
        length = b"" if i == missing_length else b"Content-Length: %d\n" % len(body)
        records.append(b"WARC/1.0\nWARC-Type: conversion\nWARC-Record-ID: <urn:uuid:%d>\nWARC-Target-URI: %s\n"
                       b"WARC-Date: 2026-01-01T00:00:00Z\n%s\n%s\n\n" % (i, url.encode(), length, body))
    return records


def compressed(records, layout):
    plain = b"".join(records)
    return {"gzip members": b"".join(gzip.compress(r) for r in records), "plain": plain,
            "one gzip member": gzip.compress(plain), "bzip2": bz2.compress(plain)}[layout]


@pytest.mark.parametrize("layout", ["gzip members", "plain", "one gzip member", "bzip2"])
@pytest.mark.parametrize("cut", [0, 40])
def test_a_file_with_lf_line_endings_is_read_whole(layout, cut):
    """fastwarc sees the first header of such a file as cut by its end: the file was one truncated record and
    every page of it was lost. Read by warcio, every page is a row; a cut still flags the last one."""
    pages = PAGES + [("https://x.example/3", "第三页的正文".encode())]
    data = compressed(lf_wet_bytes(pages), layout)
    rows = list(wet_records("f.wet", data[: len(data) - cut]))
    complete = [r for r in rows if not r[5]]
    assert [r[1] for r in complete] == [u for u, _ in pages[: len(complete)]]
    assert [r[3] for r in complete] == [b for _, b in pages[: len(complete)]]
    if layout != "bzip2":  # (bzip2 loses its whole cut block)
        assert len(complete) == 3 - (cut > 0)
    assert len(rows) - len(complete) == (cut > 0)
    assert all(r[0] == f"<urn:uuid:{i}>" for i, r in enumerate(complete))


@pytest.mark.parametrize("layout", ["gzip members", "plain", "one gzip member", "bzip2"])
@pytest.mark.parametrize("missing", [0, 2])
def test_a_complete_header_without_content_length_is_refused_not_a_cut(layout, missing):
    """WARC requires Content-Length: without it the end of the record's body is unknown. Only the end of the
    file inside a header is a cut; a complete header without it stopped the file's reading as if cut (the
    pages after it lost, counted as one cut record). Now the file is refused, naming the record."""
    pages = PAGES + [("https://x.example/3", b"a third page")]
    data = wet_bytes(pages, gzip_members=False).replace(b"Content-Length: %d\r\n" % len(pages[missing][1]), b"", 1)
    records = [b"WARC/1.0" + r for r in data.split(b"WARC/1.0")[1:]]
    assert b"".join(records) == data and len(records) == 4
    with pytest.raises(ValueError, match=r"f\.wet is not a readable WARC/WET file: record <urn:uuid:[-0-9a-f]+> "
                                         "has a complete header without Content-Length"):
        list(wet_records("f.wet", compressed(records, layout)))
    lf = compressed(lf_wet_bytes(pages, missing_length=missing), layout)
    with pytest.raises(ValueError, match=rf"record <urn:uuid:{missing}> has a complete header without Content-Length"):
        list(wet_records("f.wet", lf))


def test_fastwarc_and_warcio_read_the_same_pages():
    from simhash_udf.io.wet import warcio_records

    data = wet_bytes(PAGES + [("https://x.example/3", "中文页面".encode() + b"\xff")])
    fast = list(wet_records("f", data))
    assert [r[:2] + r[3:] for r in fast] == [r[:2] + r[3:] for r in wet_records("f", data, warcio_records)]
    assert fast[0][2].tzinfo is not None  # WARC-Date as a timestamp


def test_common_crawl_tree_from_its_root_parsed_once(spark, tmp_path, monkeypatch):
    """The layout Common Crawl publishes, given by its root; one file was cut mid-record by its download. Each
    file is parsed once: the input files are gone after the read stage, and the run still succeeds."""
    root = tmp_path / "cc"
    wet = root / "crawl-data" / "CC-MAIN-2026-10" / "segments" / "1700000000000.1"
    write_wet(wet / "wet" / "a.warc.wet.gz", [("https://a.example/1", ARTICLE),
                                             ("https://b.example/2", b"An unrelated English page about gardening.")])
    write_wet(wet / "wet" / "b.warc.wet.gz", [("https://mirror.example/1", ARTICLE),
                                             ("https://c.example/3", b"broken \xff\xfe bytes in a page")])
    write_wet(wet / "wet" / "c.warc.wet.gz", PAGES, cut=40)
    read_input = pipeline.load_input

    def load_then_remove(*args, **kwargs):
        loaded = read_input(*args, **kwargs)
        shutil.rmtree(root)
        return loaded

    monkeypatch.setattr(pipeline, "load_input", load_then_remove)
    out = tmp_path / "out"
    report = run(load_config(["--input", str(root), "--output", str(out)]), spark)
    assert report["input_rows"] == 6 and report["exact_duplicates"] == 1
    assert report["bad_rows"]["invalid_utf8_replaced"] == 1 and report["bad_rows"]["truncated_records"] == 1
    assert report["input_files"] == {"format": "wet", "files": 3, "layout": "recursive", "partition_columns": []}
    clusters = pd.read_parquet(out / "clusters").set_index("id")
    assert clusters.index.str.startswith("<urn:uuid:").all()
    kept = pd.read_parquet(out / "kept").set_index("id")
    assert list(kept.columns) == ["url", "date", "text", "file", "truncated_record"] and len(kept) == 5
    assert kept["text"].map(type).eq(str).all() and str(kept["date"].dtype).startswith("datetime64")
    cut = kept[kept["truncated_record"]]
    assert cut["url"].tolist() == [PAGES[1][0]] and LONG.decode().startswith(cut["text"].iloc[0])
    assert pd.isna(clusters.loc[cut.index[0], "fingerprint"])  # no fingerprint: a cluster of its own


@pytest.mark.parametrize("content", [b"this is not a warc file at all", b"\x1f\x8b not really gzip"])
def test_corrupt_wet_file_names_itself(spark, tmp_path, content):
    (tmp_path / "crawl").mkdir()  # the output beside the input, not inside it (refused)
    (tmp_path / "crawl" / "bad.warc.wet.gz").write_bytes(content)
    with pytest.raises(DedupError, match=r"bad\.warc\.wet\.gz is not a readable WARC/WET file"):
        run(load_config(["--input", str(tmp_path / "crawl"), "--output", str(tmp_path / "out")]), spark)
    assert not (tmp_path / "out").exists()
