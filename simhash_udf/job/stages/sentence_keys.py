"""Stage 5d, sentence keys: the pages that share one of their longest sentences (the fingerprint pass made
the keys) paired and verified on their signatures and feature counts, similar or contained within the size
bound; the verified pairs are edges of the components beside the tables' and the bands'."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...spark.sentence_keys import (
    BY_CONTAINMENT,
    BY_SIMILARITY,
    DRIVER_FINGERPRINTS,
    REJECTED,
    KeyGroupCounts,
    fingerprint_info,
    fingerprint_keys,
    group_counts,
    key_sizes,
    searched_on_driver,
    shared_key_pairs,
    verified_pairs,
)
from .context import StageContext
from .exact_collapse import Collapsed


@dataclass
class SentencePairs:
    edges: DataFrame  # (src, dst) of the verified pairs
    pairs: DataFrame  # (src, dst) of every pair compared, src < dst (the report counts those other sources found)
    groups: KeyGroupCounts
    compared: int  # distinct pairs that share a key (each verified once)
    verified_by_similarity: int
    verified_by_containment: int  # verified only because one page is contained in the other
    rejected: int
    examples: dict[str, dict] = field(default_factory=dict)  # "similarity" / "containment" -> one pair's ids and figures


def sentence_keys_stage(collapsed: Collapsed, ctx: StageContext) -> SentencePairs | None:
    """Stage 5d: None when the search is off (ctx.specs.use_sentences)."""
    specs = ctx.specs
    if not specs.use_sentences:
        return None
    with ctx.timer("sentence_keys") as counts:
        found = None
        if 0 <= collapsed.n_distinct <= DRIVER_FINGERPRINTS:
            found = searched_on_driver(collapsed.pages, specs.sentences.max_group, specs.verify, ctx.checkpoint)
        if found is not None:
            pairs, groups = ctx.persist(found.pairs), found.groups
            how = found.table.column("how").to_numpy()
            by_how = {h: int(np.count_nonzero(how == h)) for h in (REJECTED, BY_SIMILARITY, BY_CONTAINMENT)}
            examples = driver_examples(found.table, found.info)
        else:
            rows = ctx.persist(fingerprint_keys(collapsed.pages))
            sizes = ctx.persist(key_sizes(rows))
            groups = group_counts(sizes, specs.sentences.max_group)
            info = fingerprint_info(collapsed.pages)
            pairs = ctx.persist(verified_pairs(shared_key_pairs(rows, sizes, specs.sentences.max_group), info,
                                               specs.verify))
            by_how = {int(r["how"]): int(r["count"]) for r in pairs.groupBy("how").count().collect()}
            examples = pair_examples(pairs, info)
        counts.update(key_groups=groups.groups, skipped_keys=groups.skipped_keys, compared=sum(by_how.values()),
                      by_similarity=by_how.get(BY_SIMILARITY, 0), by_containment=by_how.get(BY_CONTAINMENT, 0))
    edges = pairs.where(F.col("how") != REJECTED).select("src", "dst")
    return SentencePairs(edges, pairs.select("src", "dst"), groups, sum(by_how.values()), by_how.get(BY_SIMILARITY, 0),
                         by_how.get(BY_CONTAINMENT, 0), by_how.get(REJECTED, 0), examples)


def _example(how: int, p: dict, pages: dict) -> tuple[str, dict]:
    (id_a, n_a), (id_b, n_b) = pages.get(p["src"], (None, None)), pages.get(p["dst"], (None, None))
    return "containment" if how == BY_CONTAINMENT else "similarity", {
        "ids": [id_a, id_b], "features": [n_a, n_b],
        "similarity": p["similarity"] / 1000, "containment": p["containment"] / 1000}


def driver_examples(table: pa.Table, info: pa.Table | None) -> dict[str, dict]:
    """pair_examples of the driver's search: the same pairs (the first verified pair of each kind by
    fingerprints), from its Arrow tables."""
    rows = table.filter(pc.not_equal(table.column("how"), REJECTED)).sort_by([("src", "ascending"), ("dst", "ascending")])
    if info is None or not rows.num_rows:
        return {}
    pages = dict(zip(info.column("fingerprint").to_pylist(), zip(info.column("id").to_pylist(),
                                                                 info.column("n_features").to_pylist())))
    first = {}
    for p in rows.to_pylist():
        first.setdefault(p["how"], p)
    return dict(_example(how, p, pages) for how, p in sorted(first.items()))


def pair_examples(pairs: DataFrame, info: DataFrame) -> dict[str, dict]:
    """One verified pair of each kind (the smallest by fingerprints, so the same on every run): the two pages'
    ids (their fingerprints' best pages), feature counts, estimated similarity and containment."""
    first = pairs.where(F.col("how") != REJECTED).groupBy("how").agg(
        F.min(F.struct("src", "dst", "similarity", "containment")).alias("p")).collect()
    if not first:
        return {}
    fps = [r["p"]["src"] for r in first] + [r["p"]["dst"] for r in first]
    pages = {r["fingerprint"]: (r["id"], r["n_features"])
             for r in info.where(F.col("fingerprint").isin(fps)).select("fingerprint", "id", "n_features").collect()}
    return dict(_example(r["how"], r["p"].asDict(), pages) for r in first)
