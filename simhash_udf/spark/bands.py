"""Spark glue of the signature-band search (core/bands.py is the pure part), in the two passes of the SimHash
search (candidates.py, verified.py): the (band, key, fingerprint) rows of every page are grouped by key
(shuffled packed, packed_groups.py), and a first walk keeps what has a pair more than k bits apart in its
group. Of a group of more than PAIR_GROUP members these are its members, which get their signature by a join,
are grouped again (as Spark rows: they are few) and verified (verified.verify_band_groups); of a smaller group,
its far pairs, made distinct and verified with their two signatures (verified.verify_band_pairs). Band keys
are Spark's xxhash64 of the band's bytes of the signature, computed in numpy (core/xxhash64.py)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, LongType, StructField, StructType

from ..core.bands import SignatureBands, band_pairs_and_members
from ..core.signature import from_arrow
from ..core.verified import VerifySpec, verify_band_groups, verify_band_pairs
from .blocks import walk_groups
from .packed_groups import PACKED_SCHEMA, pack_rows, packed_batch, task_count, walk_packed_groups
from .verified import VERIFIED_SCHEMA, verified_batches

BAND_MEMBER_SCHEMA = StructType([
    StructField("band", IntegerType(), True), StructField("key", LongType(), True),
    StructField("fingerprint", LongType(), True), StructField("compared", LongType(), True),
    StructField("groups", LongType(), True), StructField("other", LongType(), True),
])
KEY_ARRAYS_SCHEMA = StructType([StructField("fingerprint", LongType(), True),
                                StructField("keys", ArrayType(LongType(), True), True)])
_KEY_ARRAYS_ARROW = pa.schema([pa.field("fingerprint", pa.int64()), pa.field("keys", pa.list_(pa.int64()))])
_BAND_MEMBER_ARROW = pa.schema([pa.field(f.name, pa.int32() if f.name == "band" else pa.int64())
                                for f in BAND_MEMBER_SCHEMA])


def band_rows(fp_signatures: DataFrame, bands: SignatureBands) -> DataFrame:
    """(band, key, fingerprint): one row per usable band of every fingerprint that has a signature."""
    return exploded_band_keys(band_key_arrays(fp_signatures, bands))


def signature_band_keys(batch: pa.RecordBatch, bands: SignatureBands) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fingerprint, keys, usable) of a batch of (fingerprint, signature) rows without null signatures: keys
    and usable (rows x bands) as SignatureBands.hashed_keys and .usable give them."""
    sigs = from_arrow(batch.column("signature"), bands.signature)
    fps = pc.fill_null(batch.column("fingerprint"), 0).to_numpy(zero_copy_only=False)
    return fps, bands.hashed_keys(sigs), bands.usable(sigs)


def band_key_rows(batch: pa.RecordBatch, bands: SignatureBands) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fingerprint, band, key) of every usable band of a batch of (fingerprint, signature) rows without null
    signatures: the numpy form of band_rows."""
    fps, keys, usable = signature_band_keys(batch, bands)
    band = np.broadcast_to(np.arange(bands.bands, dtype=np.int32), keys.shape)
    return np.broadcast_to(fps[:, None], keys.shape)[usable], band[usable], keys[usable]


def band_key_arrays(fp_signatures: DataFrame, bands: SignatureBands) -> DataFrame:
    """(fingerprint, keys): per row with a signature, its band keys as one array (element i for band i, null
    where the band is not usable). The history's band index holds these (io/history.py). Computed in numpy
    (SignatureBands.hashed_keys: the values of Spark's xxhash64)."""

    def arrays(batches):
        for batch in batches:
            fps, keys, usable = signature_band_keys(batch, bands)
            n = len(fps)
            offsets = pa.array(np.arange(0, n * bands.bands + 1, bands.bands, dtype=np.int32))
            values = pa.array(keys.ravel(), pa.int64(), mask=~usable.ravel())
            yield pa.RecordBatch.from_arrays([batch.column("fingerprint"), pa.ListArray.from_arrays(offsets, values)],
                                             schema=_KEY_ARRAYS_ARROW)

    return fp_signatures.where(F.col("signature").isNotNull()).select("fingerprint", "signature").mapInArrow(
        arrays, KEY_ARRAYS_SCHEMA)


def exploded_band_keys(arrays: DataFrame) -> DataFrame:
    """(band, key, fingerprint) rows of (fingerprint, keys) arrays, the unusable bands left out.

    posexplode_outer, not posexplode: for an inner explode Spark infers the filter `size(keys) > 0`
    (InferFiltersFromGenerate) and pushes it below the projection that makes the keys; where the keys are SQL
    expressions each is then generated twice, and the stage's method grows past what HotSpot compiles (it runs
    interpreted, ~10x slower). The outer form gives the same rows here (a null or empty array gives one null
    key, dropped with the unusable bands)."""
    return (arrays.select(F.posexplode_outer("keys").alias("band", "key"), "fingerprint")
            .where(F.col("key").isNotNull()))


def _runs(rows: DataFrame, *extra: str) -> DataFrame:
    """Rows in (band, key) groups, each group one run sorted by fingerprint (walk_groups' `table` = band)."""
    # key first: Spark sorts on a prefix of the first column, and the band index alone (10 values) would
    # leave almost every comparison to the full row (3x slower)
    return (rows.repartition("key").sortWithinPartitions("key", "band", "fingerprint")
            .select(F.col("band").alias("table"), "key", "fingerprint", *extra))


def band_group_members(fp_signatures: DataFrame, bands: SignatureBands, k: int, more_rows: DataFrame | None = None,
                       n_fingerprints: int = 0) -> DataFrame:
    """(band, key, fingerprint, other null) of every member with a pair more than k bits apart in its band
    group of more than PAIR_GROUP members; (band, key, fingerprint, other) of every such pair in a smaller
    group (fingerprint < other: core/bands.band_pairs_and_members); and one statistics row per task (band,
    key, fingerprint and other null): pairs compared, groups of two or more.

    fp_signatures: (fingerprint, signature); more_rows: band rows (band, key, fingerprint) made elsewhere
    (the history's that meet this run's keys). The rows are made from the signatures in numpy (the keys of
    band_key_arrays) and shuffled packed (packed_groups.py); most band groups are single pages (a page shares
    no band with any other), and those are dropped after the sort, before the walk. n_fingerprints: how many
    rows `fp_signatures` has, if known (sizes the reduce tasks, packed_groups.task_count)."""
    session_partitions = int(fp_signatures.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    partitions = task_count(n_fingerprints * bands.bands, session_partitions)

    def pack(batches):
        for batch in batches:
            fps, band, keys = band_key_rows(batch, bands)
            if len(fps):
                yield packed_batch(keys, fps, band, partitions)

    def per_groups(members, offsets, tables, keys):
        involved, compared, lo, hi, pair_group = band_pairs_and_members(members, offsets, k)
        idx = np.flatnonzero(involved)
        g = np.searchsorted(offsets, idx, side="right") - 1
        n = len(idx)
        yield pa.RecordBatch.from_arrays(
            [pa.array(tables[g], pa.int32()), pa.array(keys[g], pa.int64()), pa.array(members[idx], pa.int64()),
             pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64())], schema=_BAND_MEMBER_ARROW)
        n = len(lo)
        yield pa.RecordBatch.from_arrays(
            [pa.array(tables[pair_group], pa.int32()), pa.array(keys[pair_group], pa.int64()), pa.array(lo, pa.int64()),
             pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64()), pa.array(hi, pa.int64())], schema=_BAND_MEMBER_ARROW)
        yield pa.RecordBatch.from_arrays(
            [pa.nulls(1, pa.int32()), pa.nulls(1, pa.int64()), pa.nulls(1, pa.int64()), pa.array([compared], pa.int64()),
             pa.array([int((np.diff(offsets) >= 2).sum())], pa.int64()), pa.nulls(1, pa.int64())],
            schema=_BAND_MEMBER_ARROW)

    packed = fp_signatures.where(F.col("fingerprint").isNotNull() & F.col("signature").isNotNull()).select(
        "fingerprint", "signature").mapInArrow(pack, PACKED_SCHEMA)
    if more_rows is not None:
        packed = packed.unionByName(pack_rows(more_rows, "key", "fingerprint", "band", partitions))
    return walk_packed_groups(packed, partitions, BAND_MEMBER_SCHEMA, per_groups, min_size=2)


def band_edges(members: DataFrame, fp_signatures: DataFrame, bands: SignatureBands, k: int,
               spec: VerifySpec) -> DataFrame:
    """Edges (src, dst) of the verified band pairs and BANDS statistics rows per call (band, verified,
    rejected), in the verify stage's schema (verified.VERIFIED_SCHEMA): the members of large groups verified
    group by group (a spanning forest of each), the pairs of small groups made distinct first (a pair of
    copies is met in every band it shares, so as members with their signatures it would move its signatures
    once a band) and verified with their two signatures."""
    sigs = fp_signatures.select("fingerprint", "signature")
    rows = members.where(F.col("fingerprint").isNotNull() & F.col("other").isNull()).select(
        "band", "key", "fingerprint").join(sigs, "fingerprint")

    def extra(batch: pa.RecordBatch) -> np.ndarray:
        return from_arrow(batch.column("signature"), spec.signature)

    def per_groups(fps, offsets, tables, keys, sigs):
        out = verify_band_groups(fps, sigs, offsets, tables.astype(np.int64), k, bands, spec)
        yield from verified_batches(out.src, out.dst, out.verified_by_band, out.rejected_by_band)

    in_groups = _runs(rows, "signature").mapInArrow(lambda b: walk_groups(b, per_groups, extra=extra),
                                                      VERIFIED_SCHEMA)
    return in_groups.unionByName(band_pair_edges(members, sigs, bands, spec))


def band_pair_edges(members: DataFrame, sigs: DataFrame, bands: SignatureBands, spec: VerifySpec) -> DataFrame:
    """The distinct far pairs of small band groups (band_group_members' rows with `other`), each with the
    bands it was met in (two bit masks) and its two signatures: edges of the verified ones, and BANDS
    statistics rows per Arrow batch (core/verified.verify_band_pairs)."""
    # the bands a pair was met in as two bit masks (up to 128 bands): bit_or is a plain hash aggregation, where
    # collect_set would be an object aggregation at several times the cost
    masks = [F.expr(f"bit_or(CASE WHEN band >= {low} AND band < {low + 64} THEN shiftleft(1L, band - {low}) ELSE 0L END)")
             .alias(name) for low, name in ((0, "bands_low"), (64, "bands_high"))]
    pairs = members.where(F.col("other").isNotNull()).groupBy("fingerprint", "other").agg(*masks)
    rows = pairs.join(sigs, "fingerprint").join(
        sigs.select(F.col("fingerprint").alias("other"), F.col("signature").alias("other_signature")), "other")

    def verify(batches):
        for batch in batches:
            found_in = np.column_stack([batch.column(c).to_numpy(zero_copy_only=False).view(np.uint64)
                                        for c in ("bands_low", "bands_high")])
            ok, verified, rejected = verify_band_pairs(
                from_arrow(batch.column("signature"), spec.signature),
                from_arrow(batch.column("other_signature"), spec.signature), found_in, bands, spec)
            yield from verified_batches(batch.column("fingerprint").filter(pa.array(ok)).cast(pa.int64()),
                                        batch.column("other").filter(pa.array(ok)).cast(pa.int64()), verified, rejected)

    return rows.select("fingerprint", "other", "bands_low", "bands_high", "signature", "other_signature").mapInArrow(
        verify, VERIFIED_SCHEMA)
