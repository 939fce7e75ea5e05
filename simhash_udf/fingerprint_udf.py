"""Spark stage 2: fingerprints over Arrow batches (mapInArrow: Arrow record batches in and out).

mapInArrow rather than a pandas UDF: the text column goes from Arrow straight to Python strings (no pandas
object Series in between) and the fingerprints go back as one Arrow array per batch. The text column is
dropped in the same pass, so the page text is not sent back to the JVM."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from .fingerprint import FeatureSpec, fingerprint_batch

FINGERPRINT_FIELDS = [StructField("fingerprint", LongType(), True), StructField("n_features", IntegerType(), False)]


def fingerprint_record_batches(
    batches: Iterator[pa.RecordBatch], text_col: str, spec: FeatureSpec
) -> Iterator[pa.RecordBatch]:
    """Each batch without `text_col`, plus `fingerprint` (int64, null when the text has no features) and
    `n_features` (int32; -1 for a null text)."""
    for batch in batches:
        fps, counts = fingerprint_batch(batch.column(text_col).to_pylist(), spec)
        rest = batch.drop_columns([text_col])
        yield rest.append_column("fingerprint", pa.array(fps, mask=counts <= 0)).append_column(
            "n_features", pa.array(counts.astype(np.int32, copy=False))
        )


def with_fingerprints(docs: DataFrame, text_col: str, spec: FeatureSpec) -> DataFrame:
    """docs without `text_col`, plus `fingerprint` (bigint, nullable) and `n_features` (int)."""
    schema = StructType([f for f in docs.schema.fields if f.name != text_col] + FINGERPRINT_FIELDS)
    return docs.mapInArrow(lambda batches: fingerprint_record_batches(batches, text_col, spec), schema)
