"""Spark glue of verified clusters (verified.py is the pure part).

Candidates in two passes, so that signatures never ride along with the exploded block rows (one row per
fingerprint and table, 28 at k = 6): the first walk over the key groups finds which members have an accepted
pair in their group (within k, first shared table) and sends on only those, with their group; they get their
fingerprint's signature by a join, are grouped again, and the second walk verifies every accepted pair and
emits a spanning forest of the verified ones. Resolve: per component, units in keep order, greedy centres
(verified.verified_centres), one Python call per component of two or more units."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from .blocks import TablePlan
from .candidates import accepted_members
from .pairs import key_runs, walk_groups
from .signature import from_arrow
from .verified import BANDS, VerifySpec, verified_centres, verify_groups

MEMBER_SCHEMA = StructType([
    StructField("table", IntegerType(), True), StructField("key", LongType(), True),
    StructField("fingerprint", LongType(), True), StructField("compared", LongType(), True),
    StructField("accepted", LongType(), True), StructField("distance", IntegerType(), True),
    StructField("groups", LongType(), True),
])
_MEMBER_ARROW = pa.schema([pa.field(f.name, pa.int32() if f.dataType == IntegerType() else pa.int64()) for f in MEMBER_SCHEMA])
VERIFIED_SCHEMA = StructType([
    StructField("src", LongType(), True), StructField("dst", LongType(), True),
    StructField("band", IntegerType(), True), StructField("verified", LongType(), True),
    StructField("rejected", LongType(), True),
])
_VERIFIED_ARROW = pa.schema([pa.field(f.name, pa.int32() if f.dataType == IntegerType() else pa.int64()) for f in VERIFIED_SCHEMA])


def group_members(rows: DataFrame, plan: TablePlan) -> DataFrame:
    """(table, key, fingerprint) of every member with an accepted pair in its key group, plus k + 1 statistics
    rows per call (member columns null): pairs compared, accepted pairs at each distance, groups of 2+."""

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

    return key_runs(rows, plan).mapInArrow(lambda b: walk_groups(b, per_groups, with_keys=True), MEMBER_SCHEMA)


def verified_edges(members: DataFrame, fp_signatures: DataFrame | None, plan: TablePlan,
                   spec: VerifySpec | None) -> DataFrame:
    """members: (table, key, fingerprint) from group_members; fp_signatures: (fingerprint, signature), one
    per fingerprint, or None (no verification). Returns forest edges (src, dst) of the verified pairs and
    BANDS statistics rows per call (band, verified, rejected; src and dst null)."""
    rows = members.select("table", "key", "fingerprint")
    use_sigs = spec is not None and fp_signatures is not None
    if use_sigs:
        rows = rows.join(fp_signatures, "fingerprint")
    runs = rows.repartition("table", "key").sortWithinPartitions("table", "key", "fingerprint")
    sig_spec = spec.signature if spec is not None else None

    def extra(batch: pa.RecordBatch) -> np.ndarray:
        if not use_sigs:
            return np.zeros((batch.num_rows, 0), dtype=np.uint8)
        return from_arrow(batch.column("signature"), sig_spec)

    def per_groups(fps, offsets, tables, keys, sigs):
        out = verify_groups(fps, sigs if use_sigs else None, offsets, tables, plan, spec if use_sigs else None)
        n = len(out.src)
        yield pa.RecordBatch.from_arrays(
            [pa.array(out.src, pa.int64()), pa.array(out.dst, pa.int64()), pa.nulls(n, pa.int32()),
             pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64())], schema=_VERIFIED_ARROW)
        yield pa.RecordBatch.from_arrays(
            [pa.nulls(BANDS, pa.int64()), pa.nulls(BANDS, pa.int64()), pa.array(np.arange(BANDS, dtype=np.int32)),
             pa.array(out.verified_by_band, pa.int64()), pa.array(out.rejected_by_band, pa.int64())],
            schema=_VERIFIED_ARROW)

    return runs.mapInArrow(lambda b: walk_groups(b, per_groups, extra=extra), VERIFIED_SCHEMA)


def with_units(docs: DataFrame) -> DataFrame:
    """docs plus `unit`: the best (rank, id) of the pages with the same fingerprint, signature and short text,
    which verify alike; its id names the unit. One shuffle by fingerprint serves this and fingerprint_signatures."""
    w = Window.partitionBy("fingerprint", "signature", "short_text")
    return docs.repartition("fingerprint").withColumn("unit", F.min(F.struct("rank", "id")).over(w))


def units_of(docs_u: DataFrame) -> DataFrame:
    """(fingerprint, signature, short_text, best): one row per unit (its best page's), fingerprint not null."""
    return docs_u.where(F.col("fingerprint").isNotNull() & (F.col("id") == F.col("unit.id"))).select(
        "fingerprint", "signature", "short_text", F.col("unit").alias("best"))


def fingerprint_signatures(units: DataFrame) -> DataFrame:
    """(fingerprint, signature): one per fingerprint, its best unit's (the one whose best page ranks first)."""
    rep = F.min(F.struct("best", "signature")).over(Window.partitionBy("fingerprint"))
    return units.withColumn("rep", rep).where(F.col("rep.best") == F.col("best")).select("fingerprint", "signature")


def verified_clusters(units: DataFrame, roots: DataFrame, spec: VerifySpec | None,
                      fixed: DataFrame | None = None) -> DataFrame:
    """units: (fingerprint, signature, short_text, best) with best = min (rank, id) of the unit's pages;
    roots: (node, root) of the components; fixed (with --history): (fingerprint, h_cluster, h_kept_date,
    signature) of the history fingerprints in the search, signature = that of their cluster's kept page.
    Returns per unit (unit_id, kept_id, h_cluster, h_kept_date): unit_id = its best page's id, kept_id the
    best page of its centre unit, or h_cluster/h_kept_date when its centre is an earlier run's kept page.

    Most units are alone in their component and need no signature here: only components of two or more
    units (or with earlier clusters) bring their signatures to one Python call."""

    def with_comp(df: DataFrame) -> DataFrame:
        return df.join(roots, df["fingerprint"] == roots["node"], "left").withColumn(
            "comp", F.coalesce("root", "fingerprint")).drop("node", "root")

    light = with_comp(units.select("fingerprint", "best", F.col("best.id").alias("unit_id")))
    sizes = light.groupBy("comp").agg(F.count(F.lit(1)).alias("n"))
    if fixed is not None:
        f = with_comp(fixed).select("comp", "h_cluster", "h_kept_date", "signature").distinct()
        f = f.join(light.select("comp").distinct(), "comp", "left_semi")
        f = f.withColumn("pos", F.row_number().over(Window.partitionBy("comp").orderBy("h_kept_date", "h_cluster")))
        n_fixed = f.groupBy("comp").agg(F.max("pos").alias("n_fixed"))
        sizes = sizes.join(n_fixed, "comp", "left")
    else:
        sizes = sizes.withColumn("n_fixed", F.lit(None).cast("int"))
    sizes = sizes.select("comp", (F.col("n") + F.coalesce("n_fixed", F.lit(0))).alias("n"),
                         F.coalesce("n_fixed", F.lit(0)).alias("n_fixed"))
    light = light.join(sizes, "comp")
    single = light.where(F.col("n") == 1).select(
        "unit_id", F.col("unit_id").alias("kept_id"),
        F.lit(None).cast("string").alias("h_kept_date"))
    multi = light.where(F.col("n") > 1).join(
        units.select(F.col("best.id").alias("unit_id"), "signature", "short_text"), "unit_id")
    multi = multi.withColumn("pos", F.col("n_fixed") + F.row_number().over(Window.partitionBy("comp").orderBy("best")))
    rows = multi.select("comp", "pos", "signature", "short_text", F.lit(False).alias("fixed"))
    if fixed is not None:
        rows = rows.unionByName(f.select("comp", "pos", "signature", F.lit(None).cast("string").alias("short_text"),
                                         F.lit(True).alias("fixed")))
    sig_spec = spec.signature if spec is not None else None

    def centres(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values("pos")
        sigs = None
        if spec is not None and pdf["signature"].notna().all():
            sigs = np.frombuffer(b"".join(pdf["signature"].tolist()), dtype=sig_spec.dtype).reshape(len(pdf), sig_spec.bins)
        texts = [t if isinstance(t, str) else None for t in pdf["short_text"].tolist()]
        centre = verified_centres(sigs, texts if any(t is not None for t in texts) else None, spec,
                                  int(pdf["fixed"].sum()), len(pdf))
        pos = pdf["pos"].to_numpy()
        return pd.DataFrame({"comp": pdf["comp"].to_numpy(), "pos": pos, "centre_pos": pos[centre]})

    assigned = rows.groupBy("comp").applyInPandas(centres, "comp long, pos int, centre_pos int")
    placed = multi.select("comp", "pos", "unit_id")
    out = placed.join(assigned, ["comp", "pos"])
    out = out.join(placed.select("comp", F.col("pos").alias("centre_pos"), F.col("unit_id").alias("kept_id")),
                   ["comp", "centre_pos"], "left")
    if fixed is not None:
        out = out.join(f.select("comp", F.col("pos").alias("centre_pos"), "h_cluster", "h_kept_date"),
                       ["comp", "centre_pos"], "left")
        single = single.withColumn("h_cluster", F.lit(None).cast(dict(f.dtypes)["h_cluster"]))
    else:
        out = out.withColumn("h_cluster", F.lit(None)).withColumn("h_kept_date", F.lit(None).cast("string"))
        single = single.withColumn("h_cluster", F.lit(None))
    cols = ["unit_id", "kept_id", "h_cluster", "h_kept_date"]
    return out.select(*cols).unionByName(single.select(*cols))
