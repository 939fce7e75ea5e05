"""Spark glue of the key-group searches (candidates.py, bands.py): rows grouped by a long key, shuffled as
packed arrays instead of one Spark row each.

The searches explode every fingerprint into one row per table or band: at 10^7 pages 40 million table rows and
~100 million band rows. Shuffled and sorted as Spark rows and handed to Python through Arrow, each would cost ~0.3
microseconds of JVM work, which would set the walk's time, not its comparisons. Here each map task computes its
rows in numpy and packs, for each shuffle partition, its rows into one binary value (keys and members as
little-endian arrays, the tags as runs). Spark shuffles these few large values by a column whose hash sends each
to its partition, and each reduce task unpacks them, sorts by key in numpy and hands the groups to a walk
(core/candidates.py, core/bands.py). The partition of a row is a function of its key alone, so every group is
whole in one task, and the groups are the ones a shuffle by key forms."""
from __future__ import annotations

import struct
from functools import lru_cache
from typing import Callable, Iterable, Iterator

import mmh3
import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from ..core.blocks import PACKED_ROW_BYTES

PACKED_SCHEMA = StructType([StructField("part", LongType(), False), StructField("rows", BinaryType(), False)])
_PACKED_ARROW = pa.schema([pa.field("part", pa.int64(), False), pa.field("rows", pa.binary(), False)])
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads keys that differ in a few bits only
_FILTER_MIX = np.uint64(0xD6E8FEB86659FD93)  # another odd multiplier: a task's keys share their partition's bits
_SPARK_HASH_SEED = 42  # the seed of Spark's hash(), which repartition(n, col) takes modulo n
# Rows a reduce task holds at most, when the run's shuffle partitions would give it more (a small
# --shuffle-partitions on a large input): Spark's sort spilled to disk, a task here holds its rows in numpy,
# 4M rows are 80 MB packed and ~250 MB with the sort's copies in the Python worker.
MAX_ROWS_PER_TASK = 4_000_000


def task_count(rows: int, partitions: int) -> int:
    """Reduce tasks for about `rows` rows: the session's shuffle partitions, or more so that none holds more
    than MAX_ROWS_PER_TASK."""
    return max(partitions, -(-rows // MAX_ROWS_PER_TASK))


def spark_partition_of(value: int, partitions: int) -> int:
    """The partition that `repartition(partitions, col)` gives a long `value`: Spark's Murmur3 (x86, 32 bits,
    seed 42) of its 8 little-endian bytes, modulo `partitions` (a non-negative modulo, as Spark's pmod)."""
    return mmh3.hash(struct.pack("<q", value), _SPARK_HASH_SEED) % partitions


@lru_cache(maxsize=64)
def partition_values(partitions: int) -> np.ndarray:
    """For each partition j, the smallest long that `repartition(partitions, col)` sends to partition j, so
    the packed values of partition j go there and no partition gets two tasks' worth (~2 x partitions
    hashes)."""
    values, found, v = np.full(partitions, -1, np.int64), 0, 0
    while found < partitions:
        j = spark_partition_of(v, partitions)
        if values[j] < 0:
            values[j], found = v, found + 1
        v += 1
    return values


def partition_of_keys(keys: np.ndarray, partitions: int) -> np.ndarray:
    """The partition (0 <= p < partitions) of each key: the top bits of a multiplicative hash."""
    h = (keys.view(np.uint64) * _MIX) >> np.uint64(32)
    p = (h % np.uint64(partitions)).astype(np.int64)
    # small partition numbers sort with numpy's radix sort (stable sort of 16-bit integers)
    return p.astype(np.int16) if partitions <= np.iinfo(np.int16).max else p


def packed_batch(keys: np.ndarray, members: np.ndarray, tags: np.ndarray, partitions: int) -> pa.RecordBatch:
    """The rows (key, member, tag) as one (part, rows) value per partition that holds any of them.

    A value's rows are ordered by tag, so the tags go as runs (a table's or band's rows of one batch are
    one run): the row count and run count (int32), the keys and members (int64), then each run's tag and
    length (int32): 16 bytes a row instead of 20 with a tag a row, a fifth less to shuffle; the order of rows
    within a value does not matter, the reduce side sorts them by key."""
    n = len(keys)
    if not n:
        return pa.RecordBatch.from_arrays([pa.array([], pa.int64()), pa.array([], pa.binary())], schema=_PACKED_ARROW)
    part = partition_of_keys(keys, partitions)
    tags = tags.astype(np.int32, copy=False)
    low, high = int(tags.min()), int(tags.max())
    if low >= 0 and partitions * (high + 1) <= np.iinfo(np.int16).max:  # numpy's radix sort of 16-bit integers
        order = np.argsort(part.astype(np.int16) * np.int16(high + 1) + tags.astype(np.int16), kind="stable")
    else:
        order = np.lexsort((tags, part))
    part, tags = part[order], tags[order]
    keys = keys.astype("<i8", copy=False)[order]
    members = members.astype("<i8", copy=False)[order]
    run_start = np.r_[0, np.flatnonzero((part[1:] != part[:-1]) | (tags[1:] != tags[:-1])) + 1]
    run_bounds = np.r_[run_start, n]
    run_len, run_tag, run_part = np.diff(run_bounds).astype("<i4"), tags[run_start].astype("<i4"), part[run_start]
    first_run = np.r_[0, np.flatnonzero(run_part[1:] != run_part[:-1]) + 1, len(run_start)]  # per partition
    values, parts, blobs = partition_values(partitions), [], []
    for a, b in zip(first_run[:-1].tolist(), first_run[1:].tolist()):
        s, e = int(run_bounds[a]), int(run_bounds[b])
        parts.append(values[run_part[a]])
        blobs.append(b"".join((np.array([e - s, b - a], "<i4").tobytes(), keys[s:e].tobytes(),
                               members[s:e].tobytes(), run_tag[a:b].tobytes(), run_len[a:b].tobytes())))
    return pa.RecordBatch.from_arrays([pa.array(parts, pa.int64()), pa.array(blobs, pa.binary())],
                                      schema=_PACKED_ARROW)


def unpacked(batches: Iterable[pa.RecordBatch]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, members, tags) of every packed value of a task (packed_batch's layout), in one array each."""
    keys, members, tags = [], [], []
    for batch in batches:
        col = batch.column("rows")
        for i in range(len(col)):
            buf = col[i].as_buffer()
            n, runs = (int(x) for x in np.frombuffer(buf, "<i4", 2, 0))
            keys.append(np.frombuffer(buf, "<i8", n, 8))
            members.append(np.frombuffer(buf, "<i8", n, 8 + 8 * n))
            end = 8 + PACKED_ROW_BYTES * n
            tags.append(np.repeat(np.frombuffer(buf, "<i4", runs, end), np.frombuffer(buf, "<i4", runs, end + 4 * runs)))
    if not keys:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int32)
    return (np.concatenate(keys).astype(np.int64, copy=False), np.concatenate(members).astype(np.int64, copy=False),
            np.concatenate(tags).astype(np.int32, copy=False))


def sorted_groups(keys: np.ndarray, members: np.ndarray, tags: np.ndarray, min_size: int = 1):
    """The rows in (key, tag) groups: (members, offsets, tags, keys), members[offsets[g]:offsets[g + 1]] the
    members of group g, and each group's tag and key; groups of fewer than min_size rows left out."""
    if min_size > 1:
        keys, members, tags = _rows_of_repeated_keys(keys, members, tags)
    order = np.argsort(keys)
    keys, members, tags = keys[order], members[order], tags[order]
    same = keys[1:] == keys[:-1]
    if (same & (tags[1:] != tags[:-1])).any():  # one key under two tags (tables not packed, a band key hash
        order = np.lexsort((tags, keys))        # shared by two bands): group by both
        keys, members, tags = keys[order], members[order], tags[order]
        same = (keys[1:] == keys[:-1]) & (tags[1:] == tags[:-1])
    starts = np.r_[0, np.flatnonzero(~same) + 1] if len(keys) else np.empty(0, np.int64)
    sizes = np.diff(np.r_[starts, len(keys)])
    if min_size > 1:
        big = sizes >= min_size
        rows = np.repeat(big, sizes)
        keys, members, tags, sizes = keys[rows], members[rows], tags[rows], sizes[big]
        starts = np.r_[0, np.cumsum(sizes)[:-1]] if len(sizes) else np.empty(0, np.int64)
    offsets = np.r_[starts, len(keys)].astype(np.int64)
    return members, offsets, tags[starts], keys[starts]


def _rows_of_repeated_keys(keys: np.ndarray, members: np.ndarray, tags: np.ndarray):
    """The rows whose key may occur more than once, for a walk of groups of 2 or more. Most band keys are met
    once (a page shares no band with any other): a count of the keys' hashes in up to 2^23 buckets drops the
    rows alone in their bucket, which are alone in their key too, before the sort. The rest (the repeated
    keys, and the ~30% of 2.5M rows that share a bucket by chance) go on to it: a count is cheaper than
    sorting the rows it drops."""
    if not len(keys):
        return keys, members, tags
    bits = int(min(23, max(10, np.ceil(np.log2(len(keys))) + 2)))
    h = ((keys.astype(np.int64, copy=False).view(np.uint64) * _FILTER_MIX) >> np.uint64(64 - bits)).astype(np.intp)
    pick = np.bincount(h, minlength=1 << bits)[h] >= 2
    return keys[pick], members[pick], tags[pick]


def walk_packed_groups(packed: DataFrame, partitions: int, schema: StructType,
                       per_groups: Callable[..., Iterator[pa.RecordBatch]], min_size: int = 1) -> DataFrame:
    """Shuffle packed rows (packed_batch) to their partitions and call per_groups(members, offsets, tags,
    keys) once per task with all of its groups (sorted_groups)."""

    def walk(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keys, members, tags = unpacked(batches)
        yield from per_groups(*sorted_groups(keys, members, tags, min_size))

    return packed.repartition(partitions, "part").mapInArrow(walk, schema)


def pack_rows(rows: DataFrame, key: str, member: str, tag: str, partitions: int) -> DataFrame:
    """Rows already exploded (e.g. the history's few rows that meet this run's keys) as packed rows."""

    def pack(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            if b.num_rows:
                yield packed_batch(*(b.column(c).to_numpy(zero_copy_only=False) for c in (key, member, tag)),
                                   partitions)

    return rows.select(key, member, tag).mapInArrow(pack, PACKED_SCHEMA)
