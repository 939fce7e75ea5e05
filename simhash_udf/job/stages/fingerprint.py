"""Stage 2, fingerprint: each page's text prepared (valid UTF-8, capped), its fingerprint and signature taken
in one Arrow pass, and the bad rows counted (or the stored fingerprints of an --input-format fingerprints
input taken as they are)."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...core.fingerprint import FeatureSpec
from ...core.sentence_keys import PROSE_MIN_LETTERS, SentenceKeySpec
from ...errors import DedupError
from ...spark.clusters import keep_rank
from ...spark.fingerprint import prepared_text, with_corpus_idf, with_fingerprints
from ..config import DedupConfig
from .context import Persist, StageTimer

# The column of prepare_documents that counts texts with invalid UTF-8 (or a U+FFFD a reader left), completed by
# the fingerprint pass: with_fingerprints(..., replacement_flag=REPLACEMENT_FLAG).
REPLACEMENT_FLAG = "invalid_utf8"


@dataclass
class Fingerprinted:
    docs: DataFrame  # id, rank, bad-row flags, fingerprint, n_features[, signature][, short_fingerprint, short_text]
    # [, sentence_keys]
    stats: dict  # the pass's counts: input_rows, the bad-row flags, fingerprinted, short_pages
    spec: FeatureSpec  # with the corpus idf table for weighting tfidf-corpus


def prepare_documents(raw: DataFrame, cfg: DedupConfig) -> DataFrame:
    """(id, text, rank, text_null, invalid_utf8, truncated, truncated_record): text made valid UTF-8 and capped
    (spark.fingerprint.prepared_text). A WET record cut off by the end of its file (wet.py: `truncated_record`)
    gets no text, so no fingerprint: a cluster of its own. invalid_utf8 is complete only after the fingerprint
    pass with replacement_flag=REPLACEMENT_FLAG (a U+FFFD within the cap is found there)."""
    text = prepared_text(raw, cfg.text_col, cfg.max_text_chars)
    cut = F.col("truncated_record") if "truncated_record" in raw.columns else F.lit(False)
    return raw.select(
        F.col(cfg.id_col).alias("id"),
        F.when(~cut, text.text).alias("text"),
        keep_rank(cfg.keep, cfg.id_col, cfg.text_col).alias("rank"),
        text.source.isNull().alias("text_null"),
        # binary text: invalid UTF-8 is replaced here; string text: the reader replaced it already, so the
        # U+FFFD it left is what can be counted. That search runs here only for a text the cap cuts or a cut
        # record's (no text goes on); for the others the fingerprint pass sets this column (REPLACEMENT_FLAG), at
        # ~1/5 of the JVM's CPU for the same search.
        (~F.coalesce(text.is_valid, F.lit(True))
         | F.coalesce((text.long | cut) & text.valid.contains("\ufffd"), F.lit(False))).alias(REPLACEMENT_FLAG),
        F.coalesce(text.long & (F.length(text.valid) > cfg.max_text_chars), F.lit(False)).alias("truncated"),
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


def simulation_mask(bits: int) -> int:
    """A 64-bit mask (as int64) keeping `bits` bits spread evenly over the 64, so every block of every table
    keeps about the same share: two random cut fingerprints are within k as often as two random `bits`-bit
    ones (blocks.chance_pairs with f = bits)."""
    mask = sum(1 << i for i in range(64) if (i + 1) * bits // 64 > i * bits // 64)
    return mask - (1 << 64) if mask >= 1 << 63 else mask


def fingerprint_stage(raw: DataFrame, cfg: DedupConfig, persist: Persist, timer: StageTimer) -> Fingerprinted:
    """Stage 2: the fingerprint and signature of every page (or the stored ones of an --input-format
    fingerprints input), counted with the bad rows in one pass."""
    spec = cfg.features
    with timer("fingerprint") as counts:
        if cfg.input_format == "fingerprints":
            # a projection of the input, not cached: the exact collapse reads it once, and this count reads
            # its fingerprint column alone (caching 10M stored fingerprints with their signatures costs more than it saves)
            docs = stored_fingerprints(raw, cfg)
        else:
            prepared = prepare_documents(raw, cfg)
            if cfg.weighting == "tfidf-corpus":  # one extra pass over the texts for the idf table
                spec = with_corpus_idf(prepared, "text", spec)
            docs = persist(with_fingerprints(prepared, "text", *pass_specs(cfg, spec)))
        if cfg.simulate_fingerprint_bits:  # a projection of the above
            docs = docs.withColumn("fingerprint", F.col("fingerprint").bitwiseAND(
                F.lit(simulation_mask(cfg.simulate_fingerprint_bits))))
        stats = fingerprint_counts(docs, cfg)
        counts.update(rows=stats["input_rows"], fingerprinted=stats["fingerprinted"])
    return Fingerprinted(docs, stats, spec)


def pass_specs(cfg: DedupConfig, spec: FeatureSpec) -> tuple:
    """with_fingerprints' arguments after the text column: spec, the short-text, signature, flag, sentence-key and
    prose specifications of the run."""
    short = None if cfg.short_text_off_because() else cfg.short_text
    # the sentence keys, and the pages' characters for containment's size bound (no keys: n = 0)
    sentences = cfg.sentences or (SentenceKeySpec(0) if cfg.verify is not None and cfg.verify.containment else None)
    # with containment, also the pages' prose (letters, lead, tail): resolve tells a site frame by it
    prose_min = PROSE_MIN_LETTERS if cfg.verify is not None and cfg.verify.containment else 0
    return spec, short, cfg.signature, REPLACEMENT_FLAG, sentences, prose_min


def fingerprint_counts(docs: DataFrame, cfg: DedupConfig) -> dict[str, int]:
    """The fingerprint stage's counts in one pass: input rows, each kind of bad row, fingerprinted pages and
    short pages. Stored fingerprints without a signature stop the run when pairs are verified."""
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
    return stats
