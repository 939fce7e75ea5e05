"""Spark stage 7: one kept document per component, chosen by the keep policy; the rest are duplicates."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


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
    """docs: (id, fingerprint, rank); roots: (node, root) from the components stage.

    Returns (id, fingerprint, cluster_id, is_duplicate). A document without a fingerprint (no text, no
    features) is a cluster of its own."""
    with_comp = docs.join(roots, docs["fingerprint"] == roots["node"], "left").select(
        "id", "fingerprint", "rank", F.coalesce("root", "fingerprint").alias("comp")
    )
    kept = (
        with_comp.where(F.col("comp").isNotNull())
        .groupBy("comp")
        .agg(F.min(F.struct("rank", "id")).getField("id").alias("kept_id"))
    )
    return (
        with_comp.join(kept, "comp", "left")
        .select("id", "fingerprint", F.coalesce("kept_id", "id").alias("cluster_id"))
        .withColumn("is_duplicate", F.col("id") != F.col("cluster_id"))
    )
