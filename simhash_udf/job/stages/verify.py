"""Stage 5b, verify: every accepted pair (of the tables and of the bands) checked on the two pages'
signatures, counted by similarity band; a spanning forest of the verified pairs becomes the edges."""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...spark.bands import band_edges
from ...spark.short_text import found_by_main_search
from ...spark.verified import distinct_fingerprints, signatures_of, verified_edges
from .blocks import Blocks
from .candidates import Candidates
from .context import StageContext

BandCounts = dict[int, tuple[int, int]]  # similarity band -> (verified, rejected) pairs


@dataclass
class Verified:
    edges: DataFrame  # (src, dst) fingerprint pairs: the verified forest, and the short-text edges
    by_band: BandCounts  # the pairs of both searches by similarity band
    n_verified: int
    n_rejected: int
    forest_edges: int  # edges of the verified forests (short-text edges not counted)
    band_accepted: int  # pairs the band search accepted (0: bands off)
    band_verified: int  # of them verified
    short_found_by_main_search: int = 0  # the short-text candidate pairs that the tables or the bands found too
    sentence_found_by_other_sources: int = 0  # the sentence-key pairs that the tables, the bands or short text found
    edge_count: int | None = None  # rows of edges, at most (None: not counted; the short-text edges not given)


def verify_stage(blocks: Blocks, cands: Candidates, short_edges: DataFrame | None, ctx: StageContext,
                 short_pairs: DataFrame | None = None, sentence_pairs: DataFrame | None = None,
                 more_edge_count: int | None = None) -> Verified:
    """Stage 5b: the candidates' pairs verified (every one an edge when ctx.specs.verify is None), the
    verified forests with the short-text stage's and the sentence keys' edges (short_edges) as the components'
    input. short_pairs: the short-text stage's candidate pairs, of which those the main search found as well are
    counted; sentence_pairs: the sentence-key search's (src, dst), of which those any other source found are
    counted (the report's sums count such a pair under each source that found it); more_edge_count: the rows of
    short_edges, at most (None: not known)."""
    specs = ctx.specs
    with ctx.timer("verify") as counts:
        signatures = blocks.search_signatures
        if specs.verify is not None and ctx.large:
            signatures = candidate_signatures(signatures, cands, ctx, counts)
        sources = [ctx.persist(verified_edges(cands.members.where(F.col("fingerprint").isNotNull()), signatures,
                                              blocks.plan, specs.verify))]
        if cands.band_members is not None:
            sources.append(ctx.persist(band_edges(cands.band_members, signatures, specs.bands, specs.k, specs.verify)))
        by_source, n_edges = edge_counts(sources)  # one pass over both
        by_band = by_source[0]
        n_verified, n_rejected = totals(by_band)
        counts.update(verified=n_verified, rejected=n_rejected)
        edges = reduce(DataFrame.unionByName, [s.where(F.col("src").isNotNull()).select("src", "dst") for s in sources])
        band_accepted = band_verified = 0
        if cands.band_members is not None:
            by_band_b = by_source[1]
            band_verified, band_rejected = totals(by_band_b)
            band_accepted = band_verified + band_rejected
            counts.update(band_verified=band_verified, band_rejected=band_rejected)
            for b, (v, r) in by_band_b.items():
                by_band[b] = (by_band.get(b, (0, 0))[0] + v, by_band.get(b, (0, 0))[1] + r)
            n_verified, n_rejected = totals(by_band)
        counts["forest_edges"] = n_edges
        if short_edges is not None:
            edges = edges.unionByName(short_edges)
        band_signatures = blocks.search_signatures if specs.use_bands else None
        bands = specs.bands if specs.use_bands else None
        also_short = also_sentences = 0
        if short_pairs is not None:
            also_short = found_by_main_search(short_pairs, band_signatures, specs.k, bands)
        if sentence_pairs is not None:
            also_sentences = sentence_pairs_found_elsewhere(sentence_pairs, short_pairs, band_signatures, specs.k, bands)
            counts["sentence_pairs_found_elsewhere"] = also_sentences
    more = 0 if short_edges is None else more_edge_count
    edge_count = None if more is None else n_edges + more
    return Verified(edges, by_band, n_verified, n_rejected, n_edges, band_accepted, band_verified, also_short,
                    also_sentences, edge_count)


def sentence_pairs_found_elsewhere(sentence_pairs: DataFrame, short_pairs: DataFrame | None,
                                   band_signatures: DataFrame | None, k: int, bands) -> int:
    """How many sentence-key pairs (src < dst) another source found as well: a short-text candidate pair, or
    else one the tables or the bands find (found_by_main_search). Counted once per pair, so that the report's
    compared minus its pairs found by more than one source is the distinct pairs over all sources."""
    pairs = sentence_pairs.select(F.col("src").alias("fp_a"), F.col("dst").alias("fp_b"))
    in_short = 0
    if short_pairs is not None:
        short = short_pairs.where(F.col("fp_a") != F.col("fp_b")).select(
            F.least("fp_a", "fp_b").alias("fp_a"), F.greatest("fp_a", "fp_b").alias("fp_b")).distinct()
        in_short = pairs.join(short, ["fp_a", "fp_b"], "left_semi").count()
        pairs = pairs.join(short, ["fp_a", "fp_b"], "left_anti")
    return in_short + found_by_main_search(pairs, band_signatures, k, bands)


def candidate_signatures(signatures: DataFrame, cands: Candidates, ctx: StageContext, counts: dict) -> DataFrame:
    """A large run's signatures for the verify joins: those of the candidates alone, cached, shuffled and
    sorted by fingerprint, so that each join moves and sorts only its other side. One pass over every
    fingerprint's signature instead of a sort of them per join (the pages, split, are not partitioned by
    fingerprint; the joins shuffled these signatures once each: 4 x 115 MB at 10M fingerprints)."""
    columns = [cands.members.select("fingerprint")]
    if cands.band_members is not None:
        columns += [cands.band_members.select("fingerprint"), cands.band_members.select("other")]
    wanted = ctx.persist(distinct_fingerprints(columns))
    n_wanted = counts["candidate_fingerprints"] = wanted.count()
    partitions = int(signatures.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    return ctx.persist(signatures_of(signatures, wanted, n_wanted).repartition(partitions, "fingerprint")
                       .sortWithinPartitions("fingerprint"))


def totals(by_band: BandCounts) -> tuple[int, int]:
    """(verified, rejected) pairs over all similarity bands."""
    return sum(v for v, _ in by_band.values()), sum(r for _, r in by_band.values())


def edge_counts(sources: list[DataFrame]) -> tuple[list[BandCounts], int]:
    """From the rows of verify walks (edges, and statistics rows with a band), in one Spark job: for each
    source {similarity band: (verified, rejected)}, and the edges of all of them."""
    union = reduce(DataFrame.unionByName, [rows.withColumn("source", F.lit(i)) for i, rows in enumerate(sources)])
    stats = union.groupBy("source", "band").agg(F.sum("verified").alias("v"), F.sum("rejected").alias("r"),
                                                F.count("src").alias("edges")).collect()
    by_source = [{int(r["band"]): (int(r["v"]), int(r["r"])) for r in stats if r["source"] == i and r["band"] is not None}
                 for i in range(len(sources))]
    return by_source, sum(int(r["edges"]) for r in stats)
