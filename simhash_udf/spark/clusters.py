"""What every cluster mode shares (verified, transitive, star): the keep rank that orders a cluster's pages, the
resolve of transitive mode (a component is a cluster), and the clusters' shape for the report."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..core.signature import SignatureSpec
from .pair_similarity import with_pair_similarity


def keep_rank(keep: str, id_col: str, text_col: str) -> Column:
    """A struct whose minimum over a cluster is the document to keep (the id always breaks ties)."""
    ident = F.col(id_col)
    if keep == "id":
        return F.struct(ident.alias("i"))
    if keep == "longest":
        return F.struct((-F.coalesce(F.length(text_col), F.lit(0))).alias("l"), ident.alias("i"))
    column = keep.split(":", 1)[1]
    return F.struct(F.col(column).isNull().alias("n"), F.col(column).alias("c"), ident.alias("i"))


def resolve_clusters(docs: DataFrame, roots: DataFrame) -> DataFrame:
    """Transitive mode: each component's best page in keep order is kept, every other page a duplicate of it.
    docs: (id, fingerprint, rank); roots: (node, root) from the components stage.

    Returns (id, fingerprint, cluster_id, is_duplicate, kept_fp), kept_fp the kept page's fingerprint
    (cluster_shape). A document without a fingerprint (no text, no features) is a cluster of its own."""
    with_comp = docs.join(roots, docs["fingerprint"] == roots["node"], "left").select(
        "id", "fingerprint", "rank", F.coalesce("root", "fingerprint").alias("comp")
    )
    # the id decides the minimum (ids are unique); the fingerprint rides along
    best = F.min(F.struct("rank", "id", "fingerprint"))
    kept = (
        with_comp.where(F.col("comp").isNotNull())
        .groupBy("comp")
        .agg(best.getField("id").alias("kept_id"), best.getField("fingerprint").alias("kept_fp"))
    )
    return (
        with_comp.join(kept, "comp", "left")
        .select("id", "fingerprint", F.coalesce("kept_id", "id").alias("cluster_id"), "kept_fp")
        .withColumn("is_duplicate", F.col("id") != F.col("cluster_id"))
    )


def with_similarity_to_kept(clusters: DataFrame, spec: SignatureSpec) -> DataFrame:
    """clusters (id, fingerprint, cluster_id, is_duplicate, signature, kept_fp, ...) of the transitive and star
    modes plus `similarity` (double): a duplicate's estimated Jaccard index to its kept page from their signatures
    (1.0 for the same fingerprint without signatures), null for a kept page and for a duplicate of an earlier
    run's page (kept_fp null: that page's signature is not among these rows). The verified mode has it from its
    centres (spark.verified.verified_clusters) at no extra cost; here the duplicates meet their kept page's
    signature in a join."""
    dup = F.col("is_duplicate")
    kept = clusters.where(~dup).select(F.col("id").alias("_kept_id"), F.col("signature").alias("_kept_sig"))
    dups = clusters.where(dup)
    joined = dups.join(kept, (dups["cluster_id"] == kept["_kept_id"]) & dups["kept_fp"].isNotNull(), "left").drop(
        "_kept_id")
    same = F.when(F.col("fingerprint") == F.col("kept_fp"), F.lit(1.0))
    with_sim = with_pair_similarity(joined, "signature", "_kept_sig", spec, ["_kept_sig"])
    with_sim = with_sim.withColumn("similarity", F.coalesce("similarity", same))
    return clusters.where(~dup).withColumn("similarity", F.lit(None).cast("double")).unionByName(with_sim)


def cluster_shape(clusters: DataFrame) -> tuple[dict[int, int], dict[int, int], int]:
    """The clusters' sizes, their chaining and the exact duplicates, in one Spark action: {size: clusters},
    {distance: clusters} where distance is, for each cluster with duplicates, the largest Hamming distance between
    a member's fingerprint and its kept page's, and the number of duplicates that are exact copies by fingerprint.
    Transitive closure can join pages far more than k apart through a chain of near pairs; the distances show how
    far it went. Clusters whose kept page is not among these rows (an earlier run's, with --history) are left out
    of the distances.

    Exact duplicates: in each cluster, the duplicates that share their fingerprint with the kept page, and of
    each other fingerprint all duplicates but one. Not pages with a fingerprint less distinct fingerprints,
    which assumes every repeat of a fingerprint is removed: verified mode keeps two pages of one fingerprint
    whose texts differ ("Hello World" and "World Hello"), and that count would give -1 near duplicates.

    clusters: (cluster_id, is_duplicate, fingerprint, kept_fp[, kept_run_date][, exact_ref]), kept_fp the kept page's
    fingerprint on every row, null when the kept page is not among the rows (every resolve adds it: resolve_clusters,
    star_clusters, stages.resolve.resolve_verified, history_search.attach_history); exact_ref, when given, the
    fingerprint a duplicate counts as an exact copy of (kept_fp, or an earlier run's member's: history_search.
    with_history_copies), kept_fp otherwise. A kept page with duplicates has a fingerprint (duplicates
    are found through fingerprints), so only the duplicates are grouped by cluster, and the clusters of one page
    are the kept pages left over: the duplicates are a small share of the pages (~7% at 10M), and no window
    over every page is needed to find the kept page's fingerprint."""
    # first each duplicate's cluster and fingerprint, and the kept pages as one group (keyed null, so that each
    # map task sends one row of it) whose count is the kept pages; then by cluster
    dup = F.col("is_duplicate")
    exact_ref = F.col("exact_ref") if "exact_ref" in clusters.columns else F.col("kept_fp")
    # with --history a cluster is its kept page's id and run: ids such as URLs come back on later days, and
    # today's page u1 and an earlier run's u1 are two clusters
    cluster = F.struct("cluster_id", "kept_run_date") if "kept_run_date" in clusters.columns else F.col("cluster_id")
    per_fingerprint = clusters.groupBy(F.when(dup, cluster).alias("c"),
                                       F.when(dup, F.col("fingerprint")).alias("f")).agg(
        F.count(F.lit(1)).alias("rows"), F.max(F.col("kept_fp").isNotNull().cast("int")).alias("kept_here"),
        F.max(F.bit_count(F.col("fingerprint").bitwiseXOR(F.col("kept_fp")))).alias("d"),
        F.max((F.col("fingerprint") == exact_ref).cast("int")).alias("same"))
    per_cluster = per_fingerprint.groupBy("c").agg(
        F.sum("rows").alias("rows"), F.max("kept_here").alias("kept_here"), F.max("d").alias("d"),
        F.sum(F.when(F.col("f").isNotNull(), F.col("rows") - 1 + F.coalesce(F.col("same"), F.lit(0)))).alias("exact"))
    of_dups = F.col("c").isNotNull()
    rows = per_cluster.groupBy(F.when(of_dups, F.col("rows") + F.col("kept_here")).alias("size"),
                               F.when(of_dups, F.col("d")).alias("d")).agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.when(of_dups, F.col("kept_here"))).alias("kept_here"),
        F.sum(F.when(~of_dups, F.col("rows"))).alias("kept_pages"), F.sum("exact").alias("exact")).collect()
    kept_pages = sum(int(r["kept_pages"] or 0) for r in rows if r["size"] is None)
    exact = sum(int(r["exact"] or 0) for r in rows)
    rows = [r for r in rows if r["size"] is not None]
    # a kept page whose cluster has no duplicate among the rows is a cluster of one
    alone = kept_pages - sum(int(r["kept_here"]) for r in rows)
    return (*_shape_of_groups(rows + ([{"size": 1, "d": None, "n": alone}] if alone else [])), exact)


def _shape_of_groups(rows) -> tuple[dict[int, int], dict[int, int]]:
    sizes: dict[int, int] = {}
    chaining: dict[int, int] = {}
    for r in rows:
        sizes[int(r["size"])] = sizes.get(int(r["size"]), 0) + int(r["n"])
        if r["d"] is not None:
            chaining[int(r["d"])] = chaining.get(int(r["d"]), 0) + int(r["n"])
    return sizes, chaining
