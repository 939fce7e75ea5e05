"""WARC-WET input, read with warcio: conversion records become documents; bad files name themselves."""
import io

import pandas as pd
import pytest
from warcio.warcwriter import WARCWriter

from simhash_udf.config import load_config
from simhash_udf.pipeline import run


def write_wet(path, pages):
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        writer.write_record(writer.create_warc_record("", "warcinfo", payload=io.BytesIO(b"software: test\r\n")))
        for url, body in pages:
            record = writer.create_warc_record(
                url, "conversion", payload=io.BytesIO(body), warc_content_type="text/plain"
            )
            writer.write_record(record)


def test_wet_pages_are_deduplicated(spark, tmp_path):
    article = "北京今日召开人工智能发展大会，多位专家讨论了大模型的未来。会议持续三天，吸引了上千名观众。".encode()
    crawl = tmp_path / "crawl"  # the output beside the input, not inside it (refused)
    crawl.mkdir()
    write_wet(crawl / "a.warc.wet.gz", [("https://a.example/1", article),
                                       ("https://b.example/2", b"An unrelated English page about gardening.")])
    write_wet(crawl / "b.warc.wet.gz", [("https://mirror.example/1", article),
                                       ("https://c.example/3", b"broken \xff\xfe bytes in a page")])
    out = tmp_path / "out"
    report = run(load_config(["--input", str(crawl), "--output", str(out)]), spark)
    assert report["input_rows"] == 4 and report["exact_duplicates"] == 1
    assert report["bad_rows"]["invalid_utf8_replaced"] == 1
    clusters = pd.read_parquet(out / "clusters")
    assert clusters["id"].str.startswith("<urn:uuid:").all()
    kept = pd.read_parquet(out / "kept")
    assert set(kept.columns) == {"id", "url", "date", "text", "file"} and len(kept) == 3


@pytest.mark.parametrize("content", [b"this is not a warc file at all", b"\x1f\x8b not really gzip"])
def test_corrupt_wet_file_names_itself(spark, tmp_path, content):
    (tmp_path / "crawl").mkdir()  # the output beside the input, not inside it (refused)
    (tmp_path / "crawl" / "bad.warc.wet.gz").write_bytes(content)
    with pytest.raises(Exception, match=r"bad\.warc\.wet\.gz is not a readable WARC/WET file"):
        run(load_config(["--input", str(tmp_path / "crawl"), "--output", str(tmp_path / "out")]), spark)
    assert not (tmp_path / "out").exists()
