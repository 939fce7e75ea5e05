"""The whole job: read -> fingerprint -> exact collapse -> blocks -> candidates -> components -> resolve
-> write. Each stage is materialised once (persist + count) so its seconds can be reported and nothing
expensive, least of all the Python UDF, runs twice."""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .. import __version__
from ..core.blocks import chance_pairs, choose_plan, plan_cost, plan_tables
from ..core.verified import BANDS, VerifySpec
from ..errors import DedupError
from ..io.history import History, attach_history, related_block_rows
from ..io.read import EmptyInput, check_columns, check_file_systems, check_ids, input_error, load_input
from ..io.write import OutputDir
from ..spark.blocks import block_rows, group_batches
from ..spark.candidates import group_members
from ..spark.components import connected_components
from ..spark.fingerprint import with_corpus_idf, with_fingerprints
from ..spark.short_text import short_text_edges
from ..spark.star import keep_rank, max_distance_to_kept, resolve_clusters, star_clusters
from ..spark.verified import fingerprint_signatures, units_of, verified_clusters, verified_edges, with_units
from . import termination
from .config import DedupConfig
from .report_html import collect_page_data, render_html
from .report_plots import write_plots

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
            f"chain through them: verify pairs (--min-similarity 0.7, the default) or use a smaller --k")


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


def prepare_documents(raw: DataFrame, cfg: DedupConfig) -> DataFrame:
    """(id, text, rank, text_null, invalid_utf8, truncated, truncated_record): text made valid UTF-8 and capped.
    A WET record cut off by the end of its file (wet.py: `truncated_record`) gets no text, so no fingerprint:
    a cluster of its own."""
    text = F.col(cfg.text_col)
    if dict(raw.dtypes)[cfg.text_col] == "binary":
        text = text.cast("string")
    valid = F.make_valid_utf8(text)
    cut = F.col("truncated_record") if "truncated_record" in raw.columns else F.lit(False)
    return raw.select(
        F.col(cfg.id_col).alias("id"),
        F.when(~cut, F.substring(valid, 1, cfg.max_text_chars)).alias("text"),
        keep_rank(cfg.keep, cfg.id_col, cfg.text_col).alias("rank"),
        text.isNull().alias("text_null"),
        # binary text: invalid UTF-8 is replaced here; string text: the reader replaced it already, so the
        # U+FFFD it left is what can be counted
        (~F.coalesce(F.is_valid_utf8(text), F.lit(True)) | F.coalesce(valid.contains("\ufffd"), F.lit(False))).alias(
            "invalid_utf8"
        ),
        (F.coalesce(F.length(valid), F.lit(0)) > cfg.max_text_chars).alias("truncated"),
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


def near_duplicate_clusters(
    docs: DataFrame, k: int, blocks: int, max_rounds: int, timer: StageTimer, keep, history: DataFrame | None = None,
    run_date: str = "", cluster_mode: str = "verified", short_edges: DataFrame | None = None,
    verify: VerifySpec | None = None,
):
    """Stages 3-7 on (id, fingerprint, rank[, signature][, short_text]) rows: exact collapse, blocks,
    candidates, verification, components, resolve. blocks = 0 lets the planner choose the tables from the
    number of distinct fingerprints; verify = None (or no signature column) makes every candidate pair an edge.

    Returns the clusters (id, fingerprint, cluster_id, is_duplicate), the cluster-size histogram
    {size: clusters} and the pair statistics. `keep` persists a DataFrame and registers it for clean-up;
    component rounds are checkpointed into the SparkContext's checkpoint directory.

    history: (fingerprint, h_cluster, h_kept_date, signature, kept_signature) of earlier runs (history.py); its
    fingerprints that share a key with this run's join the pair search, and pages that meet them become
    duplicates of their clusters (in verified mode only if verified-similar to the cluster's kept page; the
    clusters then also carry kept_run_date, and the histogram counts this run's pages only)."""
    if "signature" not in docs.columns:
        docs, verify = docs.withColumn("signature", F.lit(None).cast("binary")), None
    if "short_text" not in docs.columns:
        docs = docs.withColumn("short_text", F.lit(None).cast("string"))
    with timer("exact_collapse") as counts:
        # units: pages with the same fingerprint, signature and short text, which verify alike
        docs = keep(with_units(docs))
        units = keep(units_of(docs))
        fp_sigs = keep(fingerprint_signatures(units))
        n_distinct = counts["distinct_fingerprints"] = fp_sigs.count()
        n_history = history.count() if history is not None else 0
        if history is not None:
            counts["history_fingerprints"] = n_history

    n_search = n_distinct + n_history  # fingerprints in the pair search
    plan = plan_tables(k, blocks) if blocks else choose_plan(n_search, k)
    with timer("blocks") as counts:
        rows = block_rows(fp_sigs, plan)
        search_sigs = fp_sigs
        if history is not None:
            related_rows = keep(related_block_rows(history, rows, plan))
            related = keep(history.join(related_rows.select("fingerprint").distinct(), "fingerprint", "left_semi"))
            n_related = related.count()
            rows = rows.union(related_rows)
            search_sigs = fp_sigs.unionByName(
                related.select("fingerprint", "signature").join(fp_sigs, "fingerprint", "left_anti"))
        counts["tables"] = len(plan.tables)

    with timer("candidates") as counts:  # the shuffle and sort that form the key groups happen here
        members = keep(group_members(rows, plan))
        with group_batches(docs.sparkSession):
            pair_stats = members.agg(
                F.sum("compared").alias("pairs_compared"),
                F.sum("accepted").alias("pairs_accepted"),
                F.sum("groups").alias("key_groups"),
            ).first()
        n_groups = counts["key_groups"] = int(pair_stats["key_groups"] or 0)
        by_distance = {
            int(r["distance"]): int(r["pairs"])
            for r in members.where(F.col("distance").isNotNull()).groupBy("distance")
            .agg(F.sum("accepted").alias("pairs")).collect()
        }
        counts.update(compared=int(pair_stats["pairs_compared"] or 0), accepted=int(pair_stats["pairs_accepted"] or 0))
        chance = float(f"{chance_pairs(n_search, k):.4g}")
        warning = chance_warning(chance, counts["accepted"], k, n_search) if verify is None else None
        if warning:
            log.warning(warning)

    with timer("verify") as counts:
        edge_rows = keep(verified_edges(members.where(F.col("fingerprint").isNotNull()), search_sigs, plan, verify))
        bands = {int(r["band"]): (int(r["v"]), int(r["r"])) for r in edge_rows.where(F.col("band").isNotNull())
                 .groupBy("band").agg(F.sum("verified").alias("v"), F.sum("rejected").alias("r")).collect()}
        n_verified, n_rejected = sum(v for v, _ in bands.values()), sum(r for _, r in bands.values())
        counts.update(verified=n_verified, rejected=n_rejected)
        edges = edge_rows.where(F.col("src").isNotNull()).select("src", "dst")
        n_edges = counts["forest_edges"] = edges.count()
        if short_edges is not None:
            edges = edges.unionByName(short_edges)

    with timer("components") as counts:
        roots, rounds = connected_components(edges, lambda df: df.checkpoint(eager=True), max_rounds)
        counts["rounds"] = rounds

    with timer("resolve") as counts:
        page_cols = docs.select("id", "fingerprint", "rank", "signature", "short_text", "unit")
        if cluster_mode == "verified":
            fixed = None
            if history is not None:
                fixed = related.where(F.col("kept_signature").isNotNull() | F.lit(verify is None)).select(
                    "fingerprint", "h_cluster", "h_kept_date", F.col("kept_signature").alias("signature"))
            assigned = verified_clusters(units, roots, verify, fixed, keep)
            clusters = resolve_verified(page_cols, assigned, run_date if history is not None else None)
        elif cluster_mode == "star":
            clusters = star_clusters(page_cols.select("id", "fingerprint", "rank"), roots, k)
        else:
            clusters = resolve_clusters(page_cols.select("id", "fingerprint", "rank"), roots)
        if history is not None and cluster_mode != "verified":
            clusters = attach_history(clusters, roots, related, run_date)
        if cluster_mode != "verified":  # the signature goes into clusters/ with its page
            clusters = clusters.join(page_cols.select("id", "signature"), "id")
        clusters = keep(clusters)
        sizes = clusters.groupBy("cluster_id").count()
        histogram = {
            int(r["count"]): int(r["clusters"])
            for r in sizes.groupBy("count").agg(F.count(F.lit(1)).alias("clusters")).collect()
        }
        counts.update(clusters=sum(histogram.values()), with_duplicates=sum(c for s, c in histogram.items() if s > 1))
        chaining = max_distance_to_kept(clusters)
    stats = {
        "distinct_fingerprints": n_distinct,
        "key_groups": n_groups,
        "pairs_compared": int(pair_stats["pairs_compared"] or 0),
        "pairs_accepted": int(pair_stats["pairs_accepted"] or 0),
        "pairs_verified": n_verified,
        "pairs_rejected": n_rejected,
        "similarity_bands": {f"{b / BANDS:.1f}-{(b + 1) / BANDS:.1f}": {"verified": bands.get(b, (0, 0))[0],
                                                                       "rejected": bands.get(b, (0, 0))[1]}
                             for b in range(BANDS)} if verify is not None else None,
        "verification": verify.describe() if verify is not None else None,
        "forest_edges": n_edges,
        "pairs_accepted_by_distance": {str(d): by_distance.get(d, 0) for d in range(k + 1)},
        "component_rounds": rounds,
        "chance_pairs_uniform": chance,
        "table_plan": {**plan.describe(), **plan_cost(n_search, plan)},
        "max_distance_to_kept": {str(d): chaining[d] for d in sorted(chaining)},
    }
    if history is not None:
        stats["history_fingerprints"] = n_history
        stats["history_fingerprints_compared"] = n_related
    return clusters, histogram, stats


def resolve_verified(pages: DataFrame, assigned: DataFrame, run_date: str | None) -> DataFrame:
    """Each page's cluster from its unit's centre (verified_pairs.verified_clusters): the best page of the
    centre unit, or an earlier run's cluster; pages without a fingerprint are clusters of their own. With a
    run date (--history) also kept_run_date. Keeps the page's signature (for clusters/ and the history)."""
    # joined on the fingerprint alone, then the unit: pages are partitioned by fingerprint (with_units), so
    # only the per-unit assignments move, not the pages and their signatures
    with_fp = pages.where(F.col("fingerprint").isNotNull()).join(assigned, "fingerprint").where(
        F.col("unit.id") == F.col("unit_id"))
    without = pages.where(F.col("fingerprint").isNull()).select(
        *pages.columns, *[F.lit(None).cast(t).alias(c) for c, t in assigned.dtypes if c != "fingerprint"])
    joined = with_fp.unionByName(without)
    id_type = dict(pages.dtypes)["id"]
    earlier = F.col("h_cluster").isNotNull()
    cluster_id = F.when(earlier, F.col("h_cluster").cast(id_type)).otherwise(F.coalesce("kept_id", "id"))
    cols = [F.col("id"), F.col("fingerprint"), cluster_id.alias("cluster_id"),
            (earlier | (F.col("id") != F.coalesce("kept_id", "id"))).alias("is_duplicate"), F.col("signature")]
    if run_date is not None:
        cols.append(F.when(earlier, F.col("h_kept_date")).otherwise(F.lit(run_date)).alias("kept_run_date"))
    return joined.select(*cols)


BAD_ROWS_TREATMENT = (
    "null text or text without features (empty, only white space or punctuation): no fingerprint, kept as a "
    "cluster of its own; invalid UTF-8: replaced by U+FFFD then fingerprinted (counted: texts that hold U+FFFD "
    "once decoded); text longer than max_text_chars: fingerprinted up to that length; truncated_records: WET "
    "records cut off by the end of their file (Content-Length larger than the bytes present, or a cut gzip "
    "member): no fingerprint, kept as a cluster of its own with the bytes present as text")


def write_empty_output(spark: SparkSession, cfg: DedupConfig, out: OutputDir, empty: EmptyInput, timer: StageTimer,
                       started: float) -> dict:
    """--allow-empty and an input of 0 rows: an empty, finished output (clusters/ and kept/ with no rows,
    report.json with zero counts and why, _SUCCESS). The history is neither read nor written: a day without
    pages adds nothing to it."""
    from pyspark.sql.types import BinaryType, BooleanType, LongType, StringType, StructField, StructType

    df = empty.df
    id_type = df.schema[cfg.id_col].dataType if df is not None and cfg.id_col in df.columns else StringType()
    clusters = StructType([StructField("id", id_type), StructField("fingerprint", LongType()),
                           StructField("signature", BinaryType()), StructField("cluster_id", id_type),
                           StructField("is_duplicate", BooleanType())])
    spark.createDataFrame([], clusters).write.parquet(out.staged("clusters"))
    kept_schema = df.schema if df is not None else StructType([StructField(cfg.id_col, id_type),
                                                                StructField(cfg.text_col, StringType())])
    spark.createDataFrame([], kept_schema).write.parquet(out.staged("kept"))
    log.warning("input %s: %s; writing an empty output (--allow-empty)", cfg.input, empty)
    report = {
        "simhash_dedup_version": __version__,
        "fingerprint_version": cfg.fingerprint_version() if cfg.input_format != "fingerprints" else "as stored in the input",
        "input": cfg.input,
        "output": cfg.output,
        "empty_input": str(empty),
        "input_rows": 0, "kept": 0, "duplicates": 0, "exact_duplicates": 0, "near_duplicates": 0,
        "bad_rows": {"null_text": 0, "no_features": 0, "invalid_utf8_replaced": 0, "truncated": 0,
                     "truncated_records": 0, "treatment": BAD_ROWS_TREATMENT},
        "distinct_fingerprints": 0,
        "clusters": {"total": 0, "with_duplicates": 0, "largest": 0, "size_histogram": {},
                     "max_distance_to_kept_histogram": {}},
        "history": {"path": cfg.history, "run_date": cfg.run_date, "written": False} if cfg.history else None,
        "seconds": timer.seconds,
        "config": cfg.to_dict(),
        "spark_version": spark.version,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "total_seconds": round(time.time() - started, 3),
        "plots": [],
    }
    if not cfg.checkpoint_dir:
        out.remove_staged("_checkpoints")
    out.write_report(report)
    out.commit()
    return report


def run(cfg: DedupConfig, spark: SparkSession) -> dict:
    """Run the job for a validated configuration; returns the report (also written to DIR/report.json)."""
    started = time.time()
    timer = StageTimer()
    termination.check()
    check_file_systems(spark, cfg.input, cfg.output, cfg.history)
    out = OutputDir(spark, cfg.output)
    out.refuse_overlap(cfg.input, cfg.history)
    out.check_writable(cfg.overwrite)  # refused before anything is written, the lock included
    persisted: list[DataFrame] = []
    history = History(spark, cfg.history, cfg.run_date) if cfg.history else None
    if history is not None:
        history.check_version(cfg.fingerprint_version())

    def keep(df: DataFrame) -> DataFrame:
        persisted.append(_persist(df))
        return persisted[-1]

    out.acquire(cfg.lock_stale_minutes * 60)  # one run at a time onto DIR; dead runs' leftovers removed
    try:
        out.check_writable(cfg.overwrite)  # again: a run that held the lock may have finished DIR meanwhile
        if history is not None:
            history.remove_stale_staging(cfg.lock_stale_minutes * 60)
        if cfg.shuffle_partitions:
            spark.conf.set("spark.sql.shuffle.partitions", str(cfg.shuffle_partitions))
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(cfg.arrow_batch_size))
        spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", str(cfg.arrow_batch_mb << 20))
        spark.sparkContext.setCheckpointDir(cfg.checkpoint_dir or out.staged("_checkpoints"))
        with timer("read") as counts:
            try:
                loaded = load_input(spark, cfg.input, cfg.input_format, keep)
            except EmptyInput as empty:
                if not cfg.allow_empty:
                    raise DedupError(f"{empty}: check that the input is complete (a missing day, a wrong --input), "
                                     "or pass --allow-empty to write an empty, finished output") from None
                return write_empty_output(spark, cfg, out, empty, timer, started)
            raw = loaded.df
            extra = [cfg.keep.split(":", 1)[1]] if cfg.keep.startswith("earliest:") else []
            if cfg.input_format == "fingerprints":
                check_columns(raw, cfg.id_col, "fingerprint", extra, text_types=("bigint",))
                if cfg.verify is not None and "signature" not in raw.columns:
                    raise DedupError(
                        f"input {cfg.input} has no signature column, which verification needs (clusters/ of this "
                        "version has one): pass --min-similarity 0 to cluster by fingerprint distance alone")
            else:
                check_columns(raw, cfg.id_col, cfg.text_col, extra)
            if history is not None:  # before anything is written
                history.check_id_type(cfg.id_col, raw.schema[cfg.id_col].dataType.simpleString())
            if cfg.input_partitions:
                raw = raw.repartition(cfg.input_partitions)
            check_ids(raw, cfg.id_col)
            counts.update(rows=loaded.rows, files=loaded.files.files, columns=len(raw.columns))

        spec = cfg.features
        short_off = cfg.short_text_off_because()
        with timer("fingerprint") as counts:
            if cfg.input_format == "fingerprints":
                docs = keep(stored_fingerprints(raw, cfg))
            else:
                prepared = prepare_documents(raw, cfg)
                if cfg.weighting == "tfidf-corpus":  # one extra pass over the texts for the idf table
                    spec = with_corpus_idf(prepared, "text", spec)
                docs = keep(with_fingerprints(prepared, "text", spec, None if short_off else cfg.short_text, cfg.signature))
            if cfg.simulate_fingerprint_bits:
                docs = keep(docs.withColumn("fingerprint", F.col("fingerprint").bitwiseAND(
                    F.lit(simulation_mask(cfg.simulate_fingerprint_bits)))))
            doc_stats = docs.agg(
                F.count(F.lit(1)).alias("input_rows"),
                F.sum(F.col("text_null").cast("long")).alias("null_text"),
                F.sum(((F.col("n_features") == 0)).cast("long")).alias("no_features"),
                F.sum(F.col("invalid_utf8").cast("long")).alias("invalid_utf8"),
                F.sum(F.col("truncated").cast("long")).alias("truncated"),
                F.sum(F.col("truncated_record").cast("long")).alias("truncated_records"),
                F.count("fingerprint").alias("fingerprinted"),
            ).first().asDict()
            counts.update(rows=int(doc_stats["input_rows"]), fingerprinted=int(doc_stats["fingerprinted"]))

        earlier, history_report = None, None
        if history is not None:
            earlier, dates_read, dates_ignored = history.earlier()
            earlier = keep(earlier) if earlier is not None else None
            history_report = {"path": history.path, "run_date": history.run_date, "runs_read": len(dates_read),
                              "first_run": dates_read[0] if dates_read else None,
                              "later_or_same_runs_ignored": dates_ignored, "duplicates_of_earlier_runs": 0,
                              "history_fingerprints": 0, "history_fingerprints_compared": 0}
            if dates_ignored:
                log.warning("history %s has runs on or after %s (%s): they are not read, and the later ones did not see "
                            "this run's pages", history.path, history.run_date, ", ".join(dates_ignored))
        short_edges, short_report = None, {"enabled": False, "off_because": short_off}
        if not short_off:
            with timer("short_text") as counts:
                short_edges, short_stats = short_text_edges(docs, cfg.short_text, keep)
                short_edges = keep(short_edges)
                counts.update(candidates=short_stats["candidate_pairs"], verified=short_stats["verified_pairs"])
                short_report = {"enabled": True, **short_stats}
        clusters, histogram, near = near_duplicate_clusters(
            docs, cfg.k, cfg.blocks, cfg.max_component_rounds, timer, keep, earlier, history.run_date if history else "",
            cfg.cluster_mode, short_edges, cfg.verify,
        )
        if earlier is None:
            kept_rows = sum(histogram.values())  # one kept document per cluster
        else:
            counts = clusters.agg(
                F.sum((~F.col("is_duplicate")).cast("long")).alias("kept"),
                F.sum((F.col("kept_run_date") != history.run_date).cast("long")).alias("of_history"),
            ).first()
            kept_rows = int(counts["kept"] or 0)
            history_report["duplicates_of_earlier_runs"] = int(counts["of_history"] or 0)
            history_report["history_fingerprints"] = near.pop("history_fingerprints")
            history_report["history_fingerprints_compared"] = near.pop("history_fingerprints_compared")

        with timer("write") as counts:
            clusters.select("id", "fingerprint", "signature", "cluster_id", "is_duplicate").write.parquet(out.staged("clusters"))
            if history is not None:
                rows = clusters if earlier is not None else clusters.withColumn("kept_run_date", F.lit(history.run_date))
                history.stage(rows.select("id", "fingerprint", "signature", "cluster_id", "is_duplicate", "kept_run_date"),
                              cfg.fingerprint_version())
            kept_ids = clusters.where(~F.col("is_duplicate")).select(F.col("id").alias("_kept_id"))
            kept_docs = raw.join(kept_ids, raw[cfg.id_col] == kept_ids["_kept_id"], "left_semi")
            kept_docs.write.parquet(out.staged("kept"))
            counts.update(clusters_rows=int(doc_stats["input_rows"]), kept=kept_rows)

        with timer("report") as counts:  # report.html's aggregates: histograms and a few example pairs
            kept_written = spark.read.schema(raw.schema).parquet(out.staged("kept"))  # no footer-reading job
            page = collect_page_data(clusters, raw, kept_written, cfg, int(doc_stats["input_rows"]) - kept_rows)
            counts["example_pairs"] = len(page.examples)

        input_rows = int(doc_stats["input_rows"])
        duplicates = input_rows - kept_rows
        exact = int(doc_stats["fingerprinted"]) - near["distinct_fingerprints"]
        report = {
            "simhash_dedup_version": __version__,
            "fingerprint_version": "as stored in the input"
            if cfg.input_format == "fingerprints"
            else f"{spec.version()}+{cfg.signature.version()}",
            "input": cfg.input,
            "output": cfg.output,
            "input_files": {"format": loaded.fmt, **loaded.files.describe()},
            "input_rows": input_rows,
            "kept": kept_rows,
            "duplicates": duplicates,
            "exact_duplicates": exact,
            "near_duplicates": duplicates - exact,
            "bad_rows": {
                "null_text": int(doc_stats["null_text"] or 0),
                "no_features": int(doc_stats["no_features"] or 0),
                "invalid_utf8_replaced": int(doc_stats["invalid_utf8"] or 0),
                "truncated": int(doc_stats["truncated"] or 0),
                "truncated_records": int(doc_stats["truncated_records"] or 0),
                "treatment": BAD_ROWS_TREATMENT,
            },
            "distinct_fingerprints": near["distinct_fingerprints"],
            "clusters": {
                "total": sum(histogram.values()),
                "with_duplicates": sum(c for s, c in histogram.items() if s > 1),
                "largest": max(histogram) if histogram else 0,
                "size_histogram": {str(s): histogram[s] for s in sorted(histogram)},
                # clusters by the largest Hamming distance of a member to its kept page (> k: joined by a chain)
                "max_distance_to_kept_histogram": near.pop("max_distance_to_kept"),
            },
            "candidates": {k: v for k, v in near.items() if k not in ("distinct_fingerprints", "table_plan")},
            "table_plan": near["table_plan"],
            "short_text": short_report,
            "history": history_report,
            "seconds": timer.seconds,
            "config": cfg.to_dict(),
            "spark_version": spark.version,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "total_seconds": round(time.time() - started, 3),
        }
        if not cfg.checkpoint_dir:
            out.remove_staged("_checkpoints")
        report.update(page.summary)
        report["plots"] = write_plots(report, out)
        report["report_html"] = "report.html"
        out.write_text(out.staged("report.html"), render_html(report, page.examples))
        out.write_report(report)
        termination.check()  # a SIGTERM from here on lets the commit finish
        out.check_still_owner()  # before the history too
        if history is not None:
            history.publish()  # before _SUCCESS: a run killed in between is re-run, and reads the same history
        out.commit()
        return report
    except BaseException as exc:
        settle_spark_jobs(spark)
        out.abort()
        if history is not None:
            history.abort()
        clear = input_error(exc)
        if clear is not None:
            raise clear from None
        raise
    finally:
        for df in persisted:
            df.unpersist()
        out.release()


def settle_spark_jobs(spark: SparkSession, timeout: float = 30.0) -> None:
    """After a failure: cancel the run's Spark jobs and wait (up to `timeout` seconds) until no task runs, so
    that no task of a cancelled job writes into the staging directory after it has been removed."""
    try:
        sc = spark.sparkContext
        sc.cancelAllJobs()
        tracker = sc.statusTracker()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = sum(e.numRunningTasks() for e in sc._jsc.sc().statusTracker().getExecutorInfos())
            if not tracker.getActiveJobsIds() and not running:
                return
            time.sleep(0.2)
        log.warning("Spark tasks still running %.0f s after the run was cancelled", timeout)
    except Exception as exc:  # a stopped context has nothing running
        log.debug("settling Spark jobs: %s", exc)
