"""SimHashDedup: the near-duplicate step as a pyspark.ml stage after SimHashFingerprint in a Pipeline."""
from __future__ import annotations

import os

import pandas as pd
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import SQLTransformer
from pyspark.sql import functions as F

from simhash_udf import DedupError, SimHashDedup, SimHashFingerprint, near_duplicates
from simhash_udf.evaluation.sample_corpus import make_sample_corpus


@pytest.fixture(scope="module")
def pages(spark):
    return spark.createDataFrame(pd.DataFrame(make_sample_corpus(120, seed=11))).withColumn("source", F.lit("crawl"))


def by_id(df, columns):
    return df.select(*columns).toPandas().sort_values("id").reset_index(drop=True)


def test_pipeline_equals_near_duplicates_and_survives_save_and_load(spark, pages, tmp_path):
    """Pipeline([fingerprint, dedup]).fit(df).transform(df): df's rows and columns with cluster_id and
    is_duplicate as near_duplicates gives them on the same fingerprints (and on the text, for this corpus); a
    PipelineModel saved and loaded gives the same rows; a next stage can keep the kept rows."""
    fingerprint = SimHashFingerprint(inputCol="text", outputCol="fp", signatureCol="sig")
    dedup = SimHashDedup(fingerprintCol="fp", signatureCol="sig", k=4, minSimilarity=0.7, clusterMode="transitive")
    model = Pipeline(stages=[fingerprint, dedup, SQLTransformer(statement="SELECT * FROM __THIS__")]).fit(pages)
    out = model.transform(pages)
    assert out.columns == pages.columns + ["fp", "sig", "cluster_id", "is_duplicate"]
    got = by_id(out, ["id", "cluster_id", "is_duplicate"])
    assert len(got) == pages.count() and got["is_duplicate"].sum() > 20

    found = near_duplicates(fingerprint.transform(pages).withColumnRenamed("sig", "signature"), fingerprint_col="fp",
                            k=4, min_similarity=0.7, cluster_mode="transitive")
    assert got.equals(by_id(found.clusters, ["id", "cluster_id", "is_duplicate"]))
    found.unpersist()
    from_text = near_duplicates(pages, k=4, min_similarity=0.7, cluster_mode="transitive")
    assert got.equals(by_id(from_text.clusters, ["id", "cluster_id", "is_duplicate"]))
    from_text.unpersist()

    path = os.path.join(str(tmp_path), "dedup-pipeline")
    model.write().overwrite().save(path)
    loaded = PipelineModel.load(path)
    again = loaded.stages[1]
    assert isinstance(again, SimHashDedup) and again.options() == dedup.options() and again.uid == dedup.uid
    assert by_id(loaded.transform(pages), ["id", "cluster_id", "is_duplicate"]).equals(got)
    kept = SQLTransformer(statement="SELECT * FROM __THIS__ WHERE NOT is_duplicate").transform(out)
    assert kept.count() == len(got) - got["is_duplicate"].sum()


def test_defaults_are_near_duplicates_defaults(spark, pages):
    fps = SimHashFingerprint(signatureCol="signature").transform(pages)
    got = by_id(SimHashDedup().transform(fps), ["id", "cluster_id", "is_duplicate"])
    found = near_duplicates(fps, fingerprint_col="fingerprint")
    assert got.equals(by_id(found.clusters, ["id", "cluster_id", "is_duplicate"]))
    found.unpersist()


@pytest.mark.parametrize("params, message", [
    ({"minSimilarity": 1.5}, "minSimilarity must be in 0..1"),
    ({"clusterMode": "nope"}, "clusterMode 'nope' is unknown"),
    ({"keep": "earliest:nope"}, "column 'nope' is not in the input"),
    ({"signatureCol": "nope"}, "signature"),
    ({"idCol": "nope"}, "'nope'"),
])
def test_params_are_checked_as_the_jobs_options_naming_the_param(spark, pages, params, message):
    fps = SimHashFingerprint(signatureCol="signature").transform(pages)
    with pytest.raises(DedupError, match=message):
        SimHashDedup(**params).transform(fps)


def test_an_input_with_the_stages_output_columns_is_refused(spark, pages):
    fps = SimHashFingerprint(signatureCol="signature").transform(pages).withColumn("is_duplicate", F.lit(True))
    with pytest.raises(ValueError, match=r"already has column\(s\) \['is_duplicate'\]"):
        SimHashDedup().transform(fps)
