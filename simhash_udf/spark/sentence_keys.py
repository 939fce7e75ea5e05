"""Spark glue of the longest-sentence key search (core/sentence_keys.py is the pure part): the fingerprint pass
gives every page its keys (spark/fingerprint.py); here the fingerprints that share a key of at most max_group
fingerprints are paired, and each distinct pair is verified once on the two fingerprints' signatures and
feature counts (core/verified.pairs_verify: similar, or contained within the size bound).

A key of more fingerprints than max_group (a licence sentence, a slogan, a footer line of a whole site) makes
no pairs: its group would cost the square of its size, and such a line says nothing about the pages around it.
The keys are grouped by Spark rows, not packed (spark/packed_groups.py): a page has at most n keys (3), not a
row per table and band, and nearly every key is met once."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from ..core.sentence_keys import KeyGroupCounts, key_groups
from ..core.signature import from_arrow, similarity
from ..core.verified import VerifySpec, containment_estimate, pairs_verify
from .driver_tables import driver_frame

# how: 0 rejected, 1 verified by similarity, 2 verified by containment alone
PAIR_SCHEMA = StructType([
    StructField("src", LongType(), False), StructField("dst", LongType(), False), StructField("how", IntegerType(), False),
    StructField("similarity", IntegerType(), False), StructField("containment", IntegerType(), False),
])
_PAIR_ARROW = pa.schema([pa.field(f.name, pa.int64() if f.dataType == LongType() else pa.int32(), False)
                         for f in PAIR_SCHEMA])
REJECTED, BY_SIMILARITY, BY_CONTAINMENT = 0, 1, 2


def fingerprint_keys(pages: DataFrame) -> DataFrame:
    """(fingerprint, key): the distinct keys of each fingerprint (of all its pages)."""
    return (pages.where(F.col("fingerprint").isNotNull() & F.col("sentence_keys").isNotNull())
            .select("fingerprint", F.explode("sentence_keys").alias("key")).distinct())


def key_sizes(rows: DataFrame) -> DataFrame:
    """(key, n): how many fingerprints hold each key."""
    return rows.groupBy("key").agg(F.count(F.lit(1)).alias("n"))


def group_counts(sizes: DataFrame, max_group: int) -> KeyGroupCounts:
    """The key groups' counts in one Spark job."""
    n = F.col("n")
    r = sizes.agg(F.count(F.lit(1)).alias("keys"), F.count(F.when((n >= 2) & (n <= max_group), 1)).alias("groups"),
                  F.count(F.when(n > max_group, 1)).alias("skipped"),
                  F.sum(F.when(n > max_group, n).otherwise(0)).alias("skipped_rows")).first()
    return KeyGroupCounts(int(r["keys"]), int(r["groups"]), int(r["skipped"]), int(r["skipped_rows"] or 0))


def shared_key_pairs(rows: DataFrame, sizes: DataFrame, max_group: int) -> DataFrame:
    """(fingerprint, other): the distinct pairs fingerprint < other that share a key of 2..max_group
    fingerprints (core/sentence_keys.key_group_pairs is its reference)."""
    usable = rows.join(sizes.where((F.col("n") >= 2) & (F.col("n") <= max_group)).select("key"), "key")
    other = usable.select("key", F.col("fingerprint").alias("other"))
    return usable.join(other, "key").where(F.col("fingerprint") < F.col("other")).select(
        "fingerprint", "other").distinct()


def fingerprint_info(pages: DataFrame) -> DataFrame:
    """(fingerprint, id, signature, n_features, text_chars): each fingerprint's best page's (with_units' fp_best)."""
    return pages.where(F.col("fingerprint").isNotNull() & F.col("signature").isNotNull()
                       & (F.col("id") == F.col("fp_best.id"))).select("fingerprint", "id", "signature", "n_features",
                                                                      "text_chars")


def _verdicts(src, dst, sig_a, sig_b, n_a, n_b, size_a, size_b, spec: VerifySpec) -> pa.RecordBatch:
    """PAIR_SCHEMA's rows of pairs (src, dst) from the two sides' signatures (binary), feature counts and
    characters (Arrow arrays, nulls allowed in the counts): pairs_verify's verdict, similarity and containment."""
    sig_a, sig_b = from_arrow(sig_a, spec.signature), from_arrow(sig_b, spec.signature)
    n_a, n_b, size_a, size_b = (pc.fill_null(c, -1).to_numpy(zero_copy_only=False) for c in (n_a, n_b, size_a, size_b))
    ok, by_containment = pairs_verify(sig_a, sig_b, n_a, n_b, spec, size_a, size_b)
    how = np.where(by_containment, BY_CONTAINMENT, np.where(ok, BY_SIMILARITY, REJECTED)).astype(np.int32)
    sim = similarity(sig_a, sig_b, spec.signature.bits)
    cont = containment_estimate(sim, n_a, n_b)
    return pa.RecordBatch.from_arrays(
        [pa.array(np.asarray(src), pa.int64()), pa.array(np.asarray(dst), pa.int64()), pa.array(how),
         pa.array(np.round(sim * 1000).astype(np.int32)), pa.array(np.round(cont * 1000).astype(np.int32))],
        schema=_PAIR_ARROW)


def verified_pairs(pairs: DataFrame, info: DataFrame, spec: VerifySpec) -> DataFrame:
    """Each pair with its verdict (PAIR_SCHEMA): how (REJECTED, BY_SIMILARITY, BY_CONTAINMENT), and its estimated
    similarity and containment in thousandths (for the report's examples)."""
    a = info.select("fingerprint", F.col("signature").alias("sig_a"), F.col("n_features").alias("n_a"),
                    F.col("text_chars").alias("size_a"))
    b = info.select(F.col("fingerprint").alias("other"), F.col("signature").alias("sig_b"), F.col("n_features").alias("n_b"),
                    F.col("text_chars").alias("size_b"))
    rows = pairs.join(a, "fingerprint").join(b, "other").select("fingerprint", "other", "sig_a", "sig_b", "n_a", "n_b",
                                                               "size_a", "size_b")

    def verify(batches):
        for batch in batches:
            yield _verdicts(batch.column("fingerprint"), batch.column("other"), batch.column("sig_a"), batch.column("sig_b"),
                            *(batch.column(c) for c in ("n_a", "n_b", "size_a", "size_b")), spec=spec)

    return rows.mapInArrow(verify, PAIR_SCHEMA)


# Distinct fingerprints up to which the keys are grouped and the pairs verified on the driver: at most 3 keys a
# fingerprint (24 MB of rows), and the signatures of the paired fingerprints alone. The Spark search's shuffles
# cost a Spark job each, a few seconds of a small run; the same pairs and counts (tests/test_sentence_keys.py).
DRIVER_FINGERPRINTS = 500_000
DRIVER_PAIRS = 4_000_000  # pairs (before their repeats are dropped) up to which they are verified on the driver


@dataclass
class DriverSearch:
    """searched_on_driver's answer: the pairs (PAIR_SCHEMA rows) as a DataFrame and as Arrow, the counts."""

    pairs: DataFrame
    table: pa.Table
    groups: KeyGroupCounts
    info: pa.Table | None  # fingerprint_info of the paired fingerprints, by fingerprint (None: no pair)


def searched_on_driver(pages: DataFrame, max_group: int, spec: VerifySpec,
                       checkpoint: Callable[[DataFrame], DataFrame]) -> DriverSearch | None:
    """The search of shared_key_pairs and verified_pairs, on the driver: the pages' (fingerprint, key) rows
    collected, grouped in numpy (core/sentence_keys.key_groups), the paired fingerprints' best pages collected,
    and each pair verified (_verdicts). Two Spark jobs; one when no key is shared. None when the key groups
    hold more than DRIVER_PAIRS pairs (then the Spark search runs). checkpoint: for many pairs
    (driver_tables.driver_frame)."""
    spark = pages.sparkSession
    rows = pages.where(F.col("fingerprint").isNotNull() & F.col("sentence_keys").isNotNull()).select(
        "fingerprint", F.explode("sentence_keys").alias("key")).toArrow()
    found = key_groups(rows.column("fingerprint").to_numpy(), rows.column("key").to_numpy(), max_group, DRIVER_PAIRS)
    if found is None:
        return None
    a, b, info, table = found.a, found.b, None, _PAIR_ARROW.empty_table()
    if len(a):
        both = np.r_[a, b]
        wanted = spark.createDataFrame(pa.table({"fingerprint": np.unique(both)}), "fingerprint long")
        info = fingerprint_info(pages).join(F.broadcast(wanted), "fingerprint", "left_semi").toArrow()
        info = info.take(pc.sort_indices(info, [("fingerprint", "ascending")])).combine_chunks()
        known = info.column("fingerprint").to_numpy()
        at = np.searchsorted(known, both)
        ok = at < len(known)
        ok[ok] = known[at[ok]] == both[ok]
        keep = ok[: len(a)] & ok[len(a):]  # a pair of a fingerprint without a signature is not compared (as joins drop it)
        a, b, at = a[keep], b[keep], np.r_[at[: len(a)][keep], at[len(a):][keep]]
    if len(a):
        sides = [pa.array(at[: len(a)]), pa.array(at[len(a):])]
        columns = [info.column(c).chunk(0).take(side) for c in ("signature", "n_features", "text_chars") for side in sides]
        table = pa.Table.from_batches([_verdicts(a, b, *columns, spec=spec)])
    return DriverSearch(driver_frame(spark, table, PAIR_SCHEMA, 1, checkpoint), table, found.counts,
                        info if len(a) else None)
