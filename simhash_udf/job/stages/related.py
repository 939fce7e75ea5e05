"""Stage 7b, related (only with --related N): for every kept page the N nearest other kept pages within
--related-distance bits, nearest first (ties by id), outside its own cluster, with the signatures' estimated
Jaccard index (spark.related; the search is core.related's plan: exact multi-index hashing where affordable,
else an approximate plan of computed recall; searched in numpy run tables up to core.related.RUN_SEARCH_MAX_PAGES
kept pages, as joins beyond)."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...core.related import chance_neighbours, plan_related, search_for
from ...core.signature import SignatureSpec
from ...spark.related import related_pairs
from ..report_schema import RelatedExample, RelatedPlanStats, RelatedStats
from .context import Persist, StageTimer

EXAMPLES = 5  # example pairs in the report


@dataclass
class Related:
    pairs: DataFrame  # id, related_id, distance, rank, similarity (persisted)
    stats: RelatedStats


def related_stage(clusters: DataFrame, n: int, distance: int, spec: SignatureSpec, persist: Persist,
                  timer: StageTimer) -> Related:
    """The related pages of the kept pages of `clusters` (id, fingerprint, cluster_id, is_duplicate, signature),
    persisted and counted: the plan is chosen from the number of kept pages."""
    with timer("related") as counts:
        kept = persist(clusters.where(~F.col("is_duplicate")).select("id", "fingerprint", "cluster_id", "signature"))
        pages = kept.count()
        plan = plan_related(pages, distance)
        pairs = persist(related_pairs(kept, n, plan, spec, search_for(pages)))
        by_distance = {int(r["distance"]): int(r["count"]) for r in pairs.groupBy("distance").count().collect()}
        with_related = pairs.where(F.col("rank") == 1).count()
        examples = related_examples(pairs)
        counts.update(pages=pages, rows=sum(by_distance.values()), pages_with_related=with_related)
    stats = RelatedStats(
        n=n, pages=pages, pages_with_related=with_related, rows=sum(by_distance.values()),
        distance_histogram={str(d): by_distance.get(d, 0) for d in range(distance + 1)},
        chance_neighbours_per_page=round(chance_neighbours(pages, distance), 6),
        plan=RelatedPlanStats(**plan.describe(), expected_pairs=plan.expected_pairs(pages)), examples=examples)
    return Related(pairs, stats)


def related_examples(pairs: DataFrame, count: int = EXAMPLES) -> list[RelatedExample]:
    """Up to `count` rank-1 pairs at distances spread evenly over those of the rank-1 pairs, for each distance
    the pair of the smallest page id: what "related" means at the near and the far end."""
    first = {int(r["distance"]): r["pair"] for r in pairs.where(F.col("rank") == 1).groupBy("distance")
             .agg(F.min(F.struct("id", "related_id", "similarity")).alias("pair")).collect()}
    distances = sorted(first)
    picked = sorted({distances[round(i * (len(distances) - 1) / max(count - 1, 1))] for i in range(count)}
                    if distances else [])
    return [RelatedExample(id=first[d]["id"], related_id=first[d]["related_id"], distance=d,
                           similarity=first[d]["similarity"]) for d in picked]
