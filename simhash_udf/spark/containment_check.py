"""Spark glue of resolve's text check (verified.texts_confirm is the pure part): each page that resolve made a
duplicate only by containment, of a page of this run, is compared with that page on the two texts; the pages
whose texts do not hold leave its cluster, the pages of one unit together (keeping a page never breaks the
promise, and no other page was joined through it: every duplicate points at its kept page)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StructField, StructType

from ..core.verified import VerifySpec, texts_confirm
from .joins import broadcast_if_small


@dataclass
class ContainmentCheck:
    """The counts of checked_containment (report.json's clusters.containment_check)."""

    checked_on_texts: int  # duplicates joined only by containment, compared on their and their kept page's texts
    kept_again: int  # of those, pages whose texts do not hold: out of the cluster (with their unit's other such pages)
    not_checked: int  # duplicates joined only by containment whose kept page's text the run has not (an earlier
    # run's kept page, or stored fingerprints)


def _holds(batches: Iterator[pa.RecordBatch], spec: VerifySpec) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        holds = texts_confirm(batch.column("text_a").to_pylist(), batch.column("text_b").to_pylist(), spec)
        yield pa.RecordBatch.from_arrays([batch.column("id"), pa.array(holds)], names=["id", "holds"])


def checked_containment(clusters: DataFrame, texts: DataFrame | None, spec: VerifySpec,
                        persist: Callable[[DataFrame], DataFrame]) -> tuple[DataFrame, ContainmentCheck]:
    """clusters: resolve's rows (id, fingerprint, cluster_id, is_duplicate, signature, kept_fp, similarity,
    by_containment, rank, unit[, kept_run_date]), cached; texts: (id, text) of the run's pages, or None. Returns
    the clusters without by_containment, rank and unit, where the pages joined only by containment to a page of
    this run (kept_fp not null) whose texts do not hold (texts_confirm) leave that cluster: those of one unit
    (one fingerprint, signature and short text: they verify alike) are a cluster of their own, kept by the first
    of them in keep order; and the counts."""
    flagged = clusters.where(F.col("is_duplicate") & F.col("by_containment"))
    local = F.col("kept_fp").isNotNull() & F.lit(texts is not None)
    counts = flagged.agg(F.count(F.lit(1)).alias("all"), F.count(F.when(local, 1)).alias("local")).first()
    n_local, n_flagged = int(counts["local"]), int(counts["all"])
    result = clusters.drop("by_containment", "rank", "unit")
    if not n_local:
        return result, ContainmentCheck(0, 0, n_flagged)
    pairs = flagged.where(local).select("id", F.col("cluster_id").alias("kept"), "rank", "unit")
    ids = pairs.select("id").unionByName(pairs.select(F.col("kept").alias("id"))).distinct()
    # the texts of these pages alone: one pass over the input, whose other pages are not shuffled
    needed = persist(texts.join(broadcast_if_small(ids, 2 * n_local), "id", "left_semi"))
    both = (needed.withColumnRenamed("text", "text_a").join(broadcast_if_small(pairs, n_local), "id")
            .join(needed.select(F.col("id").alias("kept"), F.col("text").alias("text_b")), "kept"))
    schema = StructType([StructField("id", pairs.schema["id"].dataType, False), StructField("holds", BooleanType())])
    refused = both.select("id", "text_a", "text_b").mapInArrow(lambda b: _holds(b, spec), schema).where(~F.col("holds"))
    refused = persist(refused.join(pairs, "id").select(
        F.col("id").alias("_refused"),
        F.min(F.struct("rank", "id")).over(Window.partitionBy(F.col("unit.id"))).getField("id").alias("_kept")))
    n_refused = refused.count()
    check = ContainmentCheck(n_local, n_refused, n_flagged - n_local)
    if not n_refused:
        return result, check
    again = F.col("_refused").isNotNull()
    cols = {"cluster_id": F.coalesce("_kept", "cluster_id"),
            "is_duplicate": F.when(again, F.col("id") != F.col("_kept")).otherwise(F.col("is_duplicate")),
            "kept_fp": F.when(again, F.col("fingerprint")).otherwise(F.col("kept_fp")),
            # pages of one unit have one signature
            "similarity": F.when(~again, F.col("similarity")).when(F.col("id") != F.col("_kept"), F.lit(1.0))}
    joined = result.join(broadcast_if_small(refused, n_refused), result["id"] == refused["_refused"], "left")
    return joined.select(*(cols[c].alias(c) if c in cols else F.col(c) for c in result.columns)), check
