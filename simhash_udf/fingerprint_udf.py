"""Spark stage 2: the fingerprint pandas UDF (Arrow batches in, int64 fingerprints out)."""
from __future__ import annotations

import pandas as pd
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from .fingerprint import FeatureSpec, fingerprint_batch

FINGERPRINT_STRUCT = StructType(
    [StructField("fingerprint", LongType(), True), StructField("n_features", IntegerType(), True)]
)


def fingerprint_column(text: Column, spec: FeatureSpec) -> Column:
    """struct(fingerprint: bigint or null when the text has no features, n_features: int; -1 for null text)."""

    @pandas_udf(FINGERPRINT_STRUCT)
    def simhash_udf(texts: pd.Series) -> pd.DataFrame:
        values = texts.to_numpy(dtype=object)
        fps, counts = fingerprint_batch([v if isinstance(v, str) else None for v in values], spec)
        fingerprint = pd.array(fps, dtype="Int64")
        fingerprint[counts <= 0] = pd.NA
        return pd.DataFrame({"fingerprint": fingerprint, "n_features": counts})

    return simhash_udf(text)


def with_fingerprints(docs, text_col: str, spec: FeatureSpec):
    """docs plus `fingerprint` (bigint, nullable) and `n_features` columns."""
    fp = fingerprint_column(F.col(text_col), spec)
    return docs.withColumn("_fp", fp).select("*", "_fp.fingerprint", "_fp.n_features").drop("_fp")
