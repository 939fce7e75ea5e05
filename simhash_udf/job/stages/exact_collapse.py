"""Stage 3, exact collapse: identical fingerprints become one node of the pair search, and pages with the
same fingerprint, signature and short text one unit (they verify alike)."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...spark.history_search import history_rows
from ...spark.verified import PROSE_COLUMNS, fingerprint_signatures, units_of, with_units
from .context import StageContext


@dataclass
class Collapsed:
    pages: DataFrame  # id, fingerprint, rank, signature, short_text, n_features, sentence_keys, text_chars,
    # prose_letters, prose_lead, prose_tail, unit
    units: DataFrame  # one row per unit (spark.verified.units_of)
    fingerprints: DataFrame  # (fingerprint, signature): one row per fingerprint, its best unit's signature (null
    # when nothing compares signatures); cached
    n_distinct: int  # distinct fingerprints of this run
    n_history: int  # the history's rows with a fingerprint (0 without one): a bound on its distinct fingerprints

    @property
    def n_search(self) -> int:
        """Fingerprints in the pair search (at most)."""
        return self.n_distinct + self.n_history


def exact_collapse_stage(docs: DataFrame, ctx: StageContext) -> Collapsed:
    """Stage 3 on (id, fingerprint, rank, signature, short_text, n_features, sentence_keys) rows: the units and
    the distinct fingerprints, counted. In a large run (ctx.large) only the pages of repeated fingerprints are
    shuffled to find the units; the others are units of their own where they lie."""
    with ctx.timer("exact_collapse") as counts:
        # units: pages with the same fingerprint, signature and short text, which verify alike. Only the
        # columns the later stages read are shuffled and cached, or in a large run read again (the bad-row
        # flags were counted already, and carrying them would make this persist larger)
        docs = docs.select("id", "fingerprint", "rank", "signature", "short_text", "n_features", "sentence_keys",
                           "text_chars", *PROSE_COLUMNS)
        pages, repeated = with_units(docs, ctx.persist, ctx.checkpoint, split=ctx.large)
        if repeated is not None:
            counts["repeated_fingerprints"] = repeated
        units = units_of(pages)
        # a narrow cache of its own: the band rows read from the wide cache of the pages took ~4x longer (2M
        # fingerprints: the map side of the band search 43 s -> 9 s, same session)
        fingerprints = fingerprint_signatures(pages)
        if ctx.specs.verify is None:
            # nothing compares signatures (no verification, so no band search either): the cache holds the
            # fingerprints alone, and a large run's pages are read again without theirs
            fingerprints = fingerprints.select("fingerprint", F.lit(None).cast("binary").alias("signature"))
        fingerprints = ctx.persist(fingerprints)
        n_distinct = counts["distinct_fingerprints"] = fingerprints.count()
        # the history's rows with a fingerprint (a bound on its distinct fingerprints, for the planner): a
        # count reads one column, a distinct count would shuffle the whole history (~11 s of 30 million rows)
        n_history = history_rows(ctx.history.rows).count() if ctx.history is not None else 0
        if ctx.history is not None:
            counts["history_rows"] = n_history
    return Collapsed(pages, units, fingerprints, n_distinct, n_history)
