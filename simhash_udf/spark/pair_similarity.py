"""A pair's estimated Jaccard index from its two signatures, for any rows that carry both (a duplicate and its
kept page, a page and a related one), computed by numpy over whole Arrow batches."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql.types import DoubleType, StructField, StructType

from ..core.signature import SignatureSpec, from_arrow, similarity


def with_pair_similarity(pairs: DataFrame, a: str, b: str, spec: SignatureSpec, drop: Sequence[str]) -> DataFrame:
    """pairs without the columns `drop`, plus `similarity` (double) of the signatures in columns a and b; null
    where either is null or not a whole signature of spec."""
    schema = StructType([f for f in pairs.schema.fields if f.name not in drop]
                        + [StructField("similarity", DoubleType(), True)])

    def per_batch(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            sig_a, sig_b = batch.column(a), batch.column(b)
            whole = pc.and_(pc.equal(pc.binary_length(sig_a), spec.nbytes),
                            pc.equal(pc.binary_length(sig_b), spec.nbytes))
            rows = np.flatnonzero(pc.fill_null(whole, False).to_numpy(zero_copy_only=False))
            sim = np.full(batch.num_rows, np.nan)
            if len(rows):
                take = pa.array(rows, pa.int64())
                sim[rows] = similarity(from_arrow(sig_a.take(take), spec), from_arrow(sig_b.take(take), spec),
                                       spec.bits)
            out = batch.drop_columns(list(drop))
            yield out.append_column("similarity", pa.array(sim, pa.float64(), mask=np.isnan(sim)))

    return pairs.mapInArrow(per_batch, schema)
