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


@dataclass
class JoinedOnTexts:
    """The counts of joined_on_texts (report.json's clusters.containment_check)."""

    lone_checked: int  # pages alone in their cluster compared on the texts with a kept page of another cluster
    joined_on_texts: int  # of those, pages that joined that cluster: their texts hold with its kept page


def _pair_holds(batches: Iterator[pa.RecordBatch], spec: VerifySpec) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        holds = texts_confirm(batch.column("text_a").to_pylist(), batch.column("text_b").to_pylist(), spec,
                              similar_too=False)
        sigs_a = from_arrow(batch.column("sig_a"), spec.signature)
        sigs_b = from_arrow(batch.column("sig_b"), spec.signature)
        yield pa.RecordBatch.from_arrays(
            [batch.column("id"), batch.column("kept"), pa.array(holds),
             pa.array(similarity(sigs_a, sigs_b, spec.signature.bits), pa.float64())],
            names=["id", "kept", "holds", "similarity"])


def joined_on_texts(clusters: DataFrame, pairs: DataFrame | None, ranks: DataFrame, texts: DataFrame | None,
                    spec: VerifySpec, persist: Callable[[DataFrame], DataFrame],
                    checkpoint: Callable[[DataFrame], DataFrame]) -> tuple[DataFrame, JoinedOnTexts]:
    """clusters: resolve's rows after checked_containment (id, fingerprint, cluster_id, is_duplicate, signature,
    kept_fp, similarity[, kept_run_date]); pairs: (src, dst) fingerprints that share a longest-sentence key
    (compared, verified or not), or None; ranks: (id, rank) of the run's pages; texts: (id, text) or None.

    A page alone in its cluster whose fingerprint shares a key with a page of another cluster of this run is
    compared on the texts with that cluster's kept page: it joins that cluster when the smaller text's 5-grams
    are min_containment inside the larger's within the size bound (texts_confirm without its Jaccard arm: on the
    man pages that arm let pages of other truth clusters through, 91 of 120). The first such cluster in keep
    order, or else the first page alone that precedes it in keep order and itself holds with no page: pages
    that join never receive others, so nothing chains. Why: the signatures' estimate misses a copy whose frame
    or comments add many words (its original estimated 0.3-0.6 inside it where its 5-grams are all there), and
    a copy whose original is a duplicate of another page has no kept page it verifies with; both were kept."""
    if texts is None or pairs is None:
        return clusters, JoinedOnTexts(0, 0)
    key = ["cluster_id", "kept_run_date"] if "kept_run_date" in clusters.columns else ["cluster_id"]
    sized = clusters.where(F.col("kept_fp").isNotNull()).select(  # this run's clusters (an earlier run's: no text)
        "id", "fingerprint", "cluster_id", "kept_fp", "signature",
        F.count(F.lit(1)).over(Window.partitionBy(*key)).alias("n"))
    lone = sized.where(F.col("n") == 1).join(ranks, "id").select(
        F.col("fingerprint").alias("fp_a"), "id", "rank", F.col("signature").alias("sig_a"))
    both_ways = pairs.select(F.col("src").alias("fp_a"), F.col("dst").alias("fp_b")).unionByName(
        pairs.select(F.col("dst").alias("fp_a"), F.col("src").alias("fp_b")))
    of_lone = both_ways.join(lone, "fp_a")
    # targets: the kept page of a cluster of two or more that holds the partner, or a partner alone that
    # precedes the page in keep order
    in_cluster = sized.where(F.col("n") > 1).select(F.col("fingerprint").alias("fp_b"), F.col("cluster_id").alias("kept"),
                                                    F.col("kept_fp").alias("kept_fp_b"), F.lit(False).alias("alone"))
    alone = lone.select(F.col("fp_a").alias("fp_b"), F.col("id").alias("kept"), F.col("fp_a").alias("kept_fp_b"),
                        F.col("rank").alias("kept_rank"))
    to_lone = of_lone.join(alone, "fp_b").where(F.struct("kept_rank", "kept") < F.struct("rank", "id")).select(
        "id", "kept", "kept_fp_b", F.lit(True).alias("alone"), "sig_a")
    proposals = checkpoint(of_lone.join(in_cluster, "fp_b").select("id", "kept", "kept_fp_b", "alone", "sig_a")
                           .unionByName(to_lone).distinct())
    n_proposals = proposals.count()
    if not n_proposals:
        return clusters, JoinedOnTexts(0, 0)
    ids = proposals.select("id").unionByName(proposals.select(F.col("kept").alias("id"))).distinct()
    needed = persist(texts.join(broadcast_if_small(ids, 2 * n_proposals), "id", "left_semi"))
    kept_sigs = clusters.select(F.col("id").alias("kept"), F.col("signature").alias("sig_b")).join(
        broadcast_if_small(proposals.select("kept").distinct(), n_proposals), "kept", "left_semi")
    both = (proposals.join(needed.withColumnRenamed("text", "text_a"), "id")
            .join(needed.select(F.col("id").alias("kept"), F.col("text").alias("text_b")), "kept")
            .join(kept_sigs, "kept"))
    id_type = proposals.schema["id"].dataType
    schema = StructType([StructField("id", id_type), StructField("kept", id_type), StructField("holds", BooleanType()),
                         StructField("similarity", DoubleType())])
    held = persist(both.select("id", "kept", "text_a", "text_b", "sig_a", "sig_b").mapInArrow(
        lambda b: _pair_holds(b, spec), schema).where("holds").join(proposals.select("id", "kept", "kept_fp_b", "alone"),
                                                                   ["id", "kept"]))
    # a page alone that holds with some page moves (or may): it receives none
    movers = held.select(F.col("id").alias("kept")).distinct()
    targets = held.join(movers, "kept", "left_anti").join(
        ranks.select(F.col("id").alias("kept"), F.col("rank").alias("kept_rank")), "kept")
    first = Window.partitionBy("id").orderBy("alone", "kept_rank", "kept")
    moved = persist(targets.select("*", F.row_number().over(first).alias("_pos")).where("_pos = 1").select(
        F.col("id").alias("_moved"), F.col("kept").alias("_kept"), F.col("kept_fp_b").alias("_kept_fp"),
        F.col("similarity").alias("_similarity")))
    n_moved = moved.count()
    result = JoinedOnTexts(proposals.select("id").distinct().count(), n_moved)
    if not n_moved:
        return clusters, result
    if is_small(n_moved):  # as driver rows: the later stages' plans then hold the rows, not this step's plan
        moved = clusters.sparkSession.createDataFrame(moved.collect(), moved.schema)
    on = F.col("_moved").isNotNull()
    cols = {"cluster_id": F.coalesce("_kept", "cluster_id"), "is_duplicate": F.col("is_duplicate") | on,
            "kept_fp": F.when(on, F.col("_kept_fp")).otherwise(F.col("kept_fp")),
            "similarity": F.when(on, F.col("_similarity")).otherwise(F.col("similarity"))}
    joined = clusters.join(broadcast_if_small(moved, n_moved), clusters["id"] == moved["_moved"], "left")
    return joined.select(*(cols[c].alias(c) if c in cols else F.col(c) for c in clusters.columns)), result
