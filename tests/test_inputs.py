"""Inputs as crawls deliver them: malformed JSON lines, CSV rows with the wrong number of fields, a truncated
Parquet file, invalid UTF-8 in JSON, a 20 MB page."""
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_udf.errors import DedupError
from simhash_udf.job.config import load_config
from simhash_udf.job.pipeline import run


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


def test_parquet_files_with_different_columns_keep_every_column(spark, tmp_path):
    """Old code: Spark took the schema of one file's footer, so a column that only some files have (added during
    the day) was missing from kept/ for every row; now the schemas are merged, and files that disagree on a
    column's type are refused."""
    (tmp_path / "in").mkdir()
    pd.DataFrame({"id": [1, 2], "text": ["first page here", "second page here"]}).to_parquet(tmp_path / "in" / "a.parquet")
    pd.DataFrame({"id": [3], "text": ["third page here"], "lang": ["en"]}).to_parquet(tmp_path / "in" / "b.parquet")
    job(spark, "--input", tmp_path / "in", "--output", tmp_path / "out")
    kept = pd.read_parquet(tmp_path / "out" / "kept").sort_values("id")
    assert list(kept["id"]) == [1, 2, 3] and list(kept["lang"].fillna("-")) == ["-", "-", "en"]
    pd.DataFrame({"id": ["4"], "text": ["fourth page"]}).to_parquet(tmp_path / "in" / "c.parquet")
    with pytest.raises(DedupError, match=r"Parquet files of input .* do not agree on their columns' types"):
        job(spark, "--input", tmp_path / "in", "--output", tmp_path / "out2")


def test_csv_files_whose_header_differs_are_refused(spark, tmp_path):
    """Old code: Spark took the columns by position and dropped every file's first line unchecked, so a file
    with its columns in another order had its text read as ids (and its ids fingerprinted), and a part file
    without a header lost its first row; both silently."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("id,text\n1,first page\n2,second page\n")
    (tmp_path / "in" / "b.csv").write_text("text,id\nthird page,3\n")
    with pytest.raises(DedupError, match=r"b\.csv"):
        job(spark, "--input", tmp_path / "in", "--output", tmp_path / "out")
    (tmp_path / "in" / "b.csv").write_text("3,third page\n4,fourth page\n")  # a part without a header
    with pytest.raises(DedupError, match=r"b\.csv"):
        job(spark, "--input", tmp_path / "in", "--output", tmp_path / "out")
    assert not (tmp_path / "out").exists()


CSV_PAGES = ["first page about apples, pears and the orchards of the northern valley in autumn",
             "second page about the harbour, its ferries and the fish market on a windy morning"]


def test_csv_values_are_read_as_written(spark, tmp_path):
    """CSV columns are text: before, types were inferred, ids 007 and 7 both became 7 (the run stopped on
    repeated ids) and a 20-digit number became a double, in clusters/ and kept/. The --keep earliest column
    alone is typed (inferred), so that 9 comes before 10 (as text, 10 would)."""
    import pyarrow.parquet as pq

    (tmp_path / "a.csv").write_text("id,text,zip,big,crawled\n"
                                    f'007,"{CSV_PAGES[0]}",01234,12345678901234567891,10\n'
                                    f'7,"{CSV_PAGES[0]}",00042,12345678901234567892,9\n'
                                    f'x,"{CSV_PAGES[1]}",00007,00000000000000000001,11\n')
    job(spark, "--input", tmp_path / "a.csv", "--output", tmp_path / "out", "--keep", "earliest:crawled")
    clusters = pq.read_table(tmp_path / "out" / "clusters")
    assert str(clusters.schema.field("id").type) == "string"
    by_id = clusters.to_pandas().set_index("id")
    assert sorted(by_id.index) == ["007", "7", "x"]
    assert by_id.loc["007", "cluster_id"] == "7" and by_id.loc["007", "is_duplicate"]
    assert not by_id.loc["7", "is_duplicate"] and not by_id.loc["x", "is_duplicate"]
    kept = pq.read_table(tmp_path / "out" / "kept")
    assert kept.schema.field("crawled").type == "int32"
    kept = kept.to_pandas().sort_values("id")
    assert list(kept["id"]) == ["7", "x"] and list(kept["zip"]) == ["00042", "00007"]
    assert list(kept["big"]) == ["12345678901234567892", "00000000000000000001"]


def test_csv_ids_against_a_history_of_typed_ids(spark, tmp_path):
    """A history whose ids earlier CSV runs stored typed (its pinned id type bigint, as such a run left it)
    goes on: today's text ids are cast to its type when each reads back as written, and the run stops, naming
    one, when an id such as 007 does not."""
    import pyarrow.parquet as pq

    from simhash_udf.io.history import ID_TYPE_FILE

    hist = tmp_path / "history"
    hist.mkdir()
    (hist / ID_TYPE_FILE).write_text("bigint\n")
    (tmp_path / "day2.csv").write_text(f'id,text\n3,"{CSV_PAGES[0]}"\n4,"{CSV_PAGES[1]}"\n')
    job(spark, "--input", tmp_path / "day2.csv", "--output", tmp_path / "out2", "--history", hist,
        "--run-date", "2026-03-02")
    assert str(pq.read_table(tmp_path / "out2" / "clusters").schema.field("id").type) == "int64"
    (tmp_path / "day3.csv").write_text(f'id,text\n5,"{CSV_PAGES[1]}"\n007,"a page of its own about buses"\n')
    with pytest.raises(DedupError, match=r"ids such as '007' are not bigint as written: start a new --history"):
        job(spark, "--input", tmp_path / "day3.csv", "--output", tmp_path / "out3", "--history", hist,
            "--run-date", "2026-03-03")
    assert not (tmp_path / "out3").exists()


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


# --- where the files are, how they are compressed, and inputs with no rows ---

def rows_of(start, stop):
    return [{"id": i, "text": f"page {i}: {' '.join(f'w{i * 31 + j}' for j in range(12))}"} for i in range(start, stop)]


def write_lines(path, rows, compress=None):
    import bz2
    import gzip

    import zstandard

    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    data = {None: lambda d: d, "gz": gzip.compress, "bz2": bz2.compress,
            "zst": zstandard.ZstdCompressor().compress}[compress](data)
    with open(path, "wb") as fh:
        fh.write(data)


def loaded(spark, path, fmt="auto"):
    from simhash_udf.io.read import load_input

    return load_input(spark, str(path), fmt, lambda df: df)


def test_subfolders_and_compressed_files_are_all_read(spark, tmp_path):
    """Files in subfolders of --input are read (not only the top folder's) and so are .gz/.bz2/.zst JSON Lines;
    hidden files and folders are skipped, as Spark does."""
    root = tmp_path / "crawl"
    write_lines(root / "top.jsonl", rows_of(0, 10))
    write_lines(root / "2026" / "01" / "a.jsonl.gz", rows_of(10, 20), "gz")
    write_lines(root / "2026" / "02" / "b.jsonl.bz2", rows_of(20, 30), "bz2")
    write_lines(root / "more" / "c.jsonl.zst", rows_of(30, 40), "zst")
    write_lines(root / "_temporary" / "0" / "part.jsonl", rows_of(100, 102))  # a writer's leftovers: hidden
    write_lines(root / ".top.jsonl.crc", rows_of(200, 201))
    report = job(spark, "--input", root, "--output", tmp_path / "out")
    assert report["input_rows"] == 40
    assert report["input_files"] == {"format": "json", "files": 4, "layout": "recursive", "partition_columns": []}
    assert sorted(pd.read_parquet(tmp_path / "out" / "clusters")["id"]) == list(range(40))


def test_local_input_bytes_are_the_bytes_of_the_files_spark_reads(spark, tmp_path):
    """The size a local run's JVM options are chosen by (session.small_run_conf) is taken before any JVM starts:
    it is the bytes of the files Spark's own reader lists (hidden files and folders skipped), a compressed file
    counted 4x; inputs it cannot size without Spark are None; a tree is not walked past the limit."""
    from simhash_udf.io.paths import local_input_bytes

    root = tmp_path / "crawl"
    sizes = {"a.jsonl": 100, "b.jsonl.gz": 50, "_SUCCESS": 1000, ".a.jsonl.crc": 12, "_temporary/0/x.jsonl": 5000,
             "day=1/c.parquet": 30, "sub/.hidden/d.jsonl": 7, "sub/e.jsonl.bz2": 9, "sub/f.jsonl._COPYING_": 11,
             "odd[1].jsonl": 3}
    for name, size in sizes.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(os.urandom(size))
    listed = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(str(root)).select(
        "path", "length").collect()
    spark_bytes = sum(r["length"] * (4 if r["path"].endswith((".gz", ".bz2", ".zst")) else 1) for r in listed)
    assert spark_bytes == 100 + 4 * 50 + 30 + 4 * 9 + 3
    assert local_input_bytes(str(root), 10**9) == spark_bytes
    assert local_input_bytes(f"file://{root}", 10**9) == local_input_bytes(f"file:{root}", 10**9) == spark_bytes
    assert local_input_bytes(f"{root}/?.jsonl*", 10**9) == 300
    assert local_input_bytes(f"{root}/odd[1].jsonl", 10**9) == 3  # an existing name is literal, as for Spark
    assert local_input_bytes(f"{root}/sub", 10**9) == 36
    assert local_input_bytes(str(root), 150) > 150  # stopped at the first file that passes the limit
    for elsewhere in (f"{root}/{{a,b}}.jsonl", "hdfs://nn/crawl", "s3a://bucket/crawl", str(tmp_path / "missing")):
        assert local_input_bytes(elsewhere, 10**9) is None, elsewhere
    (root / "sub" / "gone.jsonl").symlink_to(tmp_path / "nowhere")  # cannot be sized: no size, no error
    assert local_input_bytes(str(root), 10**9) is None


def test_partition_directories_become_columns(spark, tmp_path):
    root = tmp_path / "crawl"
    write_lines(root / "day=2026-01-01" / "a.jsonl", rows_of(0, 3))
    write_lines(root / "day=2026-01-02" / "b.jsonl.gz", rows_of(3, 5), "gz")
    got = loaded(spark, root)
    assert got.rows == 5 and got.files.layout == "partitioned" and got.files.partition_keys == ["day"]
    days = {r["id"]: str(r["day"]) for r in got.df.select("id", "day").collect()}
    assert days == {0: "2026-01-01", 1: "2026-01-01", 2: "2026-01-01", 3: "2026-01-02", 4: "2026-01-02"}


def test_globs_and_names_with_glob_characters(spark, tmp_path):
    """A glob reads what it matches; an existing file whose name holds glob characters is that file (neither
    may be called 'does not exist')."""
    write_lines(tmp_path / "day-1" / "a.jsonl", rows_of(0, 2))
    write_lines(tmp_path / "day-2" / "b.jsonl", rows_of(2, 5))
    write_lines(tmp_path / "day-2" / "skip.csv.gz", [])
    write_lines(tmp_path / "odd[1].jsonl", rows_of(5, 6))
    for path, rows in [(f"{tmp_path}/odd[1].jsonl", 1), (f"{tmp_path}/day-*/*.jsonl", 5), (f"{tmp_path}/day-{{1,2}}/*.jsonl", 5)]:
        cfg = load_config(["--input", path, "--output", str(tmp_path / "out")])
        assert loaded(spark, cfg.input).rows == rows, path
    with pytest.raises(DedupError, match=r"matches no file or directory: fix --input"):
        loaded(spark, f"{tmp_path}/day-*/*.parquet")


def test_json_page_over_the_parsers_limit_is_read_then_capped(spark, tmp_path):
    """Jackson's default limit is 20,000,000 characters per string (the job must not stop on it as 'malformed');
    the page is read whole, fingerprinted up to --max-text-chars and counted as truncated."""
    from pyspark.sql import functions as F

    from simhash_udf.job.stages import prepare_documents

    write_lines(tmp_path / "in.jsonl", rows_of(0, 1) + [{"id": 1, "text": "word " * 4_000_001}])
    got = loaded(spark, tmp_path / "in.jsonl")
    cfg = load_config(["--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out")])
    docs = prepare_documents(got.df, cfg)
    stats = docs.agg(F.sum(F.col("truncated").cast("int")).alias("t"), F.max(F.length("text")).alias("n")).first()
    assert got.rows == 2 and (stats["t"], stats["n"]) == (1, cfg.max_text_chars)
    assert got.df.where("id = 1").select(F.length("text")).first()[0] == 20_000_005


def test_zero_rows_fail_unless_allow_empty(spark, tmp_path):
    """A run that reads 0 rows stops with exit 2 and says so (not blaming --id-col for an empty .jsonl, no
    traceback for an empty .csv, the same message for a folder with only _SUCCESS); --allow-empty writes an
    empty, finished output."""
    (tmp_path / "empty.jsonl").write_text("\n  \n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("id,text\n")
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "_SUCCESS").write_text("")
    for name in ("empty.jsonl", "empty.csv", "header.csv", "done"):
        with pytest.raises(DedupError, match=r"holds no .*pass --allow-empty") as err:
            job(spark, "--input", tmp_path / name, "--output", tmp_path / "out")
        assert "--id-col" not in str(err.value), name
        assert not (tmp_path / "out").exists()
    for name in ("header.csv", "empty.jsonl"):
        out = tmp_path / f"out-{name}"
        report = job(spark, "--input", tmp_path / name, "--output", out, "--allow-empty")
        assert report["input_rows"] == 0 and report["kept"] == 0 and "holds no" in report["empty_input"]
        assert sorted(os.listdir(out)) == ["_SUCCESS", "clusters", "kept", "report.json"]
        clusters = pd.read_parquet(out / "clusters")
        assert len(clusters) == 0 and list(clusters.columns) == ["id", "fingerprint", "signature", "cluster_id",
                                                                 "is_duplicate", "similarity"]


@pytest.mark.parametrize("case,message", [
    ("map id", r"the id column 'id' has type map<string,int>: ids must be strings, integers"),
    ("repeated key", r"holds the key 'text' twice.*dup\.jsonl.*remove the repeated key"),
    ("s3a", r"no Hadoop file system for s3a:// .*--packages org\.apache\.hadoop:hadoop-aws:\d+\.\d+\.\d+"),
    ("xz", r"1 input files are compressed with \.xz.*recompress them as \.gz, \.bz2 or \.zst"),
])
def test_unreadable_inputs_are_clear_errors(spark, tmp_path, case, message):
    """Each was an exit-1 traceback (or, for .xz, 'rows cannot be parsed') before."""
    if case == "map id":
        spark.createDataFrame([({"a": 1}, "some text")], "id map<string,int>, text string").write.parquet(
            str(tmp_path / "in"))
        path = tmp_path / "in"
    elif case == "repeated key":
        path = tmp_path / "crawl"  # the output beside the input, not inside it (refused)
        path.mkdir()
        write_lines(path / "ok.jsonl", rows_of(0, 2))
        (path / "dup.jsonl").write_text('{"id": 7, "text": "one", "Text": "two"}\n')
    elif case == "s3a":
        path = "s3a://crawl-bucket/2026-01-01/"
    else:
        (tmp_path / "in.jsonl.xz").write_bytes(b"\xfd7zXZ\x00\x00 compressed bytes")
        path = tmp_path / "in.jsonl.xz"
    with pytest.raises(DedupError, match=message):
        job(spark, "--input", path, "--output", tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("exception", ["java.nio.file.AccessDeniedException",
                                       "org.apache.hadoop.security.AccessControlException"])
def test_a_directory_the_user_may_not_list_is_a_clear_error(spark, exception):
    """Listing an input directory the job's user may not read (`chmod 000` on a subdirectory, run as a user
    other than root) raised AccessDeniedException on the driver, and the job ended in a traceback (exit 1);
    HDFS raises AccessControlException. This suite runs as root, which reads every directory, so the JVM throws
    the exception itself here (scala.util.Failure.get); the run as another user is in the closing note."""
    from py4j.protocol import Py4JJavaError

    from simhash_udf.io.read import input_error

    jvm = spark.sparkContext._jvm
    if exception.startswith("java.nio"):
        error = jvm.java.nio.file.AccessDeniedException("/crawl/2026-11-27/b", None, "Permission denied")
    else:
        error = jvm.org.apache.hadoop.security.AccessControlException(
            "Permission denied: user=etl, access=READ_EXECUTE, inode=\"/crawl/2026-11-27/b\":root:root:drwx------")
    with pytest.raises(Py4JJavaError) as thrown:
        jvm.scala.util.Failure(error).get()
    clear = input_error(thrown.value)
    assert clear is not None, "a traceback, not a message"
    assert str(clear).startswith("permission denied: ") and "/crawl/2026-11-27/b" in str(clear)
    assert "give the user this job runs as access to it" in str(clear) and "\n" not in str(clear)


def _prepared_by_definition(value: bytes | None, repaired: str | None, cap: int) -> tuple:
    """(text, text_null, invalid_utf8, truncated) of one binary text by the definition, given the text with its
    invalid UTF-8 replaced (`repaired`: Spark's make_valid_utf8, the job's reference for the replacement):
    invalid bytes and a U+FFFD already there counted, the text cut to `cap` characters and counted when it was
    longer."""
    if value is None:
        return None, True, False, False
    try:
        value.decode("utf-8")
        invalid = "\ufffd" in repaired
    except UnicodeDecodeError:
        invalid = True
    return repaired[:cap], False, invalid, len(repaired) > cap


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(
    st.none(),
    st.text(alphabet=st.sampled_from("ab 中文\U0001F600\ufffd"), max_size=12).map(str.encode),
    st.binary(max_size=12),
), min_size=1, max_size=40), st.integers(1, 8))
def test_texts_are_made_valid_and_capped_by_their_definition(spark, tmp_path, values, cap):
    """prepare_documents (the job's UTF-8 repair, cap and counts before the fingerprints) against plain Python
    on binary texts: characters of 1 to 4 bytes around the cap (its byte-length shortcut must not skip a text
    of more characters), invalid bytes, U+FFFD already present, nulls. Spark's own replacement of invalid
    bytes is the reference for the repaired text (Python's decoder groups some invalid sequences differently)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from simhash_udf.job.stages import REPLACEMENT_FLAG, prepare_documents
    from simhash_udf.spark.fingerprint import with_fingerprints

    table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "text": pa.array(values, pa.binary())})
    path = str(tmp_path / "texts.parquet")  # one file for every example, rewritten by each
    pq.write_table(table, path)
    cfg = load_config(["--input", path, "--output", str(tmp_path / "out"), "--max-text-chars", str(cap)])
    raw = spark.read.parquet(path)
    prepared = prepare_documents(raw, cfg)
    # the count of invalid UTF-8 is completed by the fingerprint pass (U+FFFD within the cap)
    counted = with_fingerprints(prepared, "text", cfg.features, replacement_flag=REPLACEMENT_FLAG)
    got = prepared.drop(REPLACEMENT_FLAG).join(counted.select("id", REPLACEMENT_FLAG), "id").join(
        raw.select("id", F.make_valid_utf8(F.col("text").cast("string")).alias("repaired")), "id").orderBy("id").collect()
    assert len(got) == len(values)
    for row, value in zip(got, values):
        expect = _prepared_by_definition(value, row["repaired"], cap)
        assert (row["text"], row["text_null"], row["invalid_utf8"], row["truncated"]) == expect, (value, row)


# --- an empty text file, Parquet files of two schemas, and what the log shows for input errors ---

def test_an_empty_text_file_is_a_document_counted_as_a_bad_row(spark, tmp_path):
    """Spark's file scans skip files of 0 bytes: 8 text files, one of them empty, were 7 rows and no bad row. Each
    empty file is now a document of empty text (counted as a text without features, kept as a cluster of its own),
    its id its path as Spark gives it for any other file, its partition column its directory's."""
    root = tmp_path / "pages"
    names = {i: f"{i}.txt" for i in range(8)} | {8: "with space.txt"}
    for i, name in names.items():
        day = root / f"day=2026-01-0{1 + i % 2}"
        day.mkdir(parents=True, exist_ok=True)
        (day / name).write_text("" if i in (5, 8) else f"page {i}: " + " ".join(f"w{i * 31 + j}" for j in range(12)))
    report = job(spark, "--input", root, "--input-format", "text", "--output", tmp_path / "out")
    assert report["input_rows"] == 9 and report["bad_rows"]["no_features"] == 2
    ids = {i: f"file://{root}/day=2026-01-0{1 + i % 2}/{name.replace(' ', '%20')}" for i, name in names.items()}
    clusters = pd.read_parquet(tmp_path / "out" / "clusters").set_index("id")
    assert set(clusters.index) == set(ids.values())  # the same form for the files Spark read and the empty ones
    for i in (5, 8):
        assert clusters.loc[ids[i], "cluster_id"] == ids[i] and not clusters.loc[ids[i], "is_duplicate"]
    kept = pd.read_parquet(tmp_path / "out" / "kept").set_index("id")
    assert kept.loc[ids[5], "text"] == "" and str(kept.loc[ids[5], "day"]) == "2026-01-02"
    assert str(kept.loc[ids[0], "day"]) == "2026-01-01"


def test_parquet_files_whose_types_differ_name_the_column_types_and_files(spark, tmp_path):
    """Before, the message was Spark's first line, `Failed merging schemas:`, without the column. The Java stack
    trace of the failed task is not logged (quiet_task_failures), and the loggers are put back afterwards."""
    d = tmp_path / "in"
    d.mkdir()
    pd.DataFrame({"id": [1, 2], "text": ["first page here", "second page here"]}).to_parquet(d / "a.parquet")
    pd.DataFrame({"id": ["3"], "text": ["third page here"]}).to_parquet(d / "c.parquet")
    with pytest.raises(DedupError) as err:
        job(spark, "--input", d, "--output", tmp_path / "out")
    found = re.search(r"column 'id' is (\w+) in some files \(e\.g\. (\S+)\) and (\w+) in others \(e\.g\. (\S+)\): make "
                      r"them agree upstream \(write 'id' with one type in every file\)", str(err.value))
    assert found, str(err.value)
    assert {found[1]: found[2].rsplit("/", 1)[-1], found[3]: found[4].rsplit("/", 1)[-1]} == {
        "BIGINT": "a.parquet", "STRING": "c.parquet"}
    from simhash_udf.io.read import TASK_FAILURE_LOGGERS

    config = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getContext(False).getConfiguration()
    assert all(config.getLoggerConfig(name).getName() != name for name in TASK_FAILURE_LOGGERS)


def test_struct_types_in_spark_messages_are_split_by_field():
    from simhash_udf.io.read import differing_column, struct_fields

    assert struct_fields("STRUCT<id: BIGINT, `a, b`: DECIMAL(10,2), m: MAP<STRING, STRUCT<x: INT>>, `q``t`: DATE>") == [
        ("id", "BIGINT"), ("a, b", "DECIMAL(10,2)"), ("m", "MAP<STRING, STRUCT<x: INT>>"), ("q`t", "DATE")]
    assert differing_column("STRUCT<id: BIGINT, s: STRUCT<x: INT, y: STRING>>",
                            "STRUCT<id: BIGINT, s: STRUCT<x: INT, y: BIGINT>>") == ("s.y", "STRING", "BIGINT")
    assert differing_column("STRUCT<id: BIGINT>", "STRUCT<id: BIGINT, lang: STRING>") is None


CLI_ENV = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SIMHASH_DEDUP_MASTER="local[1]", SIMHASH_DEDUP_DRIVER_MEMORY="1g")


@pytest.mark.spark
def test_input_errors_on_the_command_line_print_no_java_stack_trace(tmp_path):
    """Before, the executor's and the scheduler's logs printed the failed task's Java stack trace (60-80 lines of
    `at org.apache...`) above the job's one clear message. Three real runs of the command line, side by side."""
    schemas, damaged = tmp_path / "schemas", tmp_path / "damaged"
    for d in (schemas, damaged):
        d.mkdir()
    pd.DataFrame(PAGES).to_parquet(schemas / "a.parquet")
    pd.DataFrame({"id": ["9"], "text": ["a page whose id is text"]}).to_parquet(schemas / "b.parquet")
    pd.DataFrame(PAGES).to_parquet(damaged / "part-0.parquet")
    data = (damaged / "part-0.parquet").read_bytes()
    (damaged / "part-1.parquet").write_bytes(data[: len(data) // 2])
    cases = {schemas: r"error: the Parquet files of input .* column 'id' is",
             damaged: r"error: input file \S*part-1\.parquet cannot be read",
             f"{tmp_path}/crawl/{{a,b}}/*.parquet": r"error: input .* matches no file or directory: fix --input"}
    runs = {path: subprocess.Popen([sys.executable, "-m", "simhash_udf.job.cli", "--input", str(path), "--output",
                                    str(tmp_path / f"out{i}")], env=CLI_ENV, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True) for i, path in enumerate(cases)}
    for path, proc in runs.items():
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 2 and re.search(cases[path], stderr), stderr[-3000:]
        assert not re.search(r"^\s+at (org\.apache|java\.|scala\.)", stderr, re.M), stderr[-5000:]
        assert "Traceback" not in stderr


@pytest.mark.parametrize("ids", [[1, 2, 3, 4, 5, 6, 7], [1, 2, 2, 3, 4, 5, 6], [1, None, 3, 4, 5, 6, 7],
                                 [None, None, 3, 4, 5, 6, 7], [7, 7, 7, 7, 7, 7, 7]])
def test_the_counting_pass_checks_the_ids_of_a_small_input(spark, ids):
    """partition_rows: with the id column, the one pass that counts each read partition's rows also says whether
    every id is non-null and unique (then the job skips check_ids' pass); where they are, its counts are a plain
    count's, partition by partition, whatever the partitioning."""
    from pyspark.sql import functions as F

    from simhash_udf.io.read import partition_rows

    for partitions in (1, 3):
        df = spark.createDataFrame([(i, f"page {n}") for n, i in enumerate(ids)], "id long, text string").repartition(
            partitions)
        plain = sorted(int(r[1]) for r in df.groupBy(F.spark_partition_id()).count().collect())
        counts, unique = partition_rows(df, "id")
        assert unique == (None not in ids and len(set(ids)) == len(ids))
        assert sum(counts) == len(ids)
        if unique:
            assert sorted(counts) == plain
        without_ids, checked = partition_rows(df)
        assert sorted(without_ids) == plain and checked is False
