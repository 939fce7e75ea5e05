"""Spark glue of the signature-band search (core/bands.py is the pure part), in the two passes of the SimHash
search (candidates.py, verified.py): the (band, key, fingerprint) rows of every page are grouped by key
(shuffled packed, packed_groups.py), a first walk keeps the members that have a pair more than k bits apart
in their group, and only those get their signature by a join, are grouped again (as Spark rows: they are
few) and verified (verified.verify_band_groups). Band keys are SQL hashes of the signature's bytes."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from ..core.bands import SignatureBands, band_members
from ..core.signature import from_arrow
from ..core.verified import BANDS, VerifySpec, verify_band_groups
from .blocks import walk_groups
from .packed_groups import PACKED_SCHEMA, pack_rows, packed_batch, task_count, walk_packed_groups
from .verified import _VERIFIED_ARROW, VERIFIED_SCHEMA

BAND_MEMBER_SCHEMA = StructType([
    StructField("band", IntegerType(), True), StructField("key", LongType(), True),
    StructField("fingerprint", LongType(), True), StructField("compared", LongType(), True),
    StructField("groups", LongType(), True),
])
_BAND_MEMBER_ARROW = pa.schema([pa.field(f.name, pa.int32() if f.name == "band" else pa.int64())
                                for f in BAND_MEMBER_SCHEMA])


def band_key_expressions(bands: SignatureBands, signature) -> list:
    """One long per band, null when the band is not usable (SignatureBands.usable: fewer than min_runs runs
    of equal adjacent bins): xxhash64 of the band index and the band's bytes of the signature. A hash, not
    the bytes themselves (SignatureBands.keys), because it is a single cheap expression (converting the
    bytes with conv(hex(...)) took 5x longer); two different bands that collide on the hash only put a pair
    in one group, where verify_band_groups accepts it only if the signatures really share that band."""
    nb, w = bands.band_bytes, bands.signature.bits // 8

    def key(b: int):
        start = b * nb + 1
        cells = [F.substring(signature, start + i * w, w) for i in range(bands.bins)]
        runs = sum((x != y).cast("int") for x, y in zip(cells, cells[1:])) + 1 if bands.bins > 1 else F.lit(1)
        return F.when(runs >= bands.min_runs, F.xxhash64(F.lit(b), F.substring(signature, start, nb)))

    return [key(b) for b in range(bands.bands)]


def band_rows(fp_signatures: DataFrame, bands: SignatureBands) -> DataFrame:
    """(band, key, fingerprint): one row per usable band of every fingerprint that has a signature."""
    return exploded_band_keys(band_key_arrays(fp_signatures, bands))


def band_key_arrays(fp_signatures: DataFrame, bands: SignatureBands) -> DataFrame:
    """(fingerprint, keys): per row with a signature, its band keys as one array (element i for band i, null
    where the band is not usable). The history's band index holds these (io/history.py)."""
    keys = band_key_expressions(bands, F.col("signature"))
    return fp_signatures.where(F.col("signature").isNotNull()).select("fingerprint", F.array(*keys).alias("keys"))


def exploded_band_keys(arrays: DataFrame) -> DataFrame:
    """(band, key, fingerprint) rows of (fingerprint, keys) arrays, the unusable bands left out.

    posexplode_outer, not posexplode: for an inner explode of a column Spark infers the filter `size(keys) > 0`
    (InferFiltersFromGenerate) and pushes it below the projection that computes the keys, so every key
    expression is generated twice; the stage's generated method then passes HotSpot's 8000-byte limit and
    is never compiled (10M fingerprints: the band rows took 94 s instead of 9 s). The outer form gives the
    same rows here (a null or empty array gives one null key, dropped with the unusable bands)."""
    return (arrays.select(F.posexplode_outer("keys").alias("band", "key"), "fingerprint")
            .where(F.col("key").isNotNull()))


def _runs(rows: DataFrame, *extra: str) -> DataFrame:
    """Rows in (band, key) groups, each group one run sorted by fingerprint (walk_groups' `table` = band)."""
    # key first: Spark sorts on a prefix of the first column, and the band index alone (10 values) would
    # leave almost every comparison to the full row (3x slower)
    return (rows.repartition("key").sortWithinPartitions("key", "band", "fingerprint")
            .select(F.col("band").alias("table"), "key", "fingerprint", *extra))


def band_group_members(arrays: DataFrame, bands: SignatureBands, k: int, more_rows: DataFrame | None = None,
                       n_fingerprints: int = 0) -> DataFrame:
    """(band, key, fingerprint) of every member with a pair more than k bits apart in its band group, plus
    one statistics row per task (band, key and fingerprint null): pairs compared, groups of two or more.

    arrays: (fingerprint, keys) of band_key_arrays; more_rows: band rows (band, key, fingerprint) made
    elsewhere (the history's that meet this run's keys). The rows are made from the arrays in numpy and
    shuffled packed (packed_groups.py); most band groups are single pages (a page shares no band with any
    other), and those are dropped after the sort, before the walk. n_fingerprints: how many rows `arrays`
    has, if known (sizes the reduce tasks, packed_groups.task_count)."""
    partitions = task_count(n_fingerprints * bands.bands, int(arrays.sparkSession.conf.get("spark.sql.shuffle.partitions")))

    def pack(batches):
        for batch in batches:
            fps, band, keys = array_rows(batch)
            if len(fps):
                yield packed_batch(keys, fps, band, partitions)

    def per_groups(members, offsets, tables, keys):
        involved, compared = band_members(members, offsets, k)
        idx = np.flatnonzero(involved)
        g = np.searchsorted(offsets, idx, side="right") - 1
        n = len(idx)
        yield pa.RecordBatch.from_arrays(
            [pa.array(tables[g], pa.int32()), pa.array(keys[g], pa.int64()), pa.array(members[idx], pa.int64()),
             pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64())], schema=_BAND_MEMBER_ARROW)
        yield pa.RecordBatch.from_arrays(
            [pa.nulls(1, pa.int32()), pa.nulls(1, pa.int64()), pa.nulls(1, pa.int64()), pa.array([compared], pa.int64()),
             pa.array([int((np.diff(offsets) >= 2).sum())], pa.int64())], schema=_BAND_MEMBER_ARROW)

    packed = arrays.select("fingerprint", "keys").mapInArrow(pack, PACKED_SCHEMA)
    if more_rows is not None:
        packed = packed.unionByName(pack_rows(more_rows, "key", "fingerprint", "band", partitions))
    return walk_packed_groups(packed, partitions, BAND_MEMBER_SCHEMA, per_groups, min_size=2)


def array_rows(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fingerprint, band, key) of every usable band of a batch of (fingerprint, keys) rows: the numpy form of
    exploded_band_keys (a null key, an unusable band, is left out; so is a row with a null fingerprint)."""
    lists = batch.column("keys")
    flat = lists.flatten()
    if not len(flat):
        return np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.int64)
    parent = pc.list_parent_indices(lists).to_numpy()
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
    band = np.arange(len(flat), dtype=np.int64) - np.r_[0, np.cumsum(lengths)[:-1]][parent]
    fp_col = batch.column("fingerprint")
    usable = flat.is_valid().to_numpy(zero_copy_only=False) & fp_col.is_valid().to_numpy(zero_copy_only=False)[parent]
    keys = pc.fill_null(flat, 0).to_numpy()
    fps = pc.fill_null(fp_col, 0).to_numpy()[parent]
    return fps[usable], band[usable].astype(np.int32), keys[usable]


def band_edges(members: DataFrame, fp_signatures: DataFrame, bands: SignatureBands, k: int,
               spec: VerifySpec) -> DataFrame:
    """Forest edges (src, dst) of the verified band pairs and BANDS statistics rows per call (band, verified,
    rejected), in the verify stage's schema (verified.VERIFIED_SCHEMA)."""
    rows = members.where(F.col("fingerprint").isNotNull()).select("band", "key", "fingerprint").join(
        fp_signatures.select("fingerprint", "signature"), "fingerprint")

    def extra(batch: pa.RecordBatch) -> np.ndarray:
        return from_arrow(batch.column("signature"), spec.signature)

    def per_groups(fps, offsets, tables, keys, sigs):
        out = verify_band_groups(fps, sigs, offsets, tables.astype(np.int64), k, bands, spec)
        n = len(out.src)
        yield pa.RecordBatch.from_arrays(
            [pa.array(out.src, pa.int64()), pa.array(out.dst, pa.int64()), pa.nulls(n, pa.int32()),
             pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64())], schema=_VERIFIED_ARROW)
        yield pa.RecordBatch.from_arrays(
            [pa.nulls(BANDS, pa.int64()), pa.nulls(BANDS, pa.int64()), pa.array(np.arange(BANDS, dtype=np.int32)),
             pa.array(out.verified_by_band, pa.int64()), pa.array(out.rejected_by_band, pa.int64())],
            schema=_VERIFIED_ARROW)

    return _runs(rows, "signature").mapInArrow(lambda b: walk_groups(b, per_groups, extra=extra),
                                                     VERIFIED_SCHEMA)
