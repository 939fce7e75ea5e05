"""Spark stages 4 and 5: explode distinct fingerprints into (table, key) rows as SQL rows, and form key groups
of Spark rows for the walks whose rows are few (the verify stage, verified.py; the short-text pairs,
short_text.py) and for matching the history's rows to this run's keys (io/history.py). The first pass of the
searches, over every fingerprint, groups its rows packed instead (candidates.py, packed_groups.py).

Groups are formed by a sort, not by an aggregation: the rows are shuffled by key and sorted within each
partition, so every group is one contiguous run, and a mapInArrow walks the runs over flat Arrow columns
(two longs per row). When the table index and the key bits fit in one long (every plan the planner picks)
the key is packed into that long and the sort is on a single column, which Spark does with a radix sort.
That costs a fraction of a groupBy + collect_list handing lists of members to Python."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..core.blocks import BITS as FP_BITS
from ..core.blocks import TablePlan, packed_key_shift

# Rows per Arrow batch of the group walk: rows are two longs, so 2^18 rows are ~4 MB; bigger batches mean
# fewer Python calls per partition (the session's batch size is tuned for page text, not for this).
GROUP_BATCH_ROWS = 1 << 18


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def key_expressions(plan: TablePlan, fp) -> list:
    """One long per table that identifies (table, the fingerprint's key bits in that table): packed as
    table index in the top bits and the table's blocks side by side below, or the masked fingerprint when
    that does not fit (then the table column tells the tables apart)."""
    shift = packed_key_shift(plan)
    if shift is None:
        return [fp.bitwiseAND(F.lit(mask).cast("long")) for mask in plan.table_masks()]
    keys = []
    for t, table in enumerate(plan.tables):
        key, offset = (F.lit(_signed(t << shift)).cast("long") if shift < FP_BITS else F.lit(0).cast("long")), 0
        for b in table:
            start, width = plan.blocks[b]
            bits = F.shiftrightunsigned(fp, start).bitwiseAND(F.lit(_signed((1 << width) - 1)).cast("long"))
            key = key.bitwiseOR(F.shiftleft(bits, offset))
            offset += width
        keys.append(key)
    return keys


def block_rows(fingerprints: DataFrame, plan: TablePlan, fp_col: str = "fingerprint") -> DataFrame:
    """(table, key, fingerprint): one row per distinct fingerprint and table (see key_expressions)."""
    fp = F.col(fp_col)
    keys = [
        F.struct(F.lit(t).cast("int").alias("table"), key.alias("key"))
        for t, key in enumerate(key_expressions(plan, fp))
    ]
    return fingerprints.select(F.explode(F.array(*keys)).alias("b"), fp.alias("fingerprint")).select(
        "b.table", "b.key", "fingerprint"
    )


def key_runs(rows: DataFrame, plan: TablePlan) -> DataFrame:
    """block rows (table, key, fingerprint) shuffled and sorted so that each group is one contiguous run of
    one partition."""
    shift = packed_key_shift(plan)
    if shift is not None:  # the key alone identifies the group: one sort column (radix sort)
        table = F.shiftrightunsigned("key", shift).cast("int") if shift < FP_BITS else F.lit(0)
        return (rows.select("key", "fingerprint").repartition("key").sortWithinPartitions("key")
                .select(table.alias("table"), "key", "fingerprint"))
    group = F.xxhash64("table", "key")  # a discriminating first sort column, then the group itself
    return (rows.repartition(group).sortWithinPartitions(group, "table", "key")
            .select("table", "key", "fingerprint"))


def walk_groups(
    batches: Iterable[pa.RecordBatch],
    per_groups: Callable[..., Iterator[pa.RecordBatch]],
    extra: Callable[[pa.RecordBatch], np.ndarray] | None = None,
    with_keys: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Hand the complete groups of sorted (table, key, fingerprint) batches to per_groups(members, offsets,
    tables[, keys[, extras]]); a group still running at the end of a batch is carried into the next one, so
    the groups seen do not depend on where the batches were cut. With `with_keys`, per_groups also gets each
    group's key; with `extra` (a row-aligned array made from each batch, e.g. the signatures), the keys and
    those rows."""
    carry = None
    for batch in batches:
        cols = [batch.column(c).to_numpy(zero_copy_only=False) for c in ("table", "key", "fingerprint")]
        if extra is not None:
            cols.append(extra(batch))
        if carry is not None:
            cols = [np.concatenate([c, x]) for c, x in zip(carry, cols)]
        table, key, fp = cols[:3]
        if not len(fp):
            continue
        starts = np.r_[0, np.flatnonzero((table[1:] != table[:-1]) | (key[1:] != key[:-1])) + 1]
        last = int(starts[-1])
        carry = [c[last:] for c in cols]
        if last:
            more = ((key[starts[:-1]],) if with_keys or extra else ()) + ((cols[3][:last],) if extra else ())
            yield from per_groups(fp[:last], np.r_[starts[:-1], last], table[starts[:-1]], *more)
    if carry is not None and len(carry[2]):
        more = ((carry[1][:1],) if with_keys or extra else ()) + ((carry[3],) if extra else ())
        yield from per_groups(carry[2], np.array([0, len(carry[2])]), carry[0][:1], *more)


@contextmanager
def group_batches(spark: SparkSession, rows: int | None = None):
    """Run the actions inside with GROUP_BATCH_ROWS (or `rows`) Arrow rows per batch; the session's
    setting is restored after."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key, None)
    spark.conf.set(key, str(rows or GROUP_BATCH_ROWS))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
