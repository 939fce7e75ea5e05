"""The stages of the job between reading and writing, each under the StageTimer: fingerprint, short text,
then the near-duplicate stages on fingerprints (exact collapse, blocks, candidates, verify, components,
resolve). Each returns a small dataclass. Both the job (pipeline.run) and the Python API (api.py) run them.
Each stage is materialised once (persist + count) so its seconds can be reported and nothing expensive,
least of all the Python UDF, runs twice."""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce
from typing import Callable

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..core.bands import SignatureBands
from ..core.blocks import chance_pairs, choose_plan, plan_cost, plan_tables
from ..core.fingerprint import FeatureSpec
from ..core.verified import BANDS, VerifySpec
from ..errors import DedupError
from ..io.history import attach_history, history_rows, per_fingerprint, related_band_rows, related_block_rows
from ..spark.bands import band_edges, band_group_members, band_rows
from ..spark.blocks import block_rows, group_batches
from ..spark.candidates import group_members
from ..spark.components import connected_components
from ..spark.fingerprint import with_corpus_idf, with_fingerprints
from ..spark.joins import broadcast_if_small
from ..spark.session import scoped_settings
from ..spark.short_text import short_text_edges
from ..spark.star import cluster_shape, keep_rank, resolve_clusters, star_clusters
from ..spark.verified import (
    distinct_fingerprints,
    fingerprint_signatures,
    signatures_of,
    units_of,
    verified_clusters,
    verified_edges,
    with_units,
)
from . import termination
from .config import DedupConfig

log = logging.getLogger("simhash_dedup")
# Warn when chance pairs of random fingerprints are more than this share of the accepted pairs.
CHANCE_WARN_SHARE = 0.01


def chance_warning(chance: float, accepted: int, k: int, n: int) -> str | None:
    """The warning to log when at least one accepted pair, and more than CHANCE_WARN_SHARE of them, is
    expected by chance alone among n random fingerprints (`blocks.chance_pairs`); None otherwise."""
    if chance < 1 or chance <= CHANCE_WARN_SHARE * accepted:
        return None
    return (f"{chance:,.0f} of the {accepted:,} pairs within k = {k} are expected between unrelated pages by "
            f"chance alone ({n:,} fingerprints, even if they were uniformly random); transitive clusters can "
            f"chain through them: verify pairs (--min-similarity 0.8, the default) or use a smaller --k")


def simulation_mask(bits: int) -> int:
    """A 64-bit mask (as int64) keeping `bits` bits spread evenly over the 64, so every block of every table
    keeps about the same share: two random cut fingerprints are within k as often as two random `bits`-bit
    ones (blocks.chance_pairs with f = bits)."""
    mask = sum(1 << i for i in range(64) if (i + 1) * bits // 64 > i * bits // 64)
    return mask - (1 << 64) if mask >= 1 << 63 else mask


class StageTimer:
    """Seconds per stage for the report, and a progress line per stage in the log: when it starts, and when
    it ends with its seconds and the counts the stage put into the dict it yields."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.counts: dict[str, dict] = {}

    @contextmanager
    def __call__(self, name: str):
        termination.check()  # SIGTERM: stop between stages too (running Spark jobs are cancelled at once)
        log.info("stage %s: started", name)
        start = time.perf_counter()
        counts: dict = {}
        yield counts
        self.seconds[name] = round(time.perf_counter() - start, 3)
        self.counts[name] = counts
        shown = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in counts.items())
        log.info("stage %s: done in %.1f s%s", name, self.seconds[name], f" ({shown})" if shown else "")


def _persist(df: DataFrame) -> DataFrame:
    return df.persist(StorageLevel.MEMORY_AND_DISK)


# The column of prepare_documents that counts texts with invalid UTF-8 (or a U+FFFD a reader left), completed by
# the fingerprint pass: with_fingerprints(..., replacement_flag=REPLACEMENT_FLAG).
REPLACEMENT_FLAG = "invalid_utf8"


def prepare_documents(raw: DataFrame, cfg: DedupConfig) -> DataFrame:
    """(id, text, rank, text_null, invalid_utf8, truncated, truncated_record): text made valid UTF-8 and capped.
    A WET record cut off by the end of its file (wet.py: `truncated_record`) gets no text, so no fingerprint:
    a cluster of its own. invalid_utf8 is complete only after the fingerprint pass with
    replacement_flag=REPLACEMENT_FLAG (a U+FFFD within the cap is found there)."""
    text = F.col(cfg.text_col)
    if dict(raw.dtypes)[cfg.text_col] == "binary":
        text = text.cast("string")
    is_valid = F.is_valid_utf8(text)
    valid = F.when(is_valid, text).otherwise(F.make_valid_utf8(text))  # one validity scan for valid text
    # a text of at most max_text_chars bytes has at most as many characters: counted and cut only when longer
    # (each is a scan of the text; most pages are far below the cap)
    long = F.octet_length(valid) > cfg.max_text_chars
    cut = F.col("truncated_record") if "truncated_record" in raw.columns else F.lit(False)
    return raw.select(
        F.col(cfg.id_col).alias("id"),
        F.when(~cut, F.when(long, F.substring(valid, 1, cfg.max_text_chars)).otherwise(valid)).alias("text"),
        keep_rank(cfg.keep, cfg.id_col, cfg.text_col).alias("rank"),
        text.isNull().alias("text_null"),
        # binary text: invalid UTF-8 is replaced here; string text: the reader replaced it already, so the
        # U+FFFD it left is what can be counted. That search runs here only for a text the cap cuts or a cut
        # record's (no text goes on); for the others the fingerprint pass sets this column (REPLACEMENT_FLAG), at
        # ~1/5 of the JVM's CPU for the same search.
        (~F.coalesce(is_valid, F.lit(True))
         | F.coalesce((long | cut) & valid.contains("\ufffd"), F.lit(False))).alias(REPLACEMENT_FLAG),
        F.coalesce(long & (F.length(valid) > cfg.max_text_chars), F.lit(False)).alias("truncated"),
        cut.alias("truncated_record"),
    )


def stored_fingerprints(raw: DataFrame, cfg: DedupConfig) -> DataFrame:
    """Rows of an `--input-format fingerprints` input (id, fingerprint) in the shape the fingerprint stage
    gives: the near-duplicate stages run unchanged, and stored fingerprints can be dedup'd again."""
    fp = F.col("fingerprint").cast("long")
    signature = [F.col("signature").cast("binary")] if "signature" in raw.columns else []
    return raw.select(
        F.col(cfg.id_col).alias("id"),
        keep_rank(cfg.keep, cfg.id_col, None).alias("rank"),
        F.lit(False).alias("text_null"),
        F.lit(False).alias("invalid_utf8"),
        F.lit(False).alias("truncated"),
        F.lit(False).alias("truncated_record"),
        fp.alias("fingerprint"),
        F.when(fp.isNull(), 0).otherwise(1).alias("n_features"),
        *signature,
    )


Keep = Callable[[DataFrame], DataFrame]  # persists a DataFrame and registers it for clean-up


def reliable_checkpoint(df: DataFrame) -> DataFrame:
    """The job's checkpoint of a component round: files in the SparkContext's checkpoint directory (the
    run's staging directory), so a lost executor costs a re-read, not a recomputation of every round."""
    return df.checkpoint(eager=True)


@dataclass
class Fingerprinted:
    docs: DataFrame  # id, rank, bad-row flags, fingerprint, n_features[, signature][, short_fingerprint, short_text]
    stats: dict  # the pass's counts: input_rows, the bad-row flags, fingerprinted, short_pages
    spec: FeatureSpec  # with the corpus idf table for weighting tfidf-corpus


@dataclass
class ShortText:
    edges: DataFrame | None  # (src, dst) fingerprint pairs verified by shingle Jaccard; None when off
    report: dict


@dataclass
class Clustered:
    clusters: DataFrame  # id, fingerprint, cluster_id, is_duplicate, signature, kept_fp[, kept_run_date]
    histogram: dict[int, int]  # cluster size -> clusters
    stats: dict  # pair statistics, table plan, chaining


def fingerprint_stage(raw: DataFrame, cfg: DedupConfig, keep: Keep, timer: StageTimer) -> Fingerprinted:
    """Stage 2: the fingerprint and signature of every page (or the stored ones of an --input-format
    fingerprints input), counted with the bad rows in one pass."""
    spec = cfg.features
    with timer("fingerprint") as counts:
        if cfg.input_format == "fingerprints":
            # a projection of the input, not cached: the exact collapse reads it once, and this count reads
            # its fingerprint column alone (10M stored fingerprints with signatures: caching them took 24.5 s)
            docs = stored_fingerprints(raw, cfg)
        else:
            prepared = prepare_documents(raw, cfg)
            if cfg.weighting == "tfidf-corpus":  # one extra pass over the texts for the idf table
                spec = with_corpus_idf(prepared, "text", spec)
            short = None if cfg.short_text_off_because() else cfg.short_text
            docs = keep(with_fingerprints(prepared, "text", spec, short, cfg.signature, REPLACEMENT_FLAG))
        if cfg.simulate_fingerprint_bits:  # a projection of the above
            docs = docs.withColumn("fingerprint", F.col("fingerprint").bitwiseAND(
                F.lit(simulation_mask(cfg.simulate_fingerprint_bits))))
        stats = docs.agg(
            F.count(F.lit(1)).alias("input_rows"),
            F.sum(F.col("text_null").cast("long")).alias("null_text"),
            F.sum(((F.col("n_features") == 0)).cast("long")).alias("no_features"),
            F.sum(F.col("invalid_utf8").cast("long")).alias("invalid_utf8"),
            F.sum(F.col("truncated").cast("long")).alias("truncated"),
            F.sum(F.col("truncated_record").cast("long")).alias("truncated_records"),
            F.count("fingerprint").alias("fingerprinted"),
            # short pages with a fingerprint: a bound on the short-text stage's search, planned from it when small
            (F.count(F.when(F.col("fingerprint").isNotNull(), F.col("short_fingerprint")))
             if "short_fingerprint" in docs.columns else F.lit(0)).alias("short_pages"),
            # stored fingerprints whose signature is missing: verification cannot compare them (below)
            (F.count(F.when(F.col("fingerprint").isNotNull() & F.col("signature").isNull(), F.lit(1)))
             if cfg.input_format == "fingerprints" and "signature" in docs.columns else F.lit(0)).alias("no_signature"),
        ).first().asDict()
        stats = {name: int(v or 0) for name, v in stats.items()}
        missing = stats.pop("no_signature")
        if missing and cfg.verify is not None:
            raise DedupError(
                f"{missing:,} rows of input {cfg.input} have a fingerprint but no signature: verification compares "
                "signatures (clusters/ of this version has one for every fingerprint), and without one a page "
                "would be removed unverified; drop or complete those rows, or pass --min-similarity 0 to cluster "
                "by fingerprint distance alone")
        counts.update(rows=stats["input_rows"], fingerprinted=stats["fingerprinted"])
    return Fingerprinted(docs, stats, spec)


def short_text_stage(docs: DataFrame, cfg: DedupConfig, keep: Keep, timer: StageTimer,
                     short_pages: int = -1) -> ShortText:
    """Stage 2b: pairs of short pages verified by their shingles' Jaccard index (off: edges None).
    short_pages: the fingerprint stage's count of short pages with a fingerprint (-1: not known)."""
    off = cfg.short_text_off_because()
    if off:
        return ShortText(None, {"enabled": False, "off_because": off})
    with timer("short_text") as counts:
        edges, stats = short_text_edges(docs, cfg.short_text, keep, short_pages)
        edges = keep(edges) if edges is not None else None
        counts.update(candidates=stats["candidate_pairs"], verified=stats["verified_pairs"])
    return ShortText(edges, {"enabled": True, **stats})


# Session settings of the clustering stages (put back afterwards):
# - caches not compressed: they hold random 64-bit fingerprints and 128-byte signatures, which do not compress,
#   and compressing them made each persist of 3M pages ~2x slower;
# - a join whose keys include the ones a side is already partitioned by keeps that partitioning: the pages are
#   partitioned by fingerprint (with_units, unless split in a large run), and Spark turns "join on
#   fingerprint, then unit = unit" into a join on both, which re-shuffled every unit's signature to fetch those
#   of the few multi-unit components (4M fingerprints: 4M rows, 584 MB). Skew is no worse: that side is
#   partitioned by fingerprint already.
#   (verified_clusters no longer makes that join: it reads the signatures in its one pass over the units; the
#   setting stays for any join of that shape.)
# From this many pages on (the fingerprint stage's count), the exact collapse shuffles only the pages of repeated
# fingerprints (with_units' split), the verify joins meet the candidates' signatures alone (signatures_of) and
# resolve broadcasts the units' assignments: passes over every page's signature saved (10M stored fingerprints,
# new JVMs: 0.85 and 0.93 of the job time in two rounds, performance.md), but Spark jobs added (a run of 200
# pages: 77 -> 93), which cost a small input more than the passes they save.
LARGE_RUN_PAGES = 1_000_000

CLUSTERING_SETTINGS = {"spark.sql.inMemoryColumnarStorage.compressed": "false",
                       "spark.sql.requireAllClusterKeysForCoPartition": "false"}


def near_duplicate_clusters(docs: DataFrame, **kwargs) -> Clustered:
    """Stages 3-7 (see _near_duplicate_clusters), under CLUSTERING_SETTINGS."""
    with scoped_settings(docs.sparkSession, CLUSTERING_SETTINGS):
        return _near_duplicate_clusters(docs, **kwargs)


def _near_duplicate_clusters(
    docs: DataFrame, *, k: int, timer: StageTimer, keep: Keep, blocks: int = 0, max_rounds: int = 200,
    checkpoint: Keep = reliable_checkpoint, history: DataFrame | None = None,
    history_band_rows: DataFrame | None = None, run_date: str = "",
    cluster_mode: str = "verified", short_edges: DataFrame | None = None, verify: VerifySpec | None = None,
    bands: SignatureBands | None = None, n_pages: int = -1,
) -> Clustered:
    """Stages 3-7 on (id, fingerprint, rank[, signature][, short_text]) rows: exact collapse, blocks,
    candidates, verification, components, resolve. blocks = 0 lets the planner choose the tables from the
    number of distinct fingerprints; verify = None (or no signature column) makes every candidate pair an edge.
    bands: the signature-band search beside the tables (bands.py), used only when pairs are verified.

    Returns the clusters (id, fingerprint, cluster_id, is_duplicate), the cluster-size histogram
    {size: clusters} and the pair statistics. `keep` persists a DataFrame and registers it for clean-up;
    `checkpoint` cuts the lineage of each component round (the job: reliable_checkpoint).

    history: the rows of earlier runs (History.earlier: id, fingerprint, signature, cluster_id, is_duplicate,
    kept_run_date), or the same per fingerprint (fingerprint, h_cluster, h_kept_date, signature, kept_signature;
    history.per_fingerprint); its fingerprints that share a key with this run's join the pair search (the
    plan's keys are chosen wide enough that these are few, blocks.choose_plan), only their clusters and
    signatures are read, and pages that meet them become
    duplicates of their clusters (in verified mode only if verified-similar to the cluster's kept page; the
    clusters then also carry kept_run_date, and the histogram counts this run's pages only).
    history_band_rows: the history's (fingerprint, keys) band-key arrays when read from its band index
    (History.band_rows); None: computed from its signatures. n_pages: the rows of docs, if known (-1: not);
    from LARGE_RUN_PAGES on, the passes of a large run."""
    if "signature" not in docs.columns:
        docs, verify = docs.withColumn("signature", F.lit(None).cast("binary")), None
    if "short_text" not in docs.columns:
        docs = docs.withColumn("short_text", F.lit(None).cast("string"))
    with timer("exact_collapse") as counts:
        # units: pages with the same fingerprint, signature and short text, which verify alike. Only the
        # columns the later stages read are shuffled and cached, or in a large run read again (the bad-row
        # flags were counted already: 10M fingerprints, this persist 19.9-22.6 -> 17.1-20.2 s)
        docs = docs.select("id", "fingerprint", "rank", "signature", "short_text")
        large = n_pages >= LARGE_RUN_PAGES
        docs, repeated = with_units(docs, keep, checkpoint, split=large)
        if repeated is not None:
            counts["repeated_fingerprints"] = repeated
        units = units_of(docs)
        # a narrow cache of its own: the band rows read from the wide cache of the pages took ~4x longer (2M
        # fingerprints: the map side of the band search 43 s -> 9 s, same session)
        fp_sigs = keep(fingerprint_signatures(docs))
        n_distinct = counts["distinct_fingerprints"] = fp_sigs.count()
        # the history's rows with a fingerprint (a bound on its distinct fingerprints, for the planner): a
        # count reads one column, a distinct count would shuffle the whole history (~11 s of 30 million rows)
        n_history = history_rows(history).count() if history is not None else 0
        if history is not None:
            counts["history_rows"] = n_history

    n_search = n_distinct + n_history  # fingerprints in the pair search
    plan = plan_tables(k, blocks) if blocks else choose_plan(n_distinct, k, n_history)
    use_bands = bands is not None and bands.bands > 0 and verify is not None
    with timer("blocks") as counts:
        search_sigs = fp_sigs.select("fingerprint", "signature")
        more_rows = more_brows = None  # the history's rows that join the searches
        if history is not None:
            # this run's block and band rows as SQL rows, to match the history's to their keys
            rows = block_rows(fp_sigs, plan)
            brows = band_rows(fp_sigs, bands) if use_bands else None
            related_rows = keep(related_block_rows(history, rows, fp_sigs.select("fingerprint"), plan, n_distinct))
            related_fps = related_rows.select("fingerprint")
            if use_bands:  # history fingerprints that share a band key with this run's
                related_brows = keep(related_band_rows(history, brows, fp_sigs.select("fingerprint"), bands, n_distinct,
                                                                history_band_rows))
                related_fps = related_fps.union(related_brows.select("fingerprint"))
                more_brows = related_brows
            related_fps = keep(related_fps.distinct())
            with group_batches(docs.sparkSession):  # the Bloom filters' batches of history rows: two longs a row
                n_related = related_fps.count()
            # the clusters and signatures of these alone are read from the history
            related = keep(per_fingerprint(history, related_fps, n_related))
            more_rows = related_rows
            search_sigs = search_sigs.unionByName(
                related.select("fingerprint", "signature").join(fp_sigs, "fingerprint", "left_anti"))
        counts["tables"] = len(plan.tables)
        if use_bands:
            counts["bands"] = bands.bands

    with timer("candidates") as counts:  # the shuffles that form the key groups happen here
        members = keep(group_members(fp_sigs, plan, more_rows, n_distinct))
        # one Spark action for both searches: the table search's statistics by distance (its totals are the
        # sums over the distances; source 0) and the band search's totals (source 1)
        per_distance = members.groupBy("distance").agg(
            F.sum("compared").alias("compared"), F.sum("accepted").alias("accepted"),
            F.sum("groups").alias("groups")).withColumn("source", F.lit(0))
        if use_bands:
            band_members = keep(band_group_members(fp_sigs, bands, k, more_brows, n_distinct))
            per_distance = per_distance.unionByName(band_members.agg(
                F.lit(None).cast(dict(members.dtypes)["distance"]).alias("distance"),
                F.sum("compared").alias("compared"), F.lit(None).cast("long").alias("accepted"),
                F.sum("groups").alias("groups"), F.lit(1).alias("source")))
        with group_batches(docs.sparkSession):
            stat_rows = per_distance.collect()
        table_rows = [r for r in stat_rows if r["source"] == 0]
        pair_stats = {name: sum(int(r[name] or 0) for r in table_rows) for name in ("compared", "accepted", "groups")}
        by_distance = {int(r["distance"]): int(r["accepted"] or 0) for r in table_rows if r["distance"] is not None}
        n_groups = counts["key_groups"] = pair_stats["groups"]
        counts.update(compared=pair_stats["compared"], accepted=pair_stats["accepted"])
        band_stats = {"compared": 0, "groups": 0}
        if use_bands:
            b = next(r for r in stat_rows if r["source"] == 1)
            band_stats = {"compared": int(b["compared"] or 0), "groups": int(b["groups"] or 0)}
            counts.update(band_compared=band_stats["compared"])
        chance = float(f"{chance_pairs(n_search, k):.4g}")
        warning = chance_warning(chance, counts["accepted"], k, n_search) if verify is None else None
        if warning:
            log.warning(warning)

    with timer("verify") as counts:
        if verify is not None and large:
            # the signatures of the candidates alone, cached, for the four joins below: one pass over every
            # fingerprint's signature instead of a sort of them per join (the pages, split, are not partitioned
            # by fingerprint); cached shuffled and sorted by fingerprint, so that the joins move and sort only
            # their other side (they shuffled these signatures once each: 4 x 115 MB at 10M fingerprints)
            wanted = keep(distinct_fingerprints([members.select("fingerprint")] + (
                [band_members.select("fingerprint"), band_members.select("other")] if use_bands else [])))
            n_wanted = counts["candidate_fingerprints"] = wanted.count()
            partitions = int(docs.sparkSession.conf.get("spark.sql.shuffle.partitions"))
            search_sigs = keep(signatures_of(search_sigs, wanted, n_wanted).repartition(partitions, "fingerprint")
                               .sortWithinPartitions("fingerprint"))
        edge_rows = keep(verified_edges(members.where(F.col("fingerprint").isNotNull()), search_sigs, plan, verify))
        sources = [edge_rows]
        if use_bands:
            sources.append(keep(band_edges(band_members, search_sigs, bands, k, verify)))
        by_source, n_edges = edge_counts(sources)  # one pass over both
        by_band = by_source[0]
        n_verified, n_rejected = sum(v for v, _ in by_band.values()), sum(r for _, r in by_band.values())
        counts.update(verified=n_verified, rejected=n_rejected)
        edges = reduce(DataFrame.unionByName, [s.where(F.col("src").isNotNull()).select("src", "dst") for s in sources])
        if use_bands:
            by_band_b = by_source[1]
            band_stats.update(accepted=sum(v + r for v, r in by_band_b.values()),
                              verified=sum(v for v, _ in by_band_b.values()))
            counts.update(band_verified=band_stats["verified"], band_rejected=band_stats["accepted"] - band_stats["verified"])
            for b, (v, r) in by_band_b.items():
                by_band[b] = (by_band.get(b, (0, 0))[0] + v, by_band.get(b, (0, 0))[1] + r)
            n_verified, n_rejected = sum(v for v, _ in by_band.values()), sum(r for _, r in by_band.values())
        counts["forest_edges"] = n_edges
        if short_edges is not None:
            edges = edges.unionByName(short_edges)

    with timer("components") as counts:
        roots, rounds, n_roots = connected_components(edges, checkpoint, max_rounds)
        counts["rounds"] = rounds

    with timer("resolve") as counts:
        page_cols = docs.select("id", "fingerprint", "rank", "signature", "short_text", "unit")
        if cluster_mode == "verified":
            fixed = None
            if history is not None:
                fixed = related.where(F.col("kept_signature").isNotNull() | F.lit(verify is None)).select(
                    "fingerprint", "h_cluster", "h_kept_date", F.col("kept_signature").alias("signature"))
            assigned = verified_clusters(units, roots, verify, fixed, n_related if history is not None else -1, n_roots)
            n_assigned = -1
            if large:  # cached and counted: the split pages are not partitioned by fingerprint, and a broadcast of
                # the assignments, when few, spares them a shuffle
                assigned = keep(assigned)
                n_assigned = assigned.count()
            clusters = resolve_verified(page_cols, assigned, n_assigned, run_date if history is not None else None)
        elif cluster_mode == "star":
            clusters = star_clusters(page_cols.select("id", "fingerprint", "rank"), roots, k)
        else:
            clusters = resolve_clusters(page_cols.select("id", "fingerprint", "rank"), roots)
        if history is not None and cluster_mode != "verified":
            clusters = attach_history(clusters, roots, related, run_date)
        if cluster_mode != "verified":  # the signature goes into clusters/ with its page
            clusters = clusters.join(page_cols.select("id", "signature"), "id")
        clusters = keep(clusters)
        histogram, chaining, exact = cluster_shape(clusters)
        counts.update(clusters=sum(histogram.values()), with_duplicates=sum(c for s, c in histogram.items() if s > 1))
    stats = {
        "distinct_fingerprints": n_distinct,
        "key_groups": n_groups,
        "pairs_compared": pair_stats["compared"],
        "pairs_accepted": pair_stats["accepted"],
        "pairs_verified": n_verified,
        "pairs_rejected": n_rejected,
        "similarity_bands": {f"{b / BANDS:.1f}-{(b + 1) / BANDS:.1f}": {"verified": by_band.get(b, (0, 0))[0],
                                                                       "rejected": by_band.get(b, (0, 0))[1]}
                             for b in range(BANDS)} if verify is not None else None,
        "verification": verify.describe() if verify is not None else None,
        "forest_edges": n_edges,
        "pairs_accepted_by_distance": {str(d): by_distance.get(d, 0) for d in range(k + 1)},
        "component_rounds": rounds,
        "chance_pairs_uniform": chance,
        "table_plan": {**plan.describe(), **plan_cost(n_search, plan)},
        "signature_bands": ({**bands.describe(), "key_groups": band_stats["groups"],
                             "pairs_compared": band_stats["compared"], "pairs_accepted": band_stats["accepted"],
                             "pairs_verified": band_stats["verified"], "rows": n_search * bands.bands,
                             "expected_chance_comparisons": bands.expected_chance_comparisons(n_search)}
                            if use_bands else None),
        "max_distance_to_kept": {str(d): chaining[d] for d in sorted(chaining)},
        "exact_duplicates": exact,
    }
    if history is not None:
        stats["history_rows"] = n_history
        stats["history_fingerprints_compared"] = n_related
    return Clustered(clusters, histogram, stats)


def edge_counts(sources: list[DataFrame]) -> tuple[list[dict[int, tuple[int, int]]], int]:
    """From the rows of verify walks (edges, and statistics rows with a band), in one Spark job: for each
    source {similarity band: (verified, rejected)}, and the edges of all of them."""
    union = reduce(DataFrame.unionByName, [rows.withColumn("source", F.lit(i)) for i, rows in enumerate(sources)])
    stats = union.groupBy("source", "band").agg(F.sum("verified").alias("v"), F.sum("rejected").alias("r"),
                                                F.count("src").alias("edges")).collect()
    by_source = [{int(r["band"]): (int(r["v"]), int(r["r"])) for r in stats if r["source"] == i and r["band"] is not None}
                 for i in range(len(sources))]
    return by_source, sum(int(r["edges"]) for r in stats)


def resolve_verified(pages: DataFrame, assigned: DataFrame, n_assigned: int, run_date: str | None) -> DataFrame:
    """Each page's cluster from its unit's centre (verified_pairs.verified_clusters; n_assigned rows, -1: not
    known): the best page of the centre unit, or an earlier run's cluster; pages without a fingerprint are
    clusters of their own. With a run date (--history) also kept_run_date. Keeps the page's signature (for
    clusters/ and the history), and adds kept_fp: the kept page's fingerprint, null when it is an earlier run's
    (star.cluster_shape)."""
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
    cols = [F.col("id"), F.col("fingerprint"), cluster_id.alias("cluster_id"),
            (earlier | (F.col("id") != kept)).alias("is_duplicate"), F.col("signature"), kept_fp.alias("kept_fp")]
    if run_date is not None:
        cols.append(F.when(earlier, F.col("h_kept_date")).otherwise(F.lit(run_date)).alias("kept_run_date"))
    return joined.select(*cols)


