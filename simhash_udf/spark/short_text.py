"""Spark glue of the short-text mode: candidate pairs on the short fingerprint, verified by shingle Jaccard,
become extra edges between main fingerprints for the components stage.

Units, so that hot mirrors cost nothing: pages with the same main fingerprint are one cluster already, so
each main fingerprint is represented by its short page with the smallest id (its *representative*); the
representatives that share a short fingerprint are checked against the one with the smallest id (the
fingerprint's *head*), and the heads are searched for pairs within k on the short fingerprint with the same
tables, keys and first-table rule as the main search (blocks.py, candidates.py), every pair emitted. Only
those candidate pairs get their texts joined back and their Jaccard computed (short_text.py)."""
from __future__ import annotations

from functools import reduce
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StructField, StructType

from ..core.bands import SignatureBands
from ..core.blocks import TablePlan, choose_plan, first_plan_change
from ..core.candidates import candidate_pairs
from ..core.shingles import pair_jaccards
from ..core.short_text import ShortTextSpec
from ..core.signature import from_arrow
from .blocks import block_rows, group_batches, key_runs, walk_groups

PAIR_SCHEMA = StructType([StructField("a", LongType(), True), StructField("b", LongType(), True),
                          StructField("compared", LongType(), True)])


def group_pairs(rows: DataFrame, plan: TablePlan) -> DataFrame:
    """(a, b, null) for every accepted pair of the key groups of block rows, plus one (null, null, compared)
    row per call."""
    schema = pa.schema([pa.field(f.name, pa.int64()) for f in PAIR_SCHEMA])

    def per_groups(members, offsets, tables):
        a, b, compared = candidate_pairs(members, offsets, tables, plan)
        yield pa.RecordBatch.from_arrays([pa.array(a, pa.int64()), pa.array(b, pa.int64()),
                                          pa.nulls(len(a), pa.int64())], schema=schema)
        yield pa.RecordBatch.from_arrays([pa.nulls(1, pa.int64()), pa.nulls(1, pa.int64()),
                                          pa.array([compared], pa.int64())], schema=schema)

    return key_runs(rows, plan).mapInArrow(lambda batches: walk_groups(batches, per_groups), PAIR_SCHEMA)


def with_jaccard(pairs: DataFrame, n: int) -> DataFrame:
    """pairs (..., text_a, text_b) without the texts, plus `jaccard` (double)."""
    schema = StructType([f for f in pairs.schema.fields if f.name not in ("text_a", "text_b")]
                        + [StructField("jaccard", DoubleType(), False)])

    def per_batch(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            j = pair_jaccards(batch.column("text_a").to_pylist(), batch.column("text_b").to_pylist(), n)
            yield batch.drop_columns(["text_a", "text_b"]).append_column("jaccard", pa.array(j))

    return pairs.mapInArrow(per_batch, schema)


def short_text_edges(docs: DataFrame, spec: ShortTextSpec, keep: Callable[[DataFrame], DataFrame],
                     short_pages: int = -1) -> tuple[DataFrame | None, DataFrame | None, dict]:
    """docs: (id, fingerprint, short_fingerprint, short_text, ...) from the fingerprint stage; short_pages: its
    rows with both fingerprints, if known (-1: not), a bound on the heads searched.

    Returns verified edges (src, dst) between main fingerprints, every candidate pair checked (fp_a, fp_b: main
    fingerprints; the report counts those the main search found too) and the statistics for the report. With no
    short page (short_pages 0) there is nothing to search: no edges and no pairs (None) and the statistics of an empty
    search, without a Spark job (the search's joins and counts over nothing would be about ten, a second or
    more of a small run in a new JVM).

    The plan is chosen from the number of heads, which takes a Spark action of its own (four jobs on a small
    input). Below the first size whose plan differs from the smallest input's (blocks.first_plan_change), the
    bound alone fixes the plan, and the heads are counted in the stage's last action instead."""
    if short_pages == 0:
        return None, None, short_text_stats(spec, choose_plan(0, spec.k), 0, 0, 0, 0, 0)
    short = docs.where(F.col("short_fingerprint").isNotNull() & F.col("fingerprint").isNotNull())
    reps = keep(
        short.groupBy("fingerprint")
        .agg(F.min(F.struct("id", "short_fingerprint", "short_text")).alias("r"))
        .select("fingerprint", "r.short_fingerprint", "r.short_text", "r.id")
    )
    heads = keep(
        reps.groupBy("short_fingerprint")
        .agg(F.min(F.struct("id", "fingerprint", "short_text")).alias("h"))
        .select("short_fingerprint", "h.fingerprint", "h.short_text")
    )
    heads_counted_last = 0 <= short_pages < first_plan_change(spec.k)
    if heads_counted_last:
        plan = choose_plan(short_pages, spec.k)  # the heads' plan: they are fewer
    else:
        sizes = reps.agg(F.count(F.lit(1)).alias("reps"), F.count_distinct("short_fingerprint").alias("heads")).first()
        n_reps, n_heads = int(sizes["reps"]), int(sizes["heads"])  # one pass: a head per short fingerprint
        plan = choose_plan(n_heads, spec.k)
    pair_rows = keep(group_pairs(block_rows(heads.select(F.col("short_fingerprint").alias("fingerprint")), plan), plan))

    head_a = heads.select(F.col("short_fingerprint").alias("a"), F.col("fingerprint").alias("fp_a"),
                          F.col("short_text").alias("text_a"))
    head_b = heads.select(F.col("short_fingerprint").alias("b"), F.col("fingerprint").alias("fp_b"),
                          F.col("short_text").alias("text_b"))
    near = (pair_rows.where(F.col("a").isNotNull()).join(head_a, "a").join(head_b, "b")
            .select("fp_a", "fp_b", "text_a", "text_b"))
    same = (reps.join(head_b.withColumnRenamed("b", "short_fingerprint"), "short_fingerprint")
            .where(F.col("fingerprint") != F.col("fp_b"))
            .select(F.col("fingerprint").alias("fp_a"), "fp_b", F.col("short_text").alias("text_a"), "text_b"))
    checked = keep(with_jaccard(near.unionByName(same), spec.char_ngram))
    # one aggregation of tagged rows (one shuffle): 0 the pairs compared, 1 the candidates checked and verified,
    # and when not counted first 2 the representatives and 3 the heads (one per short fingerprint)
    tagged = [pair_rows.select(F.lit(0).alias("of"), F.col("compared").alias("n")),
              checked.select(F.lit(1).alias("of"), (F.col("jaccard") >= spec.min_jaccard).cast("long").alias("n"))]
    if heads_counted_last:
        tagged += [reps.select(F.lit(2).alias("of"), F.lit(1).cast("long").alias("n")),
                   heads.select(F.lit(3).alias("of"), F.lit(1).cast("long").alias("n"))]
    with group_batches(docs.sparkSession):  # one action for all the counts
        rows = reduce(DataFrame.unionByName, tagged).groupBy("of").agg(
            F.sum("n").alias("total"), F.count(F.lit(1)).alias("rows")).collect()
    total, n_rows = ({int(r["of"]): int(r[c] or 0) for r in rows} for c in ("total", "rows"))
    if heads_counted_last:
        n_reps, n_heads = n_rows.get(2, 0), n_rows.get(3, 0)
    edges = checked.where(F.col("jaccard") >= spec.min_jaccard).select(F.col("fp_a").alias("src"), F.col("fp_b").alias("dst"))
    return edges, checked.select("fp_a", "fp_b"), short_text_stats(spec, plan, n_reps, n_heads, total.get(0, 0),
                                                                    n_rows.get(1, 0), total.get(1, 0))


def short_text_stats(spec: ShortTextSpec, plan: TablePlan, reps: int, heads: int, compared: int, candidates: int,
                     verified: int) -> dict:
    """The short-text stage's statistics for the report."""
    return {
        **spec.describe(),
        "short_pages_represented": reps,
        "short_fingerprints": heads,
        "tables": len(plan.tables),
        "key_bits": plan.key_bits(),
        "pairs_compared": compared,
        "candidate_pairs": candidates,
        "verified_pairs": verified,
    }


def found_by_main_search(pairs: DataFrame, fp_signatures: DataFrame | None, k: int,
                         bands: SignatureBands | None) -> int:
    """How many of the short-text stage's candidate pairs (fp_a, fp_b: main fingerprints) the main search
    found as well: within k bits (the SimHash tables find every such pair), or, with the band search
    (bands not None; fp_signatures: (fingerprint, signature) of the search), equal on a usable band of their
    signatures (SignatureBands.first_shared: the band search's own test). The report counts these pairs under
    both sources; one Spark action."""
    near = F.bit_count(F.col("fp_a").bitwiseXOR(F.col("fp_b"))) <= k
    if bands is None or fp_signatures is None:
        return pairs.where(near).count()
    sigs = fp_signatures.select("fingerprint", "signature")
    rows = (pairs.join(sigs.toDF("fp_a", "sig_a"), "fp_a", "left").join(sigs.toDF("fp_b", "sig_b"), "fp_b", "left")
            .select(near.alias("near"), "sig_a", "sig_b"))

    def per_batch(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            found = batch.column("near").to_numpy(zero_copy_only=False).astype(bool)
            a, b = batch.column("sig_a"), batch.column("sig_b")
            whole = pc.and_(pc.equal(pc.binary_length(a), bands.signature.nbytes),
                            pc.equal(pc.binary_length(b), bands.signature.nbytes))
            far = np.flatnonzero(~found & pc.fill_null(whole, False).to_numpy(zero_copy_only=False))
            if len(far):
                take = pa.array(far, pa.int64())
                found[far] = bands.first_shared(from_arrow(a.take(take), bands.signature),
                                                from_arrow(b.take(take), bands.signature)) >= 0
            yield pa.RecordBatch.from_arrays([pa.array([int(found.sum())], pa.int64())], names=["n"])

    total = rows.mapInArrow(per_batch, "n long").agg(F.sum("n").alias("n")).first()["n"]
    return int(total or 0)
