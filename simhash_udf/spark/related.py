"""Related pages in Spark: every page's N nearest other pages within D bits, outside its own cluster, with the
estimated Jaccard index of their signatures. Two searches carry out core.related's plan:

- runs (the default, `run_search`): the pages' fingerprints and cluster codes, in id order, are broadcast; each
  task searches some of the plan's run tables in numpy (core.related_runs: sorted runs compared as contiguous
  slices) and returns each page's N nearest of what it found; a window keeps the N nearest over the tasks. No
  probe copy and no candidate pair becomes a row; a task holds the pages' fingerprints (16 bytes a page), so
  this search is for up to core.related.RUN_SEARCH_MAX_PAGES pages.
- join (`join_search`, beyond that size): each page becomes one index row per block (its block key) and one
  probe row per block and probe mask (every key within the plan's radius of its own); a probe meets the index
  rows of its key in a join, and the pair is kept when within D, not the page itself, not of its cluster, and at
  the first block within the radius (core.related.first_block: each ordered pair once). Keys, masks and
  distances are SQL expressions (shifts, XOR, bit_count), no Python UDF. A key held by more than HOT_KEY_ROWS
  pages is split: its index rows spread over ceil(count / HOT_KEY_ROWS) splits by a hash of the id and its
  probes go to every split, so no join group buffers more than HOT_KEY_ROWS index rows whatever the skew.

The top N per page is a row_number window (Spark limits it per group before the shuffle: WindowGroupLimit)."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from ..core.related import RelatedPlan, signed
from ..core.related_runs import deal, run_tables, search_tables
from ..core.signature import SignatureSpec
from .pair_similarity import with_pair_similarity

HOT_KEY_ROWS = 20_000
# Run-search tasks per core of the session (the run tables are dealt round-robin to them).
RUN_TASKS_PER_CORE = 4


def block_key(fp: Column, mask: int) -> Column:
    """The block's bits of the fingerprint (core.related.block_keys)."""
    return fp.bitwiseAND(F.lit(signed(mask)))


def first_block_of(xor: Column, plan: RelatedPlan) -> Column:
    """core.related.first_block as SQL: the first block of xor with at most plan.radius bits set."""
    out = F.lit(len(plan.blocks))
    for j in reversed(range(len(plan.blocks))):
        out = F.when(F.bit_count(block_key(xor, plan.blocks[j])) <= plan.radius, F.lit(j)).otherwise(out)
    return out


def index_rows(pages: DataFrame, plan: RelatedPlan) -> DataFrame:
    """(block, key, id, fingerprint, cluster_id): one row per page and block."""
    keys = [F.struct(F.lit(j).alias("block"), block_key(F.col("fingerprint"), mask).alias("key"))
            for j, mask in enumerate(plan.blocks)]
    return (pages.select("id", "fingerprint", "cluster_id", F.explode(F.array(*keys)).alias("_b"))
            .select("_b.block", "_b.key", "id", "fingerprint", "cluster_id"))


def probe_masks(spark, plan: RelatedPlan) -> DataFrame:
    """(block, mask): every probe mask of every block (plan.probes_per_page rows)."""
    rows = [(j, int(m)) for j in range(len(plan.blocks)) for m in plan.masks(j)]
    return spark.createDataFrame(rows, StructType([StructField("block", IntegerType(), False),
                                                   StructField("mask", LongType(), False)]))


def split_hot_keys(index: DataFrame, hot_key_rows: int) -> tuple[DataFrame, DataFrame]:
    """index rows with `split` (0 for most keys; for a key of more than hot_key_rows pages, a hash of the id
    over ceil(count / hot_key_rows) splits), and the hot keys (block, key, splits), broadcast: they are at most
    (index rows / hot_key_rows)."""
    hot = F.broadcast(index.groupBy("block", "key").count().where(F.col("count") > hot_key_rows)
                      .select("block", "key", F.ceil(F.col("count") / hot_key_rows).cast("int").alias("splits")))
    split = F.pmod(F.xxhash64("id"), F.coalesce("splits", F.lit(1))).cast("int")
    return index.join(hot, ["block", "key"], "left").withColumn("split", split).drop("splits"), hot


def run_search(pages: DataFrame, n: int, plan: RelatedPlan, tasks: int | None = None) -> DataFrame:
    """(id, related_id, distance): each task's n nearest per page over its run tables (core.related_runs), for
    top_related to merge. Positions are ranks in Spark's id order, so the tasks' ties by position are ties by id."""
    spark = pages.sparkSession
    # a page without a fingerprint (no text) is in no list, as in the joins
    local = pages.where(F.col("fingerprint").isNotNull()).select("id", "fingerprint", "cluster_id").orderBy("id").toArrow()
    ids, id_type = local.column("id").to_numpy(), local.schema.field("id").type
    fps = local.column("fingerprint").to_numpy().astype(np.int64, copy=False)
    clusters = np.unique(local.column("cluster_id").to_numpy(), return_inverse=True)[1].astype(np.int64)
    tasks = tasks or RUN_TASKS_PER_CORE * spark.sparkContext.defaultParallelism
    dealt = deal(run_tables(plan), tasks)
    shared = spark.sparkContext.broadcast((ids, id_type, fps, clusters, plan, n, dealt))
    schema = StructType([StructField("id", pages.schema["id"].dataType, False),
                         StructField("related_id", pages.schema["id"].dataType, False),
                         StructField("distance", IntegerType(), False)])

    def search(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Arrow, not pandas: a Python worker imports this module, and pandas alone costs it ~0.2 s (test_layout)
        ids, id_type, fps, clusters, plan, n, dealt = shared.value
        for batch in batches:
            for task in batch.column("task").to_pylist():
                q, p, d = search_tables(fps, clusters, plan, dealt[task], n)
                yield pa.RecordBatch.from_arrays([pa.array(ids[q], id_type), pa.array(ids[p], id_type),
                                                  pa.array(d.astype(np.int32))],
                                                 names=["id", "related_id", "distance"])

    return (spark.range(0, len(dealt), 1, max(len(dealt), 1)).select(F.col("id").cast("int").alias("task"))
            .mapInArrow(search, schema))


def join_search(pages: DataFrame, plan: RelatedPlan, hot_key_rows: int = HOT_KEY_ROWS) -> DataFrame:
    """(id, related_id, distance) for every ordered pair of pages within plan.distance, other clusters only,
    each once."""
    index, hot = split_hot_keys(index_rows(pages, plan), hot_key_rows)
    index = index.select("block", "key", "split", F.col("id").alias("related_id"), F.col("fingerprint").alias("_fp2"),
                         F.col("cluster_id").alias("_c2"))
    probes = (index_rows(pages, plan).join(F.broadcast(probe_masks(pages.sparkSession, plan)), "block")
              .withColumn("key", F.col("key").bitwiseXOR(F.col("mask")))
              .join(hot, ["block", "key"], "left")
              .select("block", "key", F.explode(F.sequence(F.lit(0), F.coalesce("splits", F.lit(1)) - 1)).alias("split"),
                      "id", "fingerprint", "cluster_id"))
    xor = F.col("fingerprint").bitwiseXOR(F.col("_fp2"))
    joined = probes.join(index, ["block", "key", "split"])  # probes streamed, index rows buffered per key
    return (joined.where((F.col("id") != F.col("related_id")) & (F.col("cluster_id") != F.col("_c2"))
                         & (F.bit_count(xor) <= plan.distance) & (first_block_of(xor, plan) == F.col("block")))
            .select("id", "related_id", F.bit_count(xor).cast("int").alias("distance")))


def top_related(pairs: DataFrame, n: int) -> DataFrame:
    """Each page's first n pairs by (distance, related id), ranked from 1."""
    order = Window.partitionBy("id").orderBy("distance", "related_id")
    return pairs.withColumn("rank", F.row_number().over(order)).where(F.col("rank") <= n)


def related_pairs(pages: DataFrame, n: int, plan: RelatedPlan, spec: SignatureSpec, search: str = "runs",
                  hot_key_rows: int = HOT_KEY_ROWS) -> DataFrame:
    """pages (id, fingerprint, cluster_id, signature): id, related_id, distance, rank and similarity (the
    estimated Jaccard index of the two pages' signatures; null where either has none). search: "runs" or
    "join" (the same rows)."""
    found = run_search(pages, n, plan) if search == "runs" else join_search(pages, plan, hot_key_rows)
    top = top_related(found, n)
    sigs = pages.select("id", "signature")
    with_sigs = (top.join(sigs.withColumnRenamed("signature", "_sig_a"), "id", "left")
                 .join(sigs.select(F.col("id").alias("related_id"), F.col("signature").alias("_sig_b")), "related_id",
                       "left"))
    return with_pair_similarity(with_sigs.select("id", "related_id", "distance", "rank", "_sig_a", "_sig_b"), "_sig_a",
                                "_sig_b", spec, ["_sig_a", "_sig_b"])

