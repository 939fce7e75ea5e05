"""Spark stage 5: candidates. Walks the key groups of the distinct fingerprints (one per table and key bits,
core/blocks.py) and keeps the members with an accepted pair in their group (within k, first shared table;
core/candidates.py), so that signatures never ride along with the exploded block rows: only those members go
on to the verify stage (verified.py). The rows are made in numpy and shuffled packed (packed_groups.py)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from ..core.blocks import TablePlan, table_keys
from ..core.candidates import accepted_members
from .packed_groups import PACKED_SCHEMA, pack_rows, packed_batch, task_count, walk_packed_groups

MEMBER_SCHEMA = StructType([
    StructField("table", IntegerType(), True), StructField("key", LongType(), True),
    StructField("fingerprint", LongType(), True), StructField("compared", LongType(), True),
    StructField("accepted", LongType(), True), StructField("distance", IntegerType(), True),
    StructField("groups", LongType(), True),
])
_MEMBER_ARROW = pa.schema([pa.field(f.name, pa.int32() if f.dataType == IntegerType() else pa.int64()) for f in MEMBER_SCHEMA])

def group_members(fingerprints: DataFrame, plan: TablePlan, more_rows: DataFrame | None = None,
                  n_fingerprints: int = 0) -> DataFrame:
    """(table, key, fingerprint) of every member with an accepted pair in its key group, plus k + 1 statistics
    rows per task (member columns null): pairs compared, accepted pairs at each distance, groups of 2+.

    fingerprints: the distinct fingerprints (a `fingerprint` column); more_rows: block rows (table, key,
    fingerprint) made elsewhere (spark/blocks.block_rows: the history's that meet this run's keys);
    n_fingerprints: how many fingerprints, if known (sizes the reduce tasks, packed_groups.task_count)."""
    n_tables = len(plan.tables)
    partitions = task_count(n_fingerprints * n_tables, int(fingerprints.sparkSession.conf.get("spark.sql.shuffle.partitions")))

    def pack(batches):
        for batch in batches:
            fps = batch.column("fingerprint").to_numpy(zero_copy_only=False)
            if len(fps):
                yield packed_batch(table_keys(fps, plan).ravel(), np.tile(fps, n_tables),
                                   np.repeat(np.arange(n_tables, dtype=np.int32), len(fps)), partitions)

    def per_groups(members, offsets, tables, keys):
        involved, compared, by_distance = accepted_members(members, offsets, tables, plan)
        idx = np.flatnonzero(involved)
        g = np.searchsorted(offsets, idx, side="right") - 1
        n = len(idx)
        yield pa.RecordBatch.from_arrays(
            [pa.array(tables[g].astype(np.int32)), pa.array(keys[g], pa.int64()), pa.array(members[idx], pa.int64()),
             pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.int32()), pa.nulls(n, pa.int64())],
            schema=_MEMBER_ARROW)
        d = len(by_distance)
        groups = int((np.diff(offsets) >= 2).sum())
        yield pa.RecordBatch.from_arrays(
            [pa.nulls(d, pa.int32()), pa.nulls(d, pa.int64()), pa.nulls(d, pa.int64()),
             pa.array([compared] + [0] * (d - 1), pa.int64()), pa.array(by_distance, pa.int64()),
             pa.array(np.arange(d, dtype=np.int32)), pa.array([groups] + [0] * (d - 1), pa.int64())],
            schema=_MEMBER_ARROW)

    packed = fingerprints.select("fingerprint").where(F.col("fingerprint").isNotNull()).mapInArrow(pack, PACKED_SCHEMA)
    if more_rows is not None:
        packed = packed.unionByName(pack_rows(more_rows, "key", "fingerprint", "table", partitions))
    return walk_packed_groups(packed, partitions, MEMBER_SCHEMA, per_groups)
