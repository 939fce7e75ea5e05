"""Stage 7, resolve: one kept page per cluster, chosen in keep order; every other page a duplicate of it
(verified-similar to it in the default mode), or of an earlier run's cluster with a history."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...core.signature import SignatureSpec
from ...spark.clusters import cluster_shape, resolve_clusters, with_similarity_to_kept
from ...spark.containment_check import (
    DRIVER_TEXT_FINGERPRINTS,
    ContainmentCheck,
    JoinedOnTexts,
    checked_containment,
    joined_on_texts,
    lone_proposals,
    pages_to_check,
    rows_to_compare,
    text_steps_on_driver,
    texts_of,
)
from ...spark.history_search import attach_history, with_history_copies
from ...spark.joins import broadcast_if_small
from ...spark.star import star_clusters
from ...spark.verified import verified_clusters
from .blocks import Blocks
from .components import Components
from .context import StageContext
from .exact_collapse import Collapsed


@dataclass
class Resolved:
    clusters: DataFrame  # id, fingerprint, cluster_id, is_duplicate, signature, kept_fp, similarity[, kept_run_date]
    histogram: dict[int, int]  # cluster size -> clusters
    max_distance_to_kept: dict[int, int]  # clusters by their members' largest distance to the kept page
    exact_duplicates: int  # duplicates with their kept page's (or a fellow duplicate's) fingerprint
    containment_check: ContainmentCheck | None = None  # with containment: the pages checked on their texts
    joined_on_texts: JoinedOnTexts | None = None  # with containment and sentence keys: lone pages joined on texts


def resolve_stage(collapsed: Collapsed, blocks: Blocks, comps: Components, ctx: StageContext,
                  sentence_pairs: DataFrame | None = None, n_sentence_pairs: int = -1) -> Resolved:
    """Stage 7: each page's cluster by the cluster mode (ctx.specs.cluster_mode), cached, and the clusters'
    shape (clusters.cluster_shape)."""
    mode, history, match = ctx.specs.cluster_mode, ctx.history, blocks.history
    with ctx.timer("resolve") as counts:
        pages = collapsed.pages.select("id", "fingerprint", "rank", "signature", "short_text", "unit")
        if mode == "verified":
            clusters = verified_mode_clusters(pages, collapsed, blocks, comps, ctx)
        elif mode == "star":
            clusters = star_clusters(pages.select("id", "fingerprint", "rank"), comps.roots, ctx.specs.k)
        else:
            clusters = resolve_clusters(pages.select("id", "fingerprint", "rank"), comps.roots)
        if history is not None and mode != "verified":
            clusters = attach_history(clusters, comps.roots, match.related, history.run_date)
        if mode != "verified":  # the signature goes into clusters/ with its page, and the similarity to the kept one
            clusters = with_similarity_to_kept(clusters.join(pages.select("id", "signature"), "id"),
                                               ctx.specs.verify.signature if ctx.specs.verify else SignatureSpec())
        clusters = ctx.persist(clusters)
        check = lone = None
        if mode == "verified" and ctx.specs.verify is not None and ctx.specs.verify.containment:
            clusters, check, lone = checked_on_texts(clusters, sentence_pairs, n_sentence_pairs, ctx,
                                                     collapsed.n_distinct)
            counts.update(dataclasses.asdict(check), **dataclasses.asdict(lone))
        # with a history, a copy of an earlier day's page is an exact duplicate too (the shape's input only)
        shaped = clusters if history is None else with_history_copies(clusters, match.related, match.n_related)
        histogram, chaining, exact = cluster_shape(shaped)
        counts.update(clusters=sum(histogram.values()), with_duplicates=sum(c for s, c in histogram.items() if s > 1))
    return Resolved(clusters, histogram, chaining, exact, check, lone)


def checked_on_texts(clusters: DataFrame, sentence_pairs: DataFrame | None, n_sentence_pairs: int,
                     ctx: StageContext, n_fingerprints: int = -1) -> tuple[DataFrame, ContainmentCheck, JoinedOnTexts]:
    """With containment: the pages joined only by containment checked on the texts (containment_check.
    checked_containment), then the pages alone joined to a cluster whose kept page holds them on the texts
    (joined_on_texts); the texts of both read in one pass over the input. A run of at most
    DRIVER_TEXT_FINGERPRINTS fingerprints does both on the driver (text_steps_on_driver: the same clusters).
    Without texts (stored fingerprints) nothing is compared, and only the columns of the check go."""
    spec, texts = ctx.specs.verify, ctx.texts
    flagged, n_flagged, proposals, n_proposals, n_lone, text_bytes = None, 0, None, 0, 0, 0
    if texts is not None and 0 <= n_fingerprints <= DRIVER_TEXT_FINGERPRINTS:
        rows = rows_to_compare(clusters, sentence_pairs, n_sentence_pairs, lambda df: df).toArrow()
        pairs = sentence_pairs.select("src", "dst").toArrow() if sentence_pairs is not None else None
        return text_steps_on_driver(clusters, rows, pairs, texts, spec)
    if texts is not None:
        rows = rows_to_compare(clusters, sentence_pairs, n_sentence_pairs, ctx.checkpoint)
        flagged, n_flagged = pages_to_check(rows)
        if sentence_pairs is not None:
            proposals, n_proposals, n_lone = lone_proposals(rows, sentence_pairs, ctx.checkpoint)
        ids = [flagged.select("id"), flagged.select("cluster_id")] if n_flagged else []
        ids += [proposals.select("id"), proposals.select("kept")] if n_proposals else []
        texts, text_bytes = texts_of(texts, ids, 2 * (n_flagged + n_proposals), ctx.persist) if ids else (None, 0)
    clusters, check = checked_containment(clusters, flagged, n_flagged, texts, spec, ctx.persist)
    lone = JoinedOnTexts(0, 0)
    if n_proposals:
        clusters, lone = joined_on_texts(clusters, proposals, n_proposals, n_lone, texts, spec, ctx.persist, text_bytes)
    return clusters, check, lone


def verified_mode_clusters(pages: DataFrame, collapsed: Collapsed, blocks: Blocks, comps: Components,
                           ctx: StageContext) -> DataFrame:
    """The default mode: per component, greedy centres of verified-similar units (spark.verified.
    verified_clusters); an earlier run's cluster (with a history) takes part through its kept page's
    signature, or, unverified, as itself."""
    verify, match = ctx.specs.verify, blocks.history
    fixed, n_fixed = None, -1
    if match is not None:
        fixed = match.related.where(F.col("kept_signature").isNotNull() | F.lit(verify is None)).select(
            "fingerprint", "h_cluster", "h_kept_date", F.col("kept_signature").alias("signature"))
        n_fixed = match.n_related
    assigned = verified_clusters(collapsed.units, comps.roots, verify, fixed, n_fixed, comps.n_roots)
    n_assigned = -1
    if ctx.large:  # cached and counted: the split pages are not partitioned by fingerprint, and a broadcast of
        # the assignments, when few, spares them a shuffle
        assigned = ctx.persist(assigned)
        n_assigned = assigned.count()
    return resolve_verified(pages, assigned, n_assigned, ctx.history.run_date if ctx.history is not None else None,
                            with_containment=verify is not None and verify.containment)


def resolve_verified(pages: DataFrame, assigned: DataFrame, n_assigned: int, run_date: str | None,
                     with_containment: bool = False) -> DataFrame:
    """Each page's cluster from its unit's centre (verified_pairs.verified_clusters; n_assigned rows, -1: not
    known): the best page of the centre unit, or an earlier run's cluster; pages without a fingerprint are
    clusters of their own. With a run date (--history) also kept_run_date. Keeps the page's signature (for
    clusters/ and the history), and adds kept_fp: the kept page's fingerprint, null when it is an earlier run's
    (clusters.cluster_shape), and similarity: a duplicate's estimated Jaccard index to its kept page (its unit's
    to the centre, verified_clusters; a page of its kept page's unit, or of its fingerprint without signatures:
    1.0), null for a kept page. with_containment: also by_containment, whether a duplicate joined its kept page
    only by containment (verified_clusters), and the page's rank and short text, for the text check
    (containment_check)."""
    # joined on the fingerprint alone, then the unit, so that only the per-unit assignments move: broadcast
    # when known to be few (joins.is_small), or by a sort-merge join, which moves the assignments alone when the
    # pages are partitioned by fingerprint (with_units, unless split). A unit without an
    # assignment is alone in its component and kept by its best page; all units of a fingerprint have one or
    # none.
    with_fp = pages.where(F.col("fingerprint").isNotNull()).join(
        broadcast_if_small(assigned, n_assigned), "fingerprint", "left").where(
        F.col("unit_id").isNull() | (F.col("unit.id") == F.col("unit_id")))
    without = pages.where(F.col("fingerprint").isNull()).select(
        *pages.columns, *[F.lit(None).cast(t).alias(c) for c, t in assigned.dtypes if c != "fingerprint"])
    joined = with_fp.unionByName(without)
    id_type = dict(pages.dtypes)["id"]
    earlier = F.col("h_cluster").isNotNull()
    kept = F.coalesce("kept_id", F.when(F.col("fingerprint").isNotNull(), F.col("unit.id")), "id")
    cluster_id = F.when(earlier, F.col("h_cluster").cast(id_type)).otherwise(kept)
    # kept_fp: the kept page's fingerprint when it is among this run's pages (cluster_shape groups the duplicates
    # alone with it, instead of every page by cluster)
    kept_fp = F.when(~earlier, F.coalesce("kept_fingerprint", "fingerprint"))
    duplicate = earlier | (F.col("id") != kept)
    to_kept = F.when(duplicate, F.coalesce(F.col("similarity"), F.when(F.col("fingerprint") == kept_fp, F.lit(1.0))))
    cols = [F.col("id"), F.col("fingerprint"), cluster_id.alias("cluster_id"), duplicate.alias("is_duplicate"),
            F.col("signature"), kept_fp.alias("kept_fp"), to_kept.alias("similarity")]
    if run_date is not None:
        cols.append(F.when(earlier, F.col("h_kept_date")).otherwise(F.lit(run_date)).alias("kept_run_date"))
    if with_containment:
        cols += [F.coalesce("by_containment", F.lit(False)).alias("by_containment"), F.col("rank"), F.col("short_text")]
    return joined.select(*cols)
