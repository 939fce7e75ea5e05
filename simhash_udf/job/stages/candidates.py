"""Stage 5, candidates: the key groups of the tables (and of the signature bands), and in each group the
members with a pair within k; counted by distance."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...core.blocks import chance_pairs
from ...spark.bands import band_group_members
from ...spark.blocks import group_batches
from ...spark.candidates import group_members
from .blocks import Blocks
from .context import StageContext
from .exact_collapse import Collapsed

log = logging.getLogger("simhash_dedup")
# Warn when chance pairs of random fingerprints are more than this share of the accepted pairs.
CHANCE_WARN_SHARE = 0.01


@dataclass
class Candidates:
    members: DataFrame  # the tables' group members with an accepted pair (spark.candidates.group_members)
    band_members: DataFrame | None  # the band groups' (spark.bands.band_group_members); None: bands off
    key_groups: int  # the tables' key groups of two or more fingerprints
    compared: int  # pairs compared in the tables' groups
    accepted: int  # of them within k (each pair once: in the first table it shares a key)
    accepted_by_distance: dict[int, int]  # accepted pairs by Hamming distance
    band_key_groups: int  # the band groups (0: bands off)
    band_compared: int  # pairs compared in them
    chance: float  # pairs within k expected among as many uniformly random fingerprints


def chance_warning(chance: float, accepted: int, k: int, n: int) -> str | None:
    """The warning to log when at least one accepted pair, and more than CHANCE_WARN_SHARE of them, is
    expected by chance alone among n random fingerprints (`blocks.chance_pairs`); None otherwise."""
    if chance < 1 or chance <= CHANCE_WARN_SHARE * accepted:
        return None
    return (f"{chance:,.0f} of the {accepted:,} pairs within k = {k} are expected between unrelated pages by "
            f"chance alone ({n:,} fingerprints, even if they were uniformly random); transitive clusters can "
            f"chain through them: verify pairs (--min-similarity 0.8, the default) or use a smaller --k")


def candidates_stage(collapsed: Collapsed, blocks: Blocks, ctx: StageContext) -> Candidates:
    """Stage 5: the shuffles that form the key groups, and the pairs within k found in them."""
    specs, match = ctx.specs, blocks.history
    with ctx.timer("candidates") as counts:
        history_rows = match.block_rows if match is not None else None  # the history's rows that join the groups
        members = ctx.persist(group_members(collapsed.fingerprints, blocks.plan, history_rows, collapsed.n_distinct))
        band_members = None
        if specs.use_bands:
            history_band_rows = match.band_rows if match is not None else None
            band_members = ctx.persist(band_group_members(collapsed.fingerprints, specs.bands, specs.k,
                                                          history_band_rows, collapsed.n_distinct))
        table, by_distance, band = pair_counts(members, band_members)
        counts.update(key_groups=table["groups"], compared=table["compared"], accepted=table["accepted"])
        if band_members is not None:
            counts.update(band_compared=band["compared"])
        chance = float(f"{chance_pairs(collapsed.n_search, specs.k):.4g}")
        warning = chance_warning(chance, table["accepted"], specs.k, collapsed.n_search) if specs.verify is None else None
        if warning:
            log.warning(warning)
    return Candidates(members, band_members, table["groups"], table["compared"], table["accepted"], by_distance,
                      band["groups"], band["compared"], chance)


def pair_counts(members: DataFrame, band_members: DataFrame | None) -> tuple[dict, dict[int, int], dict]:
    """In one Spark action for both searches: the tables' totals (compared, accepted, groups) and their
    accepted pairs by distance, and the band search's totals (compared, groups; zero when off)."""
    # the table search's statistics by distance (its totals are the sums over the distances; source 0) and
    # the band search's totals (source 1)
    per_distance = members.groupBy("distance").agg(
        F.sum("compared").alias("compared"), F.sum("accepted").alias("accepted"),
        F.sum("groups").alias("groups")).withColumn("source", F.lit(0))
    if band_members is not None:
        per_distance = per_distance.unionByName(band_members.agg(
            F.lit(None).cast(dict(members.dtypes)["distance"]).alias("distance"),
            F.sum("compared").alias("compared"), F.lit(None).cast("long").alias("accepted"),
            F.sum("groups").alias("groups"), F.lit(1).alias("source")))
    with group_batches(members.sparkSession):
        stat_rows = per_distance.collect()
    table_rows = [r for r in stat_rows if r["source"] == 0]
    table = {name: sum(int(r[name] or 0) for r in table_rows) for name in ("compared", "accepted", "groups")}
    by_distance = {int(r["distance"]): int(r["accepted"] or 0) for r in table_rows if r["distance"] is not None}
    band = {"compared": 0, "groups": 0}
    if band_members is not None:
        b = next(r for r in stat_rows if r["source"] == 1)
        band = {"compared": int(b["compared"] or 0), "groups": int(b["groups"] or 0)}
    return table, by_distance, band
