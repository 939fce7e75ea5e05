"""The extra pass of weighting "tfidf-corpus": document frequencies of the features over the whole input.

Each document contributes its distinct features once; features in fewer than two documents are dropped on
the executors and at most MAX_FEATURES of the most frequent come back to the driver (a table of features,
not of documents), to be shipped with the fingerprint UDF inside the FeatureSpec."""
from __future__ import annotations

import dataclasses

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import ArrayType, StringType

from .fingerprint import CorpusIdf, FeatureSpec, features_of

MAX_FEATURES = 1_000_000


def with_corpus_idf(docs: DataFrame, text_col: str, spec: FeatureSpec) -> FeatureSpec:
    """spec with its idf table computed from docs[text_col] (one pass over the texts)."""

    @pandas_udf(ArrayType(StringType()))
    def distinct_features(texts: pd.Series) -> pd.Series:
        return pd.Series([sorted(set(features_of(t, spec))) if isinstance(t, str) else [] for t in texts])

    n_docs = docs.count()
    df = (
        docs.select(F.explode(distinct_features(F.col(text_col))).alias("feature"))
        .groupBy("feature")
        .count()
        .where(F.col("count") >= 2)
        .orderBy(F.desc("count"), "feature")
        .limit(MAX_FEATURES)
    )
    doc_freq = {r["feature"]: int(r["count"]) for r in df.collect()}
    return dataclasses.replace(spec, idf=CorpusIdf(doc_freq, n_docs))
