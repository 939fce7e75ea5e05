"""Stage 4, blocks: the table plan (which blocks of the fingerprint make the keys) and, with a history, the
earlier runs' rows that share a key with this run's and so join the pair search."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from ...core.blocks import TablePlan, choose_plan, plan_tables
from ...spark.bands import band_rows
from ...spark.blocks import block_rows, group_batches
from ...spark.history_search import per_fingerprint, related_band_rows, related_block_rows
from .context import StageContext
from .exact_collapse import Collapsed


@dataclass
class HistoryMatch:
    """The history's part of the pair search: its fingerprints that share a table key (or a band key) with
    this run's, and of these alone the clusters and signatures."""

    block_rows: DataFrame  # the history's block rows with a key of this run's
    band_rows: DataFrame | None  # the same for band keys (None: bands off)
    related: DataFrame  # per fingerprint: fingerprint, h_cluster, h_kept_date, signature, kept_signature
    n_related: int  # the history's fingerprints in the search


@dataclass
class Blocks:
    plan: TablePlan
    search_signatures: DataFrame  # (fingerprint, signature) of every fingerprint in the search, history's too
    history: HistoryMatch | None  # None without a history


def blocks_stage(collapsed: Collapsed, ctx: StageContext) -> Blocks:
    """Stage 4: the table plan (--blocks, or chosen by the planner from the number of fingerprints, the
    history's with this run's: blocks.choose_plan makes keys wide enough that few of the history's meet
    this run's) and the history's fingerprints that join the search."""
    specs = ctx.specs
    plan = (plan_tables(specs.k, specs.blocks) if specs.blocks
            else choose_plan(collapsed.n_distinct, specs.k, collapsed.n_history))
    with ctx.timer("blocks") as counts:
        search_signatures = collapsed.fingerprints.select("fingerprint", "signature")
        match = None
        if ctx.history is not None:
            match = history_match(collapsed, plan, ctx)
            search_signatures = search_signatures.unionByName(match.related.select("fingerprint", "signature").join(
                collapsed.fingerprints, "fingerprint", "left_anti"))
        counts["tables"] = len(plan.tables)
        if specs.use_bands:
            counts["bands"] = specs.bands.bands
    return Blocks(plan, search_signatures, match)


def history_match(collapsed: Collapsed, plan: TablePlan, ctx: StageContext) -> HistoryMatch:
    """The history's rows that share a table or band key with this run's fingerprints (matched by Bloom
    filters of this run's keys, spark.history_search), and the clusters and signatures of their fingerprints."""
    history, bands, persist = ctx.history, ctx.specs.bands, ctx.persist
    fps, n_distinct = collapsed.fingerprints, collapsed.n_distinct
    # this run's block and band rows as SQL rows, to match the history's to their keys
    rows = block_rows(fps, plan)
    brows = band_rows(fps, bands) if ctx.specs.use_bands else None
    related_rows = persist(related_block_rows(history.rows, rows, fps.select("fingerprint"), plan, n_distinct))
    related_fps = related_rows.select("fingerprint")
    related_brows = None
    if ctx.specs.use_bands:  # history fingerprints that share a band key with this run's
        related_brows = persist(related_band_rows(history.rows, brows, fps.select("fingerprint"), bands, n_distinct,
                                                  history.band_rows))
        related_fps = related_fps.union(related_brows.select("fingerprint"))
    related_fps = persist(related_fps.distinct())
    with group_batches(fps.sparkSession):  # the Bloom filters' batches of history rows: two longs a row
        n_related = related_fps.count()
    # the clusters and signatures of these alone are read from the history
    related = persist(per_fingerprint(history.rows, related_fps, n_related))
    return HistoryMatch(related_rows, related_brows, related, n_related)
