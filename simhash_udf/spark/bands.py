"""Spark glue of the signature-band search (core/bands.py is the pure part), in the two passes of the SimHash
search (candidates.py, verified.py): (band key, fingerprint) rows are shuffled and sorted so each key group
is one run, a first walk keeps the members that have a pair more than k bits apart in their group, and only
those get their signature by a join, are grouped again and verified (verified.verify_band_groups). Band
keys are SQL expressions over the signature's bytes."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from ..core.bands import SignatureBands, band_members
from ..core.signature import from_arrow
from ..core.verified import BANDS, VerifySpec, verify_band_groups
from .blocks import walk_groups
from .verified import _VERIFIED_ARROW, VERIFIED_SCHEMA

BAND_MEMBER_SCHEMA = StructType([
    StructField("key", LongType(), True), StructField("fingerprint", LongType(), True),
    StructField("compared", LongType(), True), StructField("groups", LongType(), True),
])
_BAND_MEMBER_ARROW = pa.schema([pa.field(f.name, pa.int64()) for f in BAND_MEMBER_SCHEMA])


def band_key_expressions(bands: SignatureBands, signature) -> list:
    """One long per band: the band index above the band's bytes of the signature (big-endian), as
    SignatureBands.keys computes them."""
    nb = bands.band_bytes
    return [F.lit(b << bands.key_bits).cast("long").bitwiseOR(
        F.conv(F.hex(F.substring(signature, b * nb + 1, nb)), 16, 10).cast("long")) for b in range(bands.bands)]


def band_rows(fp_signatures: DataFrame, bands: SignatureBands) -> DataFrame:
    """(key, fingerprint): one row per band of every fingerprint that has a signature."""
    keys = band_key_expressions(bands, F.col("signature"))
    return fp_signatures.where(F.col("signature").isNotNull()).select(
        F.explode(F.array(*keys)).alias("key"), "fingerprint")


def _runs(rows: DataFrame, bands: SignatureBands, *extra: str) -> DataFrame:
    return (rows.repartition("key").sortWithinPartitions("key", "fingerprint")
            .select(F.shiftrightunsigned("key", bands.key_bits).cast("int").alias("table"), "key", "fingerprint",
                    *extra))


def band_group_members(rows: DataFrame, bands: SignatureBands, k: int) -> DataFrame:
    """(key, fingerprint) of every member with a pair more than k bits apart in its band group, plus one
    statistics row per call (key and fingerprint null): pairs compared, groups of two or more."""

    def per_groups(members, offsets, tables, keys):
        involved, compared = band_members(members, offsets, k)
        idx = np.flatnonzero(involved)
        g = np.searchsorted(offsets, idx, side="right") - 1
        n = len(idx)
        yield pa.RecordBatch.from_arrays(
            [pa.array(keys[g], pa.int64()), pa.array(members[idx], pa.int64()), pa.nulls(n, pa.int64()),
             pa.nulls(n, pa.int64())], schema=_BAND_MEMBER_ARROW)
        yield pa.RecordBatch.from_arrays(
            [pa.nulls(1, pa.int64()), pa.nulls(1, pa.int64()), pa.array([compared], pa.int64()),
             pa.array([int((np.diff(offsets) >= 2).sum())], pa.int64())], schema=_BAND_MEMBER_ARROW)

    return _runs(rows, bands).mapInArrow(lambda b: walk_groups(b, per_groups, with_keys=True), BAND_MEMBER_SCHEMA)


def band_edges(members: DataFrame, fp_signatures: DataFrame, bands: SignatureBands, k: int,
               spec: VerifySpec) -> DataFrame:
    """Forest edges (src, dst) of the verified band pairs and BANDS statistics rows per call (band, verified,
    rejected), in the verify stage's schema (verified.VERIFIED_SCHEMA)."""
    rows = members.where(F.col("fingerprint").isNotNull()).select("key", "fingerprint").join(
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

    return _runs(rows, bands, "signature").mapInArrow(lambda b: walk_groups(b, per_groups, extra=extra),
                                                     VERIFIED_SCHEMA)
