"""Spark glue of resolve's text check (verified.texts_confirm is the pure part): each page that resolve made a
duplicate only by containment, of a page of this run, is compared with that page on the two texts; the pages
whose texts do not hold leave its cluster and are clustered again among themselves by similarity (no other page
was joined through them: every duplicate points at its kept page)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, LongType, StructField, StructType

from ..core.signature import from_arrow, similarity
from ..core.verified import VerifySpec, texts_confirm, verified_centres
from .joins import broadcast_if_small, is_small


@dataclass
class ContainmentCheck:
    """The counts of checked_containment (report.json's clusters.containment_check)."""

    checked_on_texts: int  # duplicates joined only by containment, compared on their and their kept page's texts
    left_cluster: int  # of those, pages whose texts do not hold: out of the cluster, clustered again among themselves


def _holds(batches: Iterator[pa.RecordBatch], spec: VerifySpec) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        holds = texts_confirm(batch.column("text_a").to_pylist(), batch.column("text_b").to_pylist(), spec)
        yield pa.RecordBatch.from_arrays([batch.column("id"), pa.array(holds)], names=["id", "holds"])


def _clustered_again(rows, spec: VerifySpec):
    """The pages that left one cluster (rows in keep order), clustered again among themselves as resolve clusters
    a component's units, by similarity alone (verified_centres without containment): which page each is kept for,
    that page's fingerprint and the estimated similarity to it (null for a kept page). rows: a pandas
    DataFrame (applyInPandas), and so is the result."""
    import pandas as pd  # here, not at the top: the spark modules import without pandas (test_layout.py)

    sigs = from_arrow(pa.array(rows["signature"].tolist(), pa.binary()), spec.signature)
    texts = rows["short_text"].tolist()
    centre = verified_centres(sigs, texts if any(t is not None for t in texts) else None,
                              dataclasses.replace(spec, min_containment=0.0))
    to_centre = similarity(sigs, sigs[centre], spec.signature.bits)
    ids = rows["id"].to_numpy()
    return pd.DataFrame({"_refused": ids, "_kept": ids[centre], "_kept_fp": rows["fingerprint"].to_numpy()[centre],
                         "_similarity": np.where(centre == np.arange(len(rows)), np.nan, to_centre)})


def checked_containment(clusters: DataFrame, texts: DataFrame | None, spec: VerifySpec,
                        persist: Callable[[DataFrame], DataFrame],
                        checkpoint: Callable[[DataFrame], DataFrame]) -> tuple[DataFrame, ContainmentCheck]:
    """clusters: resolve's rows (id, fingerprint, cluster_id, is_duplicate, signature, kept_fp, similarity,
    by_containment, rank, short_text[, kept_run_date]), cached; texts: (id, text) of the run's pages, or None;
    persist caches, checkpoint cuts a lineage (the stages' own).
    Returns the clusters without by_containment, rank and short_text, where the pages joined only by containment
    to a page of this run whose texts do not hold (texts_confirm) leave that cluster and are
    clustered again among themselves (_clustered_again); and the counts."""
    result = clusters.drop("by_containment", "rank", "short_text")
    if texts is None:
        return result, ContainmentCheck(0, 0)
    # an earlier run's kept page (kept_fp null) has no text here; it is compared by similarity alone
    # (verified_clusters), so no page joins it by containment, and none would be checked.
    # The pages to check, their lineage cut: with a history, the plan of resolve's cache is large, and each query
    # of this step planned it again (seconds each, ten times the stage's time without the check)
    flagged = checkpoint(clusters.where(F.col("is_duplicate") & F.col("by_containment") & F.col("kept_fp").isNotNull())
                         .select("id", "fingerprint", "signature", "short_text", "rank", "cluster_id"))
    n_local = flagged.count()
    if not n_local:
        return result, ContainmentCheck(0, 0)
    pairs = flagged.select("id", F.col("cluster_id").alias("kept"))
    ids = pairs.select("id").unionByName(pairs.select(F.col("kept").alias("id"))).distinct()
    # the texts of these pages alone: one pass over the input, whose other pages are not shuffled
    needed = persist(texts.join(broadcast_if_small(ids, 2 * n_local), "id", "left_semi"))
    both = (needed.withColumnRenamed("text", "text_a").join(broadcast_if_small(pairs, n_local), "id")
            .join(needed.select(F.col("id").alias("kept"), F.col("text").alias("text_b")), "kept"))
    id_type = pairs.schema["id"].dataType
    schema = StructType([StructField("id", id_type, False), StructField("holds", BooleanType())])
    refused = both.select("id", "text_a", "text_b").mapInArrow(lambda b: _holds(b, spec), schema).where(~F.col("holds"))
    left = flagged.join(refused.select("id"), "id", "left_semi").select(
        "id", "fingerprint", "signature", "short_text",
        F.row_number().over(Window.partitionBy("cluster_id").orderBy("rank", "id")).alias("pos"), "cluster_id")
    again_schema = StructType([StructField("_refused", id_type), StructField("_kept", id_type),
                               StructField("_kept_fp", LongType()), StructField("_similarity", DoubleType())])
    again = persist(left.groupBy("cluster_id").applyInPandas(
        lambda rows: _clustered_again(rows.sort_values("pos"), spec), again_schema))
    n_refused = again.count()
    check = ContainmentCheck(n_local, n_refused)
    if not n_refused:
        return result, check
    if is_small(n_refused):
        # as rows of the driver: the clusters every later stage reads then hold in their plan the cache of resolve
        # and these rows, not this step's plan (with a history, the write and the report took ~10x longer)
        again = clusters.sparkSession.createDataFrame(again.collect(), again_schema)
    moved = F.col("_refused").isNotNull()
    cols = {"cluster_id": F.coalesce("_kept", "cluster_id"),
            "is_duplicate": F.when(moved, F.col("id") != F.col("_kept")).otherwise(F.col("is_duplicate")),
            "kept_fp": F.when(moved, F.col("_kept_fp")).otherwise(F.col("kept_fp")),
            "similarity": F.when(moved, F.col("_similarity")).otherwise(F.col("similarity"))}
    joined = result.join(broadcast_if_small(again, n_refused), result["id"] == again["_refused"], "left")
    return joined.select(*(cols[c].alias(c) if c in cols else F.col(c) for c in result.columns)), check
