"""Spark stage 7 in star mode (core/star.py): inside each component, greedy centres in keep order, each page a
duplicate of its centre's best page, within k of it. What every mode shares is in clusters.py."""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..core.star import star_centres


def star_clusters(docs: DataFrame, roots: DataFrame, k: int) -> DataFrame:
    """Like clusters.resolve_clusters, in star mode (core/star.py): inside each component, greedy centres in keep
    order; a page is a duplicate of the best page of its centre's fingerprint (kept_fp), always within k of it.
    Components of one fingerprint skip the greedy step; a component's distinct fingerprints go to one Python
    worker."""
    with_comp = docs.join(roots, docs["fingerprint"] == roots["node"], "left").select(
        "id", "fingerprint", "rank", F.coalesce("root", "fingerprint").alias("comp")
    )
    per_fp = (
        with_comp.where(F.col("fingerprint").isNotNull())
        .groupBy("comp", "fingerprint")
        .agg(F.min(F.struct("rank", "id")).alias("best"))
        .withColumn("n", F.count(F.lit(1)).over(Window.partitionBy("comp")))
    )

    def centres(pdf):
        import pandas as pd  # here, not at the top: the spark modules import without pandas (test_layout.py)

        pdf = pdf.sort_values("pos")
        fps = pdf["fingerprint"].to_numpy(dtype="int64")
        return pd.DataFrame({"fingerprint": fps, "centre": fps[star_centres(fps, k)]})

    multi = per_fp.where(F.col("n") > 1).withColumn(
        "pos", F.row_number().over(Window.partitionBy("comp").orderBy("best"))
    )
    fp_centre = multi.select("comp", "fingerprint", "pos").groupBy("comp").applyInPandas(
        centres, "fingerprint long, centre long"
    ).unionByName(per_fp.where(F.col("n") == 1).select("fingerprint", F.col("fingerprint").alias("centre")))
    kept_of = per_fp.select(F.col("fingerprint").alias("centre"), F.col("best.id").alias("kept_id"))
    return (
        docs.join(fp_centre, "fingerprint", "left")
        .join(kept_of, "centre", "left")
        .select("id", "fingerprint", F.coalesce("kept_id", "id").alias("cluster_id"), F.col("centre").alias("kept_fp"))
        .withColumn("is_duplicate", F.col("id") != F.col("cluster_id"))
    )
