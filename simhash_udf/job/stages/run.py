"""The stages in order: run_stages (fingerprint, short text, then near_duplicate_clusters: exact collapse,
blocks, candidates, verify, components, resolve; then related with --related N), for the job (pipeline.run)
and the Python API (api.py)."""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...core.blocks import plan_cost
from ...core.verified import BANDS
from ...spark.session import scoped_settings
from ...spark.verified import PROSE_COLUMNS
from ..config import DedupConfig
from ..report_schema import (
    BandCounts,
    CandidateStats,
    ContainmentTextCheck,
    PairSearch,
    PairSource,
    SentenceKeyStats,
    ShortTextStats,
    SignatureBandStats,
    TablePlanStats,
    Verification,
    VerifiedExample,
)
from .blocks import Blocks, blocks_stage
from .candidates import Candidates, candidates_stage
from .components import Components, components_stage
from .context import HistoryView, Persist, SearchSpecs, StageContext, StageTimer, reliable_checkpoint
from .exact_collapse import Collapsed, exact_collapse_stage
from .fingerprint import Fingerprinted, fingerprint_stage, prepare_documents
from .related import Related, related_stage
from .resolve import Resolved, resolve_stage
from .sentence_keys import SentencePairs, sentence_keys_stage
from .short_text import ShortText, short_text_stage
from .verify import Verified, verify_stage

log = logging.getLogger("simhash_dedup")

# Session settings of the stages from the fingerprint stage on (put back afterwards): caches not compressed. They
# hold random 64-bit fingerprints and 128-byte signatures, which do not compress: compressing them made each persist
# of 3M pages ~2x slower, and the fingerprint stage's cache of a crawl's page mix took 0.8 of its 4.7 JVM CPU seconds.
CACHE_SETTINGS = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}
# And those of the clustering stages: a join whose keys include the ones a side is already partitioned by keeps that
# partitioning: the pages are partitioned by fingerprint (with_units, unless split in a large run), and Spark turns
# "join on fingerprint, then unit = unit" into a join on both, which would re-shuffle every unit's signature to fetch
# those of the few multi-unit components. Skew is no worse: that side is partitioned by fingerprint already.
CLUSTERING_SETTINGS = {**CACHE_SETTINGS, "spark.sql.requireAllClusterKeysForCoPartition": "false"}
# From this many pages on (the fingerprint stage's count), the exact collapse shuffles only the pages of repeated
# fingerprints (with_units' split), the verify joins meet the candidates' signatures alone (signatures_of) and
# resolve broadcasts the units' assignments: passes over every page's signature saved (about a tenth of a 10M run's
# time, docs/performance.md), but Spark jobs added (about a fifth more
# for a run of 200 pages), which cost a small input more than the passes they save.
LARGE_RUN_PAGES = 1_000_000


@dataclass
class NearDuplicateStats:
    """The near-duplicate stages' counts (near_duplicate_stats), in report.json's types (report.py)."""
    distinct_fingerprints: int
    candidates: CandidateStats
    table_plan: TablePlanStats
    max_distance_to_kept: dict[str, int]  # clusters by the largest distance of a member to its kept page
    exact_duplicates: int  # resolve: copies of the kept page's or a fellow member's fingerprint
    history_rows: int | None = None  # with a history: its rows in the pair search
    history_fingerprints_compared: int | None = None  # and its fingerprints that share a key with this run's
    short_found_by_main_search: int = 0  # short-text candidate pairs that the tables or the bands found too
    sentence_found_by_other_sources: int = 0  # sentence-key pairs that the tables, the bands or short text found too
    containment_check: ContainmentTextCheck | None = None  # with containment: resolve's text check


@dataclass
class Clustered:
    clusters: DataFrame  # id, fingerprint, cluster_id, is_duplicate, signature, kept_fp[, kept_run_date]
    histogram: dict[int, int]  # cluster size -> clusters
    stats: NearDuplicateStats  # pair statistics, table plan, chaining: report.json reads them


@dataclass
class StageResults:
    fingerprinted: Fingerprinted
    short_text: ShortText
    clustered: Clustered
    related: Related | None = None  # with --related N


def run_stages(raw: DataFrame, cfg: DedupConfig, *, timer: StageTimer, persist: Persist,
               checkpoint: Persist = reliable_checkpoint, history: HistoryView | None = None,
               input_rows: Callable[[int], None] | None = None) -> StageResults:
    """Stages 2-7 on the input rows `raw` (read and checked): fingerprint, short text, and the near-duplicate
    stages with the search settings taken from cfg once (SearchSpecs.of). persist caches a DataFrame and
    registers it for clean-up; checkpoint cuts each component round's lineage; history: the earlier runs'
    rows (--history), None without them. input_rows is called with the fingerprint stage's row count before
    the stages that shuffle (the Python API sizes its shuffle partitions there, not knowing the count before).
    Under CACHE_SETTINGS."""
    with scoped_settings(raw.sparkSession, CACHE_SETTINGS):
        return _run_stages(raw, cfg, timer, persist, checkpoint, history, input_rows)


def _run_stages(raw: DataFrame, cfg: DedupConfig, timer: StageTimer, persist: Persist, checkpoint: Persist,
                history: HistoryView | None, input_rows: Callable[[int], None] | None) -> StageResults:
    fp = fingerprint_stage(raw, cfg, persist, timer)
    if input_rows is not None:
        input_rows(fp.stats["input_rows"])
    short = short_text_stage(fp.docs, cfg, persist, timer, fp.stats["short_pages"])
    specs = SearchSpecs.of(cfg)
    texts = None  # resolve checks the pages joined by containment on their texts (the input read again)
    if specs.verify is not None and specs.verify.containment and cfg.input_format != "fingerprints":
        texts = prepare_documents(raw, cfg).select("id", "text")
    ctx = StageContext(specs, timer, persist, checkpoint, history, large=fp.stats["input_rows"] >= LARGE_RUN_PAGES,
                       texts=texts)
    clustered = near_duplicate_clusters(fp.docs, ctx, short.edges, short.pairs,
                                        short.report.verified_pairs if short.edges is not None else None)
    search = clustered.stats.candidates.pair_search = pair_search(clustered.stats, short.report)
    log.info("%s", search.summary())
    related = related_stage(clustered.clusters, cfg.related, cfg.related_distance, cfg.signature, persist,
                            timer) if cfg.related > 0 else None
    return StageResults(fp, short, clustered, related)


def pair_search(stats: "NearDuplicateStats", short: ShortTextStats) -> PairSearch:
    """The pair search's numbers by source (report.json's candidates.pair_search, report.html's table and the
    log line): the SimHash tables' and the bands' from the candidates and verify stages, the short-text stage's
    from its report part and the sentence keys' from theirs (each null when off)."""
    cand, bands = stats.candidates, stats.candidates.signature_bands
    band_verified = bands.pairs_verified if bands is not None else 0
    band_rejected = bands.pairs_accepted - band_verified if bands is not None else 0
    tables = PairSource(key_group_pairs=cand.pairs_compared, compared=cand.pairs_accepted,
                        verified=cand.pairs_verified - band_verified, rejected=cand.pairs_rejected - band_rejected)
    by_bands = PairSource(key_group_pairs=bands.pairs_compared, compared=bands.pairs_accepted, verified=band_verified,
                          rejected=band_rejected) if bands is not None else None
    by_short = PairSource(key_group_pairs=short.pairs_compared, compared=short.candidate_pairs,
                          verified=short.verified_pairs,
                          rejected=short.candidate_pairs - short.verified_pairs) if short.enabled else None
    keys = cand.sentence_keys
    by_sentences = PairSource(key_group_pairs=keys.pairs_compared, compared=keys.pairs_compared,
                              verified=keys.pairs_verified_by_similarity + keys.pairs_verified_by_containment,
                              rejected=keys.pairs_rejected) if keys is not None else None
    sources = [s for s in (tables, by_bands, by_short, by_sentences) if s is not None]
    return PairSearch(simhash_tables=tables, signature_bands=by_bands, short_text=by_short, sentence_keys=by_sentences,
                      compared=sum(s.compared for s in sources),
                      found_by_more_than_one_source=stats.short_found_by_main_search
                      + stats.sentence_found_by_other_sources,
                      verified=sum(s.verified for s in sources), rejected=sum(s.rejected for s in sources))


def near_duplicate_clusters(docs: DataFrame, ctx: StageContext, short_edges: DataFrame | None = None,
                            short_pairs: DataFrame | None = None, short_edge_count: int | None = None) -> Clustered:
    """Stages 3-7 on (id, fingerprint, rank[, signature][, short_text]) rows, under CLUSTERING_SETTINGS: exact
    collapse, blocks, candidates, verify, components, resolve. Without a signature column every candidate
    pair is an edge (as with ctx.specs.verify None). short_edges: the short-text stage's verified pairs,
    more edges of the components; short_pairs: its candidate pairs (the report counts those found here too);
    short_edge_count: the rows of short_edges (None: not known, counted when the components stage needs it).

    Returns the clusters (id, fingerprint, cluster_id, is_duplicate, signature), the cluster-size histogram
    {size: clusters} and the pair statistics. With a history (ctx.history), its fingerprints that share a key
    with this run's join the pair search (the plan's keys are chosen wide enough that these are few,
    blocks.choose_plan), only their clusters and signatures are read, and pages that meet them become
    duplicates of their clusters (in verified mode only if verified-similar to the cluster's kept page); the
    clusters then also carry kept_run_date, and the histogram counts this run's pages only."""
    if "signature" not in docs.columns:
        docs = docs.withColumn("signature", F.lit(None).cast("binary"))
        ctx = dataclasses.replace(ctx, specs=dataclasses.replace(ctx.specs, verify=None))
    if "short_text" not in docs.columns:
        docs = docs.withColumn("short_text", F.lit(None).cast("string"))
    if "n_features" not in docs.columns:
        docs = docs.withColumn("n_features", F.lit(None).cast("int"))
    if "sentence_keys" not in docs.columns:
        docs = docs.withColumn("sentence_keys", F.lit(None).cast("array<bigint>"))
    for c in ("text_chars", *PROSE_COLUMNS):
        if c not in docs.columns:
            docs = docs.withColumn(c, F.lit(None).cast("int"))
    with scoped_settings(docs.sparkSession, CLUSTERING_SETTINGS):
        collapsed = exact_collapse_stage(docs, ctx)
        blocks = blocks_stage(collapsed, ctx)
        cands = candidates_stage(collapsed, blocks, ctx)
        sentences = sentence_keys_stage(collapsed, ctx)
        more_edges = [e for e in (short_edges, sentences.edges if sentences is not None else None) if e is not None]
        more_count = short_edge_count if short_edges is not None else 0  # the rows of more_edges (None: not known)
        if more_count is not None and sentences is not None:
            more_count += sentences.verified_by_similarity + sentences.verified_by_containment
        verified = verify_stage(blocks, cands, reduce(DataFrame.unionByName, more_edges) if more_edges else None, ctx,
                                short_pairs, sentences.pairs if sentences is not None else None, more_count)
        comps = components_stage(verified, ctx)
        resolved = resolve_stage(collapsed, blocks, comps, ctx, sentences.pairs if sentences is not None else None,
                                 sentences.compared if sentences is not None else -1)
    stats = near_duplicate_stats(ctx, collapsed, blocks, cands, verified, comps, resolved, sentences)
    return Clustered(resolved.clusters, resolved.histogram, stats)


def near_duplicate_stats(ctx: StageContext, collapsed: Collapsed, blocks: Blocks, cands: Candidates,
                         verified: Verified, comps: Components, resolved: Resolved,
                         sentences: SentencePairs | None = None) -> NearDuplicateStats:
    """The stages' counts, typed as report.json holds them (report_schema: its candidates, table_plan and
    cluster parts; history_rows and history_fingerprints_compared with a history)."""
    specs, n_search, by_band = ctx.specs, collapsed.n_search, verified.by_band
    verify = specs.verify
    candidates = CandidateStats(
        key_groups=cands.key_groups,
        pairs_compared=cands.compared,
        pairs_accepted=cands.accepted,
        pairs_verified=verified.n_verified,
        pairs_rejected=verified.n_rejected,
        similarity_bands={f"{b / BANDS:.1f}-{(b + 1) / BANDS:.1f}": BandCounts(verified=by_band.get(b, (0, 0))[0],
                                                                             rejected=by_band.get(b, (0, 0))[1])
                          for b in range(BANDS)} if verify is not None else None,
        verification=Verification(**verify.describe()) if verify is not None else None,
        forest_edges=verified.forest_edges,
        pairs_accepted_by_distance={str(d): cands.accepted_by_distance.get(d, 0) for d in range(specs.k + 1)},
        component_rounds=comps.rounds,
        chance_pairs_uniform=cands.chance,
        signature_bands=SignatureBandStats(
            **specs.bands.describe(), key_groups=cands.band_key_groups, pairs_compared=cands.band_compared,
            pairs_accepted=verified.band_accepted, pairs_verified=verified.band_verified,
            rows=n_search * specs.bands.bands,
            expected_chance_comparisons=specs.bands.expected_chance_comparisons(n_search)) if specs.use_bands else None,
        sentence_keys=sentence_key_stats(specs, sentences) if sentences is not None else None)
    with_history = ctx.history is not None
    return NearDuplicateStats(
        distinct_fingerprints=collapsed.n_distinct,
        candidates=candidates,
        table_plan=TablePlanStats(**blocks.plan.describe(), **plan_cost(n_search, blocks.plan)),
        max_distance_to_kept={str(d): resolved.max_distance_to_kept[d] for d in sorted(resolved.max_distance_to_kept)},
        exact_duplicates=resolved.exact_duplicates,
        history_rows=collapsed.n_history if with_history else None,
        history_fingerprints_compared=blocks.history.n_related if with_history else None,
        short_found_by_main_search=verified.short_found_by_main_search,
        sentence_found_by_other_sources=verified.sentence_found_by_other_sources,
        containment_check=ContainmentTextCheck(
            **dataclasses.asdict(resolved.containment_check), **dataclasses.asdict(resolved.joined_on_texts))
        if resolved.containment_check is not None else None)


def sentence_key_stats(specs: SearchSpecs, sentences: SentencePairs) -> SentenceKeyStats:
    """The sentence-key search's part of report.json."""
    groups = sentences.groups
    return SentenceKeyStats(
        keys_per_page=specs.sentences.n, min_chars=specs.sentences.min_chars, max_group=specs.sentences.max_group,
        keys=groups.keys, key_groups=groups.groups, skipped_keys=groups.skipped_keys,
        skipped_rows=groups.skipped_fingerprints, pairs_compared=sentences.compared,
        pairs_verified_by_similarity=sentences.verified_by_similarity,
        pairs_verified_by_containment=sentences.verified_by_containment, pairs_rejected=sentences.rejected,
        examples={kind: VerifiedExample(**example) for kind, example in sorted(sentences.examples.items())})
