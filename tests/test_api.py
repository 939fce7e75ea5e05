"""The public API: the fingerprint as a pyspark.ml Transformer, the near-duplicate step on a DataFrame, and
a notebook's session left as it was."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pyspark.sql import functions as F

import simhash_udf
from simhash_udf import DedupError, SimHashFingerprint, near_duplicates
from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_batch
from simhash_udf.core.signature import SignatureSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = ["今天北京的天气很好，我们去公园散步。", "The quick brown fox jumps over the lazy dog again.", "",
         None, "Ｈｅｌｌｏ　ＷＯＲＬＤ，full-width text", "bad utf-8 \udcff?"]


def test_transformer_keeps_columns_and_reads_binary_text(spark):
    rows = [(i, t, f"u{i}") for i, t in enumerate(TEXTS) if t is None or "\udcff" not in t]
    df = spark.createDataFrame(rows, "id int, text string, url string")
    out = SimHashFingerprint(outputCol="fp", signatureCol="sig").transform(df)
    assert out.columns == ["id", "text", "url", "fp", "sig"]
    got = {r.id: (r.fp, r.sig) for r in out.collect()}
    texts = [t for _, t, _ in rows]
    fps, counts, sigs = fingerprint_batch(texts, FeatureSpec(), SignatureSpec())
    for (i, _, _), fp, n, sig in zip(rows, fps, counts, sigs):
        assert got[i][0] == (int(fp) if n > 0 else None), i  # the core's value; null without features
        assert (got[i][1] is None) == (n <= 0) and (n <= 0 or bytes(got[i][1]) == sig.tobytes()), i
    binary = df.withColumn("text", F.encode("text", "UTF-8"))
    same = {r.id: r.fp for r in SimHashFingerprint(outputCol="fp").transform(binary).collect()}
    assert same == {i: v[0] for i, v in got.items()}


def test_transformer_errors_name_the_param(spark):
    df = spark.createDataFrame([(1, "a b c")], "id int, text string")
    with pytest.raises(ValueError, match="tokenizer"):
        SimHashFingerprint(tokenizer="nope").transform(df)
    with pytest.raises(ValueError, match="inputCol 'body'"):
        SimHashFingerprint(inputCol="body").transform(df)
    with pytest.raises(ValueError, match="already exist"):
        SimHashFingerprint(outputCol="text").transform(df)
    with pytest.raises(DedupError, match="signature"):
        near_duplicates(df.withColumn("fingerprint", F.lit(1).cast("long")), fingerprint_col="fingerprint")
    with pytest.raises(DedupError, match="DedupConfig"):
        near_duplicates(df, no_such_option=1)


def test_near_duplicates_leaves_the_session_as_it_was(spark):
    keys = ("spark.sql.execution.arrow.maxRecordsPerBatch", "spark.sql.execution.arrow.maxBytesPerBatch",
            "spark.sql.shuffle.partitions")
    before = {k: spark.conf.get(k, None) for k in keys}
    text = "一段足够长的中文文本，用来测试近似重复的检测是否正确。" * 3
    df = spark.createDataFrame([(1, text), (2, text + "!"), (3, "something else entirely, in English")],
                               "id long, text string")
    result = near_duplicates(df, shuffle_partitions=2, arrow_batch_size=7)
    rows = {r.id: (r.cluster_id, r.is_duplicate) for r in result.clusters.collect()}
    assert rows == {1: (1, False), 2: (1, True), 3: (3, False)}
    assert sorted(r.id for r in result.kept.collect()) == [1, 3]
    assert result.report["duplicates"] == 1 and result.report["input_rows"] == 3
    result.unpersist()
    assert {k: spark.conf.get(k, None) for k in keys} == before


def test_core_does_not_pull_pyspark_through_the_package():
    assert "SimHashFingerprint" in dir(simhash_udf)
    with pytest.raises(AttributeError):
        simhash_udf.no_such_thing  # noqa: B018


@pytest.mark.slow
def test_notebook_on_its_own_session(tmp_path):
    """A Pipeline with another Transformer, saved and loaded; the near-duplicate step on fingerprints and on
    text; the CLI on the same session; the tfidf-corpus Estimator saved and loaded; the session still usable
    with its settings and checkpoint directory unchanged (tests/notebook_api_check.py)."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "notebook_api_check.py")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "CHECKS OK" in proc.stdout, proc.stderr[-4000:]
