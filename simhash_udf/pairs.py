"""Spark stages 4 and 5: explode distinct fingerprints into (table, key) rows, then compare inside each
key group and emit spanning-forest edges. Keys are SQL expressions; the comparison is candidates.py."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from .blocks import TablePlan
from .candidates import candidate_edges

EDGE_SCHEMA = StructType(
    [
        StructField("src", LongType(), True),
        StructField("dst", LongType(), True),
        StructField("compared", LongType(), True),
        StructField("accepted", LongType(), True),
        StructField("distance", IntegerType(), True),
    ]
)


def block_rows(fingerprints: DataFrame, plan: TablePlan, fp_col: str = "fingerprint") -> DataFrame:
    """(table, key, fingerprint): one row per distinct fingerprint and table; key = fingerprint AND mask."""
    fp = F.col(fp_col)
    keys = [
        F.struct(F.lit(t).cast("int").alias("table"), (fp.bitwiseAND(F.lit(mask).cast("long"))).alias("key"))
        for t, mask in enumerate(plan.table_masks())
    ]
    return fingerprints.select(F.explode(F.array(*keys)).alias("b"), fp.alias("fingerprint")).select(
        "b.table", "b.key", "fingerprint"
    )


def key_groups(blocks: DataFrame) -> DataFrame:
    """(table, members: sorted array of fingerprints) for every key shared by at least two fingerprints."""
    return (
        blocks.groupBy("table", "key")
        .agg(F.array_sort(F.collect_list("fingerprint")).alias("members"))
        .where(F.size("members") >= 2)
        .select("table", "members")
    )


def group_edges(groups: DataFrame, plan: TablePlan) -> DataFrame:
    """Edges (src, dst) of a spanning forest of each group's accepted pairs, plus k + 1 statistics rows per
    Arrow batch (src and dst null): accepted pairs at each Hamming distance, compared pairs on distance 0."""

    def per_batch(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            arrays = pdf["members"].tolist()
            sizes = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
            members = np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, np.int64)
            offsets = np.r_[0, np.cumsum(sizes)]
            edges = candidate_edges(members, offsets, pdf["table"].to_numpy(), plan)
            yield pd.DataFrame(
                {
                    "src": pd.array(edges.src, dtype="Int64"),
                    "dst": pd.array(edges.dst, dtype="Int64"),
                    "compared": pd.array([pd.NA] * len(edges.src), dtype="Int64"),
                    "accepted": pd.array([pd.NA] * len(edges.src), dtype="Int64"),
                    "distance": pd.array([pd.NA] * len(edges.src), dtype="Int32"),
                }
            )
            n = len(edges.by_distance)
            yield pd.DataFrame(
                {
                    "src": pd.array([pd.NA] * n, dtype="Int64"),
                    "dst": pd.array([pd.NA] * n, dtype="Int64"),
                    "compared": pd.array([edges.compared] + [0] * (n - 1), dtype="Int64"),
                    "accepted": pd.array(edges.by_distance, dtype="Int64"),
                    "distance": pd.array(np.arange(n), dtype="Int32"),
                }
            )

    return groups.mapInPandas(per_batch, EDGE_SCHEMA)
