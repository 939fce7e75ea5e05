"""The history's search: which rows of the earlier runs (io/history.py stores and reads them) take part in this
run. A history fingerprint takes part when it shares a block key (related_block_rows) or a band key
(related_band_rows) with one of this run's; Bloom filters of this run's keys (key_filter.py) drop the others
before anything is exploded or shuffled. Those fingerprints' clusters and signatures (per_fingerprint) then
join the run's components, and the run's clusters are re-pointed at the earlier clusters they meet
(attach_history)."""
from __future__ import annotations

import numpy as np
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..core.blocks import packed_key_shift
from ..core.key_filter import band_filter_keys, table_filter_keys
from .bands import band_key_arrays, exploded_band_keys
from .blocks import block_rows
from .key_filter import build_key_bloom

# A run's distinct search keys are broadcast to the history's rows (no shuffle of the history) when at most
# this many can exist: 4 tables of 16-bit keys hold at most 262,144 whatever the day's size.
BROADCAST_KEYS = 2_000_000


def small(df: DataFrame, most: int) -> DataFrame:
    """df marked for broadcast when `most` (a bound on its rows known before it is computed) is at most
    BROADCAST_KEYS."""
    return F.broadcast(df) if most <= BROADCAST_KEYS else df


def day_keys(rows: DataFrame, key_col: str | None, most: int) -> DataFrame:
    """The distinct (key_col, key) of this run's search rows (key alone if key_col is None), broadcast when at
    most `most` <= BROADCAST_KEYS."""
    return small(rows.select(*([key_col] if key_col else []), "key").distinct(), most)


def with_day_keys(rows: DataFrame, today_rows: DataFrame, key_col: str, most: int, key_is_unique: bool) -> DataFrame:
    """rows (key_col, key, ...) whose (key_col, key) is one of today_rows'. A semi-join on one long key probes
    Spark's hash table for longs (measured on 6.2M history fingerprints: 62M table rows 21.6 -> 8.7 s, 59M band
    rows 64.3 -> 17.0 s), so the key alone is matched first; when it does not identify key_col too (band keys
    are hashes, which may collide across bands) the few rows left are matched on both."""
    matching = rows.join(day_keys(today_rows, None, most), "key", "left_semi")
    if key_is_unique:
        return matching
    return matching.join(day_keys(today_rows, key_col, most), [key_col, "key"], "left_semi")


def per_fingerprint(history: DataFrame, fps: DataFrame, n_fps: int) -> DataFrame:
    """(fingerprint, h_cluster, h_kept_date, signature, kept_signature) per distinct history fingerprint in
    fps (n_fps of them, broadcast when few): the best cluster holding it (earliest kept page, then smallest
    cluster id), the signature of its best row and the signature of that cluster's kept page (null if the kept
    page has none). Only the rows of these fingerprints and of their clusters' kept pages are grouped, not the
    whole history.

    history: the rows of earlier runs (History.earlier), or rows already by cluster and fingerprint (h_cluster
    column: the Python API and the tests give them so), of which the best per fingerprint is taken: a fingerprint
    held by two earlier clusters would otherwise meet each of today's pages of it twice in the joins on the
    fingerprint (resolve's exact-copy count, history_search.with_history_copies)."""
    fps = small(fps.select("fingerprint"), n_fps)
    rows = history.join(fps, "fingerprint", "left_semi")
    if "h_cluster" in history.columns:
        return best_per_fingerprint(rows, {c: c for c in ("h_kept_date", "h_cluster", "signature", "kept_signature")})
    per_fp = best_per_fingerprint(rows, {"kept_run_date": "h_kept_date", "cluster_id": "h_cluster", "signature": "signature"})
    # the kept pages of these clusters only (at most one cluster per fingerprint)
    clusters = small(per_fp.select(F.col("h_cluster").alias("id")).distinct(), n_fps)
    kept = (history.where(~F.col("is_duplicate")).join(clusters, "id", "left_semi")
            .groupBy(F.col("id").alias("h_cluster")).agg(F.min("signature").alias("kept_signature")))
    return per_fp.join(kept, "h_cluster", "left")


def best_per_fingerprint(rows: DataFrame, columns: dict[str, str]) -> DataFrame:
    """One row per fingerprint of rows: the smallest by `columns` (source column -> name), compared in their order,
    renamed."""
    best = F.min(F.struct(*columns)).alias("b")
    return rows.groupBy("fingerprint").agg(best).select(
        "fingerprint", *(F.col(f"b.{source}").alias(name) for source, name in columns.items()))


def history_rows(history: DataFrame) -> DataFrame:
    """The fingerprint column of the history's rows (one row per page of an earlier run with a fingerprint, or
    per fingerprint when the history is given per fingerprint)."""
    return history.select("fingerprint")


def related_block_rows(history: DataFrame, today_rows: DataFrame, today_fps: DataFrame, plan, n_today: int) -> DataFrame:
    """Block rows (table, key, fingerprint) of the history fingerprints whose key is also a key of this run.

    A history fingerprint within k of one of this run's shares a key with it in every table where the two
    agree (pigeonhole), so its rows for all those tables are here and the pair is found and counted in its
    first shared table as usual. Keys held by history fingerprints alone are left out: pairs among earlier
    pages were settled by earlier runs. Only the fingerprint column of the history is read; a Bloom filter of
    this run's keys (key_filter.py) drops the history fingerprints without a shared key before anything is
    exploded or shuffled, then the few left are matched to the run's keys exactly and made distinct (a
    fingerprint may be on several rows of the history).
    today_fps: this run's distinct fingerprints, n_today of them (bounds its keys)."""
    def keys_of(batch):
        return table_filter_keys(batch.column("fingerprint").to_numpy(zero_copy_only=False), plan)

    most = sum(min(n_today, 1 << bits) for bits in plan.key_bits())
    bloom = build_key_bloom(today_fps.select("fingerprint"), keys_of, most)
    passed = bloom.rows_that_may_match(history.select("fingerprint"), keys_of)
    rows = block_rows(passed, plan)
    packed = packed_key_shift(plan) is not None  # the key holds the table index
    return with_day_keys(rows, today_rows, "table", most, packed).distinct()


def related_band_rows(history: DataFrame, today_band_rows: DataFrame, today_fps: DataFrame, bands,
                      n_today: int, history_band_rows: DataFrame | None = None) -> DataFrame:
    """Band rows (band, key, fingerprint) of the history fingerprints that share a band key with this run's
    and are not this run's own (their band rows are in the run's already). A Bloom filter of this run's band
    keys drops the other history rows before anything is exploded or shuffled (key_filter.py), the exact key
    match comes next, so only the few matching rows meet the anti-join with this run's fingerprints and are
    made distinct (the rows of a fingerprint on several rows of the history; the signature of each is
    searched, and verification uses the fingerprint's best one, per_fingerprint). Columns in band_rows' order
    (the anti-join would put its `fingerprint` first), so that a union with the run's own rows is safe.
    history_band_rows: the history's (fingerprint, keys) rows when known (History.band_rows: read from the
    runs' band indexes); otherwise computed from the history's signatures."""
    arrays = history_band_rows if history_band_rows is not None else band_key_arrays(history, bands)
    most = n_today * bands.bands
    bloom = build_key_bloom(today_band_rows.select("band", "key"), row_filter_keys, most)
    passed = exploded_band_keys(bloom.rows_that_may_match(arrays.select("fingerprint", "keys"), array_filter_keys))
    matching = with_day_keys(passed, today_band_rows, "band", most, False)
    return matching.join(today_fps, "fingerprint", "left_anti").select("band", "key", "fingerprint").distinct()


def attach_history(clusters: DataFrame, roots: DataFrame, history: DataFrame, run_date: str) -> DataFrame:
    """Re-point this run's clusters at history clusters.

    clusters: (id, fingerprint, cluster_id, is_duplicate, kept_fp) as resolved among this run's pages; roots:
    (node, root) of the components over this run's and the related history fingerprints; history:
    (fingerprint, h_cluster, h_kept_date) of the related history fingerprints. A page whose component holds history
    fingerprints becomes a duplicate of the best history cluster there (earliest kept page, then smallest
    cluster id); the others keep their own resolution. Adds kept_run_date; kept_fp (the kept page's
    fingerprint, clusters.cluster_shape) becomes null where the kept page is an earlier run's."""

    def with_comp(df: DataFrame) -> DataFrame:
        return df.join(roots, df["fingerprint"] == roots["node"], "left").withColumn(
            "comp", F.coalesce("root", "fingerprint")
        ).drop("node", "root")

    best = (
        with_comp(history)
        .groupBy("comp")
        .agg(F.min(F.struct("h_kept_date", "h_cluster")).alias("b"))
        .select("comp", F.col("b.h_cluster").alias("h_cluster"), F.col("b.h_kept_date").alias("h_kept_date"))
    )
    id_type = dict(clusters.dtypes)["id"]
    matched = F.col("h_cluster").isNotNull()
    return with_comp(clusters).join(best, "comp", "left").select(
        "id",
        "fingerprint",
        F.when(matched, F.col("h_cluster").cast(id_type)).otherwise(F.col("cluster_id")).alias("cluster_id"),
        (matched | F.col("is_duplicate")).alias("is_duplicate"),
        F.when(matched, F.col("h_kept_date")).otherwise(F.lit(run_date)).alias("kept_run_date"),
        F.when(~matched, F.col("kept_fp")).alias("kept_fp"),
    )


def with_history_copies(clusters: DataFrame, related: DataFrame, n_related: int) -> DataFrame:
    """clusters with exact_ref, the fingerprint a duplicate is an exact copy of (clusters.cluster_shape): kept_fp,
    or, for a duplicate in an earlier run's cluster that already holds a page of its fingerprint (related: the
    history's best cluster per fingerprint, per_fingerprint), its own fingerprint. A byte copy of an earlier
    day's page is then an exact duplicate, as it is within one run (same fingerprint as a fellow member, here an
    earlier one), where kept_fp alone, null for an earlier run's kept page, counted it as near. For the report's
    counts only: clusters/ is written from `clusters` as it was.
    clusters: (id, fingerprint, cluster_id, is_duplicate, kept_fp, kept_run_date, ...); n_related: related's rows."""
    id_type = dict(clusters.dtypes)["cluster_id"]
    held = small(related.select("fingerprint", F.col("h_cluster").cast(id_type).alias("h_cluster"),
                                "h_kept_date"), n_related)
    same_cluster = (F.col("is_duplicate") & (F.col("h_cluster") == F.col("cluster_id"))
                    & (F.col("h_kept_date") == F.col("kept_run_date")))
    return clusters.join(held, "fingerprint", "left").withColumn(
        "exact_ref", F.coalesce("kept_fp", F.when(same_cluster, F.col("fingerprint")))).drop("h_cluster", "h_kept_date")


def row_filter_keys(batch):
    """Filter keys of a batch of (band, key) rows, one a row (the day's side of the band filter)."""
    return band_filter_keys(batch.column("band").to_numpy(zero_copy_only=False),
                            batch.column("key").to_numpy(zero_copy_only=False))


def array_filter_keys(batch) -> tuple:
    """Filter keys (n, bands) of a batch of (fingerprint, keys) rows and which of them are not null."""
    lists = batch.column("keys")
    n = len(lists)
    if n == 0:
        return np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1), dtype=bool)
    values = lists.flatten()
    width = len(values) // n  # every array has one element per band
    keys = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).reshape(n, width)
    valid = values.is_valid().to_numpy(zero_copy_only=False).reshape(n, width)
    band = np.broadcast_to(np.arange(width, dtype=np.int32), (n, width))
    return band_filter_keys(band, keys), valid
