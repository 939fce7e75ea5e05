"""Stage 2b, short text: pairs of short pages verified by the exact Jaccard index of their shingles, which
become extra edges of the components (stage 6)."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame

from ...spark.short_text import short_text_edges
from ..config import DedupConfig
from ..report_schema import ShortTextStats
from .context import Persist, StageTimer


@dataclass
class ShortText:
    edges: DataFrame | None  # (src, dst) fingerprint pairs verified by shingle Jaccard; None when off
    pairs: DataFrame | None  # (fp_a, fp_b) every candidate pair checked; None when off or without short pages
    report: ShortTextStats  # report.json's short_text part


def short_text_stage(docs: DataFrame, cfg: DedupConfig, persist: Persist, timer: StageTimer,
                     short_pages: int = -1) -> ShortText:
    """Stage 2b: pairs of short pages verified by their shingles' Jaccard index (off: edges None).
    short_pages: the fingerprint stage's count of short pages with a fingerprint (-1: not known)."""
    off = cfg.short_text_off_because()
    if off:
        return ShortText(None, None, ShortTextStats(enabled=False, off_because=off))
    with timer("short_text") as counts:
        edges, pairs, stats = short_text_edges(docs, cfg.short_text, persist, short_pages)
        edges = persist(edges) if edges is not None else None
        counts.update(candidates=stats["candidate_pairs"], verified=stats["verified_pairs"])
    return ShortText(edges, pairs, ShortTextStats(enabled=True, **stats))
