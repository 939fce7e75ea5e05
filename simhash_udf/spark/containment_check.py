"""Spark glue of resolve's text check (verified.texts_confirm is the pure part): each page that resolve made a
duplicate only by containment, of a page of this run, is compared with that page on the two texts; the pages
whose texts do not hold leave its cluster and are clustered again among themselves by similarity (no other page
was joined through them: every duplicate points at its kept page)."""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from functools import reduce
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, LongType, StructField, StructType

from ..core.signature import from_arrow, similarity
from ..core.verified import (
    PROPOSAL_FIELDS,
    VerifySpec,
    first_holding_targets,
    lone_proposal_rows,
    rank_fields,
    rank_key,
    texts_confirm,
    verified_centres,
)
from .joins import broadcast_if_small, is_small

log = logging.getLogger("simhash_dedup")


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


def rows_to_compare(clusters: DataFrame, pairs: DataFrame | None, n_pairs: int,
                    checkpoint: Callable[[DataFrame], DataFrame]) -> DataFrame:
    """The rows of resolve's clusters that the text steps read, in one checkpoint (id, fingerprint, cluster_id,
    is_duplicate, by_containment, kept_fp, signature, rank, short_text, multi, in_pairs): the duplicates joined
    only by containment (checked_containment), and with sentence-key pairs (src, dst fingerprints, n_pairs rows)
    the pages of their fingerprints and the kept pages of the clusters with duplicates (lone_proposals); multi:
    the page's cluster has duplicates, in_pairs: its fingerprint is a pair's. Only this run's pages: an earlier
    run's kept page (kept_fp null) has no text here; it is compared by similarity alone (verified_clusters), so no
    page joins it by containment. One checkpoint, because the plan of resolve's cache is long (with a history
    each query that read it planned it again, seconds each): every later query of the steps reads this instead."""
    this_run = clusters.where(F.col("kept_fp").isNotNull())
    flagged = F.col("is_duplicate") & F.col("by_containment")
    columns = ["id", "fingerprint", "cluster_id", "is_duplicate", "by_containment", "kept_fp", "signature", "rank",
               "short_text"]
    if pairs is None:
        return checkpoint(this_run.where(flagged).select(*columns, F.lit(True).alias("multi"),
                                                         F.lit(False).alias("in_pairs")))
    key = ["cluster_id", "kept_run_date"] if "kept_run_date" in clusters.columns else ["cluster_id"]
    with_dups = this_run.where("is_duplicate").select(*key).distinct().withColumn("multi", F.lit(True))
    fps = pairs.select(F.col("src").alias("fingerprint")).unionByName(
        pairs.select(F.col("dst").alias("fingerprint"))).distinct().withColumn("in_pairs", F.lit(True))
    rows = this_run.join(with_dups, key, "left").join(broadcast_if_small(fps, 2 * n_pairs), "fingerprint", "left")
    multi, in_pairs = F.coalesce("multi", F.lit(False)), F.coalesce("in_pairs", F.lit(False))
    return checkpoint(rows.where(flagged | in_pairs | (multi & ~F.col("is_duplicate"))).select(
        *columns, multi.alias("multi"), in_pairs.alias("in_pairs")))


def pages_to_check(rows: DataFrame) -> tuple[DataFrame, int]:
    """The duplicates joined only by containment to a page of this run (id, fingerprint, signature, short_text,
    rank, cluster_id), and their number. rows: rows_to_compare's."""
    flagged = rows.where(F.col("is_duplicate") & F.col("by_containment")).select(
        "id", "fingerprint", "signature", "short_text", "rank", "cluster_id")
    return flagged, flagged.count()


def checked_containment(clusters: DataFrame, flagged: DataFrame | None, n_local: int, texts: DataFrame | None,
                        spec: VerifySpec, persist: Callable[[DataFrame], DataFrame]) -> tuple[DataFrame, ContainmentCheck]:
    """clusters: resolve's rows (id, fingerprint, cluster_id, is_duplicate, signature, kept_fp, similarity,
    by_containment, rank, short_text[, kept_run_date]), cached; flagged, n_local: pages_to_check's; texts: (id,
    text) of (at least) those pages and their kept pages, or None; persist caches (the stages' own).
    Returns the clusters without by_containment, rank and short_text, where the pages joined only by containment
    to a page of this run whose texts do not hold (texts_confirm) leave that cluster and are
    clustered again among themselves (_clustered_again); and the counts."""
    result = clusters.drop("by_containment", "rank", "short_text")
    if texts is None or flagged is None or not n_local:
        return result, ContainmentCheck(0, 0)
    pairs = flagged.select("id", F.col("cluster_id").alias("kept"))
    both = (texts.withColumnRenamed("text", "text_a").join(broadcast_if_small(pairs, n_local), "id")
            .join(texts.select(F.col("id").alias("kept"), F.col("text").alias("text_b")), "kept"))
    id_type = pairs.schema["id"].dataType
    schema = StructType([StructField("id", id_type, False), StructField("holds", BooleanType())])
    refused = both.select("id", "text_a", "text_b").mapInArrow(lambda b: _holds(b, spec), schema).where(~F.col("holds"))
    left = flagged.join(refused.select("id"), "id", "left_semi").select(
        "id", "fingerprint", "signature", "short_text",
        F.row_number().over(Window.partitionBy("cluster_id").orderBy("rank", "id")).alias("pos"), "cluster_id")
    again_schema = _moved_schema("_refused", id_type)
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
    return _in_new_clusters(result, again, n_refused, "_refused"), check


def _in_new_clusters(result: DataFrame, moved: DataFrame, n_moved: int, key: str) -> DataFrame:
    """result with the pages of `moved` (key, _kept, _kept_fp, _similarity) in their new clusters: the pages that
    left a cluster (checked_containment, key _refused: kept, or duplicates of the first of them) and the pages
    alone that joined one (joined_on_texts, key _moved: duplicates of its kept page)."""
    on = F.col(key).isNotNull()
    cols = {"cluster_id": F.coalesce("_kept", "cluster_id"),
            "is_duplicate": F.when(on, F.col("id") != F.col("_kept")).otherwise(F.col("is_duplicate")),
            "kept_fp": F.when(on, F.col("_kept_fp")).otherwise(F.col("kept_fp")),
            "similarity": F.when(on, F.col("_similarity")).otherwise(F.col("similarity"))}
    joined = result.join(broadcast_if_small(moved, n_moved), result["id"] == moved[key], "left")
    return joined.select(*(cols[c].alias(c) if c in cols else F.col(c) for c in result.columns))


@dataclass
class JoinedOnTexts:
    """The counts of joined_on_texts (report.json's clusters.containment_check)."""

    alone_compared: int  # pages alone in their cluster compared on the texts with a page of another cluster
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


def lone_proposals(rows: DataFrame, pairs: DataFrame,
                   checkpoint: Callable[[DataFrame], DataFrame]) -> tuple[DataFrame, int, int]:
    """The pages alone in their cluster of this run that share a longest-sentence key with a page of another of
    its clusters, each with the page it is to be compared with on the texts (joined_on_texts): (id, kept,
    kept_fp_b, kept_rank, alone, sig_a, sig_b), kept the kept page of that page's cluster, or (alone) the
    partner itself when it is alone too and precedes the page in keep order, sig_a and sig_b the two signatures
    (checkpointed); their rows, and the pages alone among them.
    rows: rows_to_compare's, of resolve's clusters before the text check (which moves duplicates only: a page
    alone stays alone, a kept page stays kept); pairs: (src, dst) fingerprints that share a key."""
    touched = rows.where("in_pairs")
    lone = touched.where(~F.col("multi")).select(F.col("fingerprint").alias("fp_a"), "id", "rank",
                                                 F.col("signature").alias("sig_a"))
    both_ways = pairs.select(F.col("src").alias("fp_a"), F.col("dst").alias("fp_b")).unionByName(
        pairs.select(F.col("dst").alias("fp_a"), F.col("src").alias("fp_b")))
    of_lone = both_ways.join(lone, "fp_a")
    # targets: the kept page of a cluster of two or more that holds the partner, or a partner alone that
    # precedes the page in keep order
    multi = touched.where("multi")
    kept = rows.where(F.col("multi") & ~F.col("is_duplicate")).select(
        F.col("id").alias("kept"), F.col("rank").alias("kept_rank"), F.col("signature").alias("sig_b"))
    in_cluster = multi.select(F.col("fingerprint").alias("fp_b"), F.col("cluster_id").alias("kept"),
                              F.col("kept_fp").alias("kept_fp_b")).join(kept, "kept")
    alone = lone.select(F.col("fp_a").alias("fp_b"), F.col("id").alias("kept"), F.col("fp_a").alias("kept_fp_b"),
                        F.col("rank").alias("kept_rank"), F.col("sig_a").alias("sig_b"))
    head = ["id", "kept", "kept_fp_b", "kept_rank"]
    to_lone = of_lone.join(alone, "fp_b").where(F.struct("kept_rank", "kept") < F.struct("rank", "id")).select(
        *head, F.lit(True).alias("alone"), "sig_a", "sig_b")
    proposals = checkpoint(of_lone.join(in_cluster, "fp_b").select(*head, F.lit(False).alias("alone"), "sig_a", "sig_b")
                           .unionByName(to_lone).distinct())
    counts = proposals.agg(F.count(F.lit(1)).alias("rows"), F.count_distinct("id").alias("pages")).first()
    return proposals, int(counts["rows"]), int(counts["pages"])


def joined_on_texts(clusters: DataFrame, proposals: DataFrame, n_proposals: int, n_lone: int, texts: DataFrame,
                    spec: VerifySpec, persist: Callable[[DataFrame], DataFrame],
                    text_bytes: int = 0) -> tuple[DataFrame, JoinedOnTexts]:
    """clusters: resolve's rows after the text check (id, fingerprint, cluster_id, is_duplicate, signature,
    kept_fp, similarity[, kept_run_date]); proposals, n_proposals, n_lone: lone_proposals'; texts: (id, text) of (at
    least) their pages.

    A page alone in its cluster whose fingerprint shares a key with a page of another cluster of this run is
    compared on the texts with that cluster's kept page: it joins that cluster when the smaller text's 5-grams
    are min_containment inside the larger's within the size bound (texts_confirm without its Jaccard arm: on the
    man pages that arm let pages of other truth clusters through, 91 of 120). The first such cluster in keep
    order, or else the first page alone that precedes it in keep order and itself holds with no page: pages
    that join never receive others, so nothing chains (verified.first_holding_targets). Why: the signatures'
    estimate misses a copy whose frame or comments add many words (its original estimated 0.3-0.6 inside it
    where its 5-grams are all there), and a copy whose original is a duplicate of another page has no kept page
    it verifies with; both were kept alone.
    Few proposals whose texts are small (texts_on_driver; text_bytes: the UTF-8 bytes of `texts`, texts_of's) are
    compared on the driver, with their texts collected (a handful of Spark jobs less than the same work in Spark,
    seconds of a small run); the others in a mapInArrow pass on the executors."""
    if not n_proposals:
        return clusters, JoinedOnTexts(0, 0)
    moved_schema = _moved_schema("_moved", proposals.schema["id"].dataType)
    on_driver = texts_on_driver(n_proposals, text_bytes)
    log.info("pages alone compared on their texts: %s proposals, %.1f MB of text, %s", f"{n_proposals:,}",
             text_bytes / 1e6, "on the driver" if on_driver else "in Spark")
    if on_driver:
        # through Arrow: Rows of long texts are pickled one by one
        rows = proposals.toArrow().to_pylist()
        wanted = {r["id"] for r in rows} | {r["kept"] for r in rows}
        found = texts.toArrow()
        text = {i: t for i, t in zip(found.column("id").to_pylist(), found.column("text").to_pylist()) if i in wanted}
        rows = _moved_rows(rows, text, spec)
        moved, n_moved = clusters.sparkSession.createDataFrame(rows, moved_schema), len(rows)
    else:
        moved = persist(_moved_in_spark(proposals, texts, spec, persist))
        n_moved = moved.count()
    result = JoinedOnTexts(n_lone, n_moved)
    if not n_moved:
        return clusters, result
    return _in_new_clusters(clusters, moved, n_moved, "_moved"), result


# joined_on_texts compares the proposals on the driver up to these: the driver then holds every text it compares
# as Python strings (and the JVM their Arrow batches on the way), and its one core does the executors' work. The
# 120 MB page mix (docs/performance.md) has 60,728 proposals over 77.5 MB of text, faster on the driver.
DRIVER_TEXT_PROPOSALS = 100_000
DRIVER_TEXT_BYTES = 128 << 20


def texts_on_driver(n_proposals: int, text_bytes: int) -> bool:
    """Whether joined_on_texts compares n_proposals proposals, whose texts hold text_bytes UTF-8 bytes, on the
    driver: both known (not negative) and at most DRIVER_TEXT_PROPOSALS and DRIVER_TEXT_BYTES."""
    return 0 <= n_proposals <= DRIVER_TEXT_PROPOSALS and 0 <= text_bytes <= DRIVER_TEXT_BYTES


def _moved_schema(name: str, id_type) -> StructType:
    return StructType([StructField(name, id_type), StructField("_kept", id_type), StructField("_kept_fp", LongType()),
                       StructField("_similarity", DoubleType())])


def _moved_rows(rows, text: dict, spec: VerifySpec) -> list[tuple]:
    """joined_on_texts' (moved, kept, kept_fp, similarity) rows from proposal rows (PROPOSAL_FIELDS, by name)
    and the texts of their pages (id -> text)."""
    holds = texts_confirm([text.get(r["id"]) for r in rows], [text.get(r["kept"]) for r in rows], spec,
                          similar_too=False)
    sigs_a = from_arrow(pa.array([r["sig_a"] for r in rows], pa.binary()), spec.signature)
    sigs_b = from_arrow(pa.array([r["sig_b"] for r in rows], pa.binary()), spec.signature)
    to_kept = similarity(sigs_a, sigs_b, spec.signature.bits)
    chosen = first_holding_targets([r["id"] for r in rows], [r["kept"] for r in rows], [r["alone"] for r in rows],
                                   [rank_fields(r["kept_rank"]) for r in rows], holds)
    return [(rows[i]["id"], rows[i]["kept"], rows[i]["kept_fp_b"], float(to_kept[i])) for i in chosen]


def _moved_in_spark(proposals: DataFrame, texts: DataFrame, spec: VerifySpec,
                    persist: Callable[[DataFrame], DataFrame]) -> DataFrame:
    """_moved_rows' rows for many proposals: the texts compared in a mapInArrow pass, the choice by windows."""
    both = (proposals.join(texts.withColumnRenamed("text", "text_a"), "id")
            .join(texts.select(F.col("id").alias("kept"), F.col("text").alias("text_b")), "kept"))
    id_type = proposals.schema["id"].dataType
    schema = StructType([StructField("id", id_type), StructField("kept", id_type), StructField("holds", BooleanType()),
                         StructField("similarity", DoubleType())])
    held = persist(both.select("id", "kept", "text_a", "text_b", "sig_a", "sig_b").mapInArrow(
        lambda b: _pair_holds(b, spec), schema).where("holds").join(
        proposals.select("id", "kept", "kept_fp_b", "kept_rank", "alone"), ["id", "kept"]))
    held.count()  # filled once: the two reads below would otherwise each compare the texts
    # a page alone that holds with some page moves (or may): it receives none
    targets = held.join(held.select(F.col("id").alias("kept")).distinct(), "kept", "left_anti")
    first = Window.partitionBy("id").orderBy("alone", "kept_rank", "kept")
    return targets.select("*", F.row_number().over(first).alias("_pos")).where("_pos = 1").select(
        F.col("id").alias("_moved"), F.col("kept").alias("_kept"), F.col("kept_fp_b").alias("_kept_fp"),
        F.col("similarity").alias("_similarity"))


def texts_of(texts: DataFrame, id_frames: list[DataFrame], n_ids: int,
             persist: Callable[[DataFrame], DataFrame]) -> tuple[DataFrame, int]:
    """(id, text) of the ids in the one-column DataFrames id_frames (n_ids rows in all, at most), in one pass
    over texts whose other rows are not shuffled (the ids broadcast when few), cached and filled (so that the
    joins that read it twice do not each read the input); and their texts' UTF-8 bytes, summed in that pass."""
    ids = reduce(DataFrame.unionByName, [f.toDF("id") for f in id_frames]).distinct()
    needed = persist(texts.join(broadcast_if_small(ids, n_ids), "id", "left_semi"))
    total = needed.agg(F.sum(F.octet_length("text")).alias("bytes")).first()["bytes"]
    return needed, int(total or 0)


# Fingerprints of a run up to which both text steps run on the driver (text_steps_on_driver): the rows they
# read and the texts they compare are a small share of such a run's pages.
DRIVER_TEXT_FINGERPRINTS = 50_000


def text_steps_on_driver(clusters: DataFrame, rows: pa.Table, pairs: pa.Table | None, texts: DataFrame,
                         spec: VerifySpec) -> tuple[DataFrame, ContainmentCheck, JoinedOnTexts]:
    """checked_containment, then joined_on_texts, for a small run: rows_to_compare's rows and the sentence-key
    pairs (src, dst) collected, the texts of the pages both steps compare read in one pass over the input, and
    the same rules in Python (texts_confirm, _clustered_again, verified.lone_proposal_rows, _moved_rows): the
    same clusters with two or three Spark jobs instead of a few dozen."""
    spark = clusters.sparkSession
    recs = rows.to_pylist()
    flagged = [r for r in recs if r["is_duplicate"] and r["by_containment"]]
    proposals = [dict(zip(PROPOSAL_FIELDS, p)) for p in lone_proposal_rows(
        recs, zip(pairs.column("src").to_pylist(), pairs.column("dst").to_pylist()))] if pairs is not None else []
    ids = {r["id"] for r in flagged} | {r["cluster_id"] for r in flagged}
    ids |= {p["id"] for p in proposals} | {p["kept"] for p in proposals}
    text = {}
    if ids:
        id_type = rows.schema.field("id").type
        wanted = spark.createDataFrame(pa.table({"id": pa.array(sorted(ids), id_type)}))
        found = texts.join(F.broadcast(wanted), "id", "left_semi").toArrow()
        text = dict(zip(found.column("id").to_pylist(), found.column("text").to_pylist()))
    # the check: a page joined only by containment whose texts do not hold leaves its cluster
    compared = [r for r in flagged if r["id"] in text and r["cluster_id"] in text]
    holds = texts_confirm([text[r["id"]] for r in compared], [text[r["cluster_id"]] for r in compared], spec)
    again = _clustered_again_on_driver([r for r, h in zip(compared, holds) if not h], spec)
    result = clusters.drop("by_containment", "rank", "short_text")
    id_type = result.schema["id"].dataType
    if again.num_rows:
        result = _in_new_clusters(result, spark.createDataFrame(again, _moved_schema("_refused", id_type)),
                                  again.num_rows, "_refused")
    moved = _moved_rows([p for p in proposals if p["id"] in text and p["kept"] in text], text, spec)
    if moved:
        result = _in_new_clusters(result, spark.createDataFrame(moved, _moved_schema("_moved", id_type)), len(moved),
                                  "_moved")
    return (result, ContainmentCheck(len(flagged), again.num_rows),
            JoinedOnTexts(len({p["id"] for p in proposals}), len(moved)))


def _clustered_again_on_driver(refused: list[dict], spec: VerifySpec) -> pa.Table:
    """checked_containment's again rows (_refused, _kept, _kept_fp, _similarity; null similarity for a kept page)
    of the refused pages, each cluster's in keep order (rank, id)."""
    import pandas as pd  # here, not at the top: the spark modules import without pandas (test_layout.py)

    parts = []
    by_cluster: dict = {}
    for r in refused:
        by_cluster.setdefault(r["cluster_id"], []).append(r)
    for cluster_id in sorted(by_cluster):
        group = sorted(by_cluster[cluster_id], key=lambda r: (rank_key(r["rank"]), r["id"]))
        parts.append(_clustered_again(pd.DataFrame({c: [r[c] for r in group] for c in
                                                    ("id", "fingerprint", "signature", "short_text")}), spec))
    if not parts:
        return pa.table({})
    return pa.Table.from_pandas(pd.concat(parts, ignore_index=True), preserve_index=False)
