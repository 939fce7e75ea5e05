"""What every stage is given: the search settings derived once from DedupConfig (SearchSpecs), how the run
persists, checkpoints and times its work, and the view of the history's rows (StageContext)."""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from ...core.bands import SignatureBands
from ...core.sentence_keys import SentenceKeySpec
from ...core.verified import VerifySpec
from ...spark.components import DRIVER_EDGES
from .. import termination
from ..config import DedupConfig

log = logging.getLogger("simhash_dedup")

Persist = Callable[[DataFrame], DataFrame]  # persists a DataFrame and registers it for clean-up


def persisting(into: list[DataFrame]) -> Persist:
    """The stages' `persist`: caches a DataFrame (in memory, spilling to disk) and appends it to `into`, whose
    frames the caller unpersists when the run ends (the job's clean-up, the API's NearDuplicates.unpersist)."""
    def persist(df: DataFrame) -> DataFrame:
        into.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return into[-1]
    return persist


def reliable_checkpoint(df: DataFrame) -> DataFrame:
    """The job's checkpoint of a component round: files in the SparkContext's checkpoint directory (the
    run's staging directory), so a lost executor costs a re-read, not a recomputation of every round."""
    return df.checkpoint(eager=True)


class StageTimer:
    """Seconds per stage for the report, and one progress line per stage in the log (INFO): when it ends, with its
    seconds and the counts the stage put into the dict it yields. Its start is logged at DEBUG."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.counts: dict[str, dict] = {}

    @contextmanager
    def __call__(self, name: str):
        termination.check()  # SIGTERM: stop between stages too (running Spark jobs are cancelled at once)
        log.debug("stage %s: started", name)
        start = time.perf_counter()
        counts: dict = {}
        yield counts
        self.seconds[name] = round(time.perf_counter() - start, 3)
        self.counts[name] = counts
        shown = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in counts.items())
        log.info("stage %s: done in %.1f s%s", name, self.seconds[name], f" ({shown})" if shown else "")


@dataclass(frozen=True)
class SearchSpecs:
    """The settings of the near-duplicate stages (3-7), taken from a DedupConfig once (`of`).

    k: the Hamming distance of candidate pairs; blocks: fingerprint blocks (0: the planner chooses the tables
    from the number of distinct fingerprints); verify: how pairs are verified (None: every candidate pair is
    an edge); bands: the signature-band search beside the tables (used only when pairs are verified);
    cluster_mode: verified, transitive or star; max_rounds: component rounds before the job gives up;
    sentences: the longest-sentence key search (used only when pairs are verified), None when off;
    driver_edges: edges up to which the components are found on the driver (0: always the Spark rounds)."""

    k: int
    blocks: int = 0
    verify: VerifySpec | None = None
    bands: SignatureBands | None = None
    cluster_mode: str = "verified"
    max_rounds: int = 200
    sentences: SentenceKeySpec | None = None
    driver_edges: int = DRIVER_EDGES

    @classmethod
    def of(cls, cfg: DedupConfig) -> "SearchSpecs":
        return cls(cfg.k, cfg.blocks, cfg.verify, cfg.bands, cfg.cluster_mode, cfg.max_component_rounds, cfg.sentences,
                   cfg.driver_component_edges)

    @property
    def use_sentences(self) -> bool:
        """Whether the longest-sentence key search runs: keys on, and pairs verified."""
        return self.sentences is not None and self.sentences.enabled and self.verify is not None

    @property
    def use_bands(self) -> bool:
        """Whether the signature-band search runs: bands on, and pairs verified."""
        return self.bands is not None and self.bands.bands > 0 and self.verify is not None


@dataclass(frozen=True)
class HistoryView:
    """The earlier runs' rows a run searches (--history; io.history.History.earlier).

    rows: id, fingerprint, signature, cluster_id, is_duplicate, kept_run_date; or the same per fingerprint
    (fingerprint, h_cluster, h_kept_date, signature, kept_signature: spark.history_search.per_fingerprint).
    band_rows: their (fingerprint, keys) band-key arrays when read from the history's band index
    (History.band_rows); None: computed from their signatures. run_date: this run's date in the history."""

    rows: DataFrame
    band_rows: DataFrame | None
    run_date: str


@dataclass(frozen=True)
class StageContext:
    """What each near-duplicate stage is given besides the results of the stages before it.

    persist: caches a DataFrame and registers it for clean-up; checkpoint: cuts the lineage of each component
    round (the job: reliable_checkpoint; the API: a local checkpoint); history: the earlier runs' rows, None
    without --history or before its first run; large: the run has LARGE_RUN_PAGES pages or more (stages.run),
    so the exact collapse, verify and resolve make the passes of a large run; texts: (id, text) of the run's
    pages as they were fingerprinted, for resolve's check of pages joined by containment (None: no texts, as
    with stored fingerprints, or containment off)."""

    specs: SearchSpecs
    timer: StageTimer
    persist: Persist
    checkpoint: Persist = reliable_checkpoint
    history: HistoryView | None = None
    large: bool = False
    texts: DataFrame | None = None
