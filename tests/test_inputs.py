"""Inputs as crawls deliver them: malformed JSON lines, CSV rows with the wrong number of fields, a truncated
Parquet file, invalid UTF-8 in JSON, a 20 MB page."""
import json
import os

import pandas as pd
import pytest

from simhash_udf.config import load_config
from simhash_udf.errors import DedupError
from simhash_udf.pipeline import run


def job(spark, *argv):
    return run(load_config([str(a) for a in argv]), spark)


PAGES = [
    {"id": i, "text": f"第{i}篇新闻 北京今天举行发布会，介绍了新的城市规划方案，市民反响热烈。 page {i} about city planning"}
    for i in range(1, 6)
]


def write_jsonl(path, rows, raw_lines=()):
    with open(path, "wb") as fh:
        for row in rows:
            fh.write((json.dumps(row, ensure_ascii=False) + "\n").encode())
        for line in raw_lines:
            fh.write(line + b"\n")


def test_malformed_json_line_names_the_file(spark, tmp_path):
    (tmp_path / "in").mkdir()  # the output beside the input, not inside it (refused)
    write_jsonl(tmp_path / "in" / "good.jsonl", PAGES)
    write_jsonl(tmp_path / "in" / "bad.jsonl", PAGES[:1], [b'{"id": 99, "text": "cut off'])
    with pytest.raises(DedupError, match=r"1 JSON Lines rows cannot be parsed.*bad\.jsonl.*cut off"):
        job(spark, "--input", tmp_path / "in", "--input-format", "json", "--output", tmp_path / "out")
    assert not os.path.exists(tmp_path / "out")


def test_invalid_utf8_in_json_is_replaced_and_counted(spark, tmp_path):
    bad = b'{"id": 42, "text": "copy of a page \xff\xfe with broken bytes \xc3"}'
    write_jsonl(tmp_path / "in.jsonl", PAGES, [bad, b"", b"   "])  # blank lines are not rows
    report = job(spark, "--input", tmp_path / "in.jsonl", "--output", tmp_path / "out")
    clusters = pd.read_parquet(tmp_path / "out" / "clusters")
    assert sorted(clusters["id"]) == [1, 2, 3, 4, 5, 42]
    assert clusters.set_index("id").loc[42, "fingerprint"] is not None
    assert report["bad_rows"]["invalid_utf8_replaced"] == 1


def test_csv_row_with_wrong_field_count_names_the_file(spark, tmp_path):
    (tmp_path / "a.csv").write_text('id,text\n1,"a page,\nwith a quoted newline"\n2,another page\n')
    pd.read_csv(tmp_path / "a.csv")  # the good file is valid CSV
    report = job(spark, "--input", tmp_path / "a.csv", "--output", tmp_path / "ok")
    assert report["input_rows"] == 2
    (tmp_path / "b.csv").write_text("id,text\n3,fine\n4,too,many,fields\n")
    with pytest.raises(DedupError, match=r"1 CSV rows cannot be parsed.*b\.csv.*too,many,fields"):
        job(spark, "--input", tmp_path / "b.csv", "--output", tmp_path / "out")


def test_truncated_parquet_names_the_file(spark, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    pd.DataFrame(PAGES).to_parquet(d / "part-0.parquet")
    data = (d / "part-0.parquet").read_bytes()
    (d / "part-1.parquet").write_bytes(data[: len(data) // 2])  # a copy cut off mid-write
    with pytest.raises(DedupError, match=r"input file \S*part-1\.parquet cannot be read"):
        job(spark, "--input", d, "--output", tmp_path / "out")
    assert not os.path.exists(tmp_path / "out")
    assert not [p for p in os.listdir(tmp_path) if "__staging" in p]


def test_20mb_page_is_capped_and_counted(spark, tmp_path):
    sentence = "城市规划方案公布后，市民在论坛上展开了热烈讨论，专家认为交通和住房是关键。Traffic and housing matter. "
    huge = sentence * (20_000_000 // len(sentence.encode()) + 1)
    assert len(huge.encode()) >= 20_000_000
    rows = PAGES + [{"id": 100, "text": huge}, {"id": 101, "text": huge[: 2_000_000]}]
    pd.DataFrame(rows).to_parquet(tmp_path / "in.parquet")
    report = job(spark, "--input", tmp_path / "in.parquet", "--output", tmp_path / "out")
    clusters = pd.read_parquet(tmp_path / "out" / "clusters").set_index("id")
    assert report["bad_rows"]["truncated"] == 2  # both are longer than max_text_chars (1,000,000 characters)
    # the same first million characters: the same fingerprint, so the two pages are one cluster
    assert clusters.loc[100, "fingerprint"] == clusters.loc[101, "fingerprint"]
    assert clusters.loc[101, "cluster_id"] == 100
