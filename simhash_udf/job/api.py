"""The near-duplicate step for PySpark users: a DataFrame in (id and text, or id and fingerprint [and
signature]), clusters and kept rows out, with the job's report as a dict. The same stages as the job
(stages.run_stages) with the same defaults (DedupConfig); nothing is read from or written to files.

It never stops or reconfigures the caller's session: the settings it needs are set for its own actions and
put back (scoped_settings), and component rounds are checkpointed locally (localCheckpoint: in the
executors' block managers, no checkpoint directory). The returned DataFrames are persisted; call
`result.unpersist()` when done with them."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..core.related import DEFAULT_RELATED_DISTANCE
from ..errors import DedupError
from ..io.read import check_ids
from ..spark.session import scoped_settings
from ..spark.workers import check_worker_python
from .config import DedupConfig, apply_settings
from .pipeline import CLUSTERS_COLUMNS, RELATED_COLUMNS, api_shuffle_partitions, check_input_columns, job_settings
from .report import dedup_report
from .stages import StageTimer, persisting, run_stages


@dataclass
class NearDuplicates:
    clusters: DataFrame  # id, fingerprint, signature, cluster_id, is_duplicate, similarity: one row per input row
    kept: DataFrame  # the input rows that are kept (one per cluster), all their columns
    report: dict  # counts, bad rows, pair statistics, seconds per stage (as in the job's report.json)
    related: DataFrame | None = None  # with related=N: id, related_id, distance, rank, similarity
    persisted: list[DataFrame] = field(default_factory=list, repr=False)
    checkpoints: list[DataFrame] = field(default_factory=list, repr=False)  # the component rounds' (local)

    def unpersist(self) -> None:
        """Free the cached results and the component rounds' local checkpoints (their blocks stayed until
        Spark's cleaner collected them); the results cannot be used afterwards."""
        for df in self.persisted:
            df.unpersist()
        for df in self.checkpoints:
            df._jdf.queryExecution().logical().rdd().unpersist(False)  # a LogicalRDD over the checkpointed blocks
        self.persisted.clear()
        self.checkpoints.clear()

    def local_checkpoint(self, df: DataFrame) -> DataFrame:
        """A component round's checkpoint: in the executors' block managers (no checkpoint directory)."""
        self.checkpoints.append(df.localCheckpoint(eager=True))
        return self.checkpoints[-1]


def near_duplicates(df: DataFrame, *, id_col: str | None = None, text_col: str | None = None,
                    fingerprint_col: str | None = None, config: DedupConfig | None = None,
                    **options) -> NearDuplicates:
    """Cluster the rows of df and keep one per cluster, as the job does.

    df: id_col and text_col (string or binary), or id_col and fingerprint_col (bigint, e.g. from
    SimHashFingerprint or an earlier run's clusters/) plus a `signature` column unless min_similarity=0.
    id_col and text_col default to the config's (DedupConfig: "id", "text").
    options: any DedupConfig field (k=3, min_similarity=0.8, cluster_mode="verified", keep="id", ...), type-checked
    as the job's settings are. An empty df gives empty results (allow_empty is the job's).
    """
    cfg = dataclasses.replace(config or DedupConfig())
    apply_settings(cfg, options, "near_duplicates")  # unknown names and wrong types (k="3", k=True) refused by name
    id_col = id_col or cfg.id_col
    text_col = text_col if text_col is not None else cfg.text_col
    cfg.id_col, cfg.text_col = id_col, text_col or ""
    cfg.input_format = "fingerprints" if fingerprint_col else "auto"
    cfg.check_options()
    if cfg.history:
        raise DedupError("near_duplicates: history is a job feature (files by run date); use the job for it")
    check_worker_python(df.sparkSession.sparkContext, "near_duplicates")
    needed = [id_col, fingerprint_col or text_col]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise DedupError(f"near_duplicates: columns {missing} are not in the DataFrame {df.columns}")
    if fingerprint_col and cfg.verify is not None and "signature" not in df.columns:
        raise DedupError("near_duplicates: verification needs a `signature` column next to the fingerprints "
                         "(SimHashFingerprint(signatureCol='signature')), or pass min_similarity=0")
    raw = df
    if fingerprint_col and fingerprint_col != "fingerprint":  # another `fingerprint` column would be ambiguous
        raw = df.drop("fingerprint").withColumnRenamed(fingerprint_col, "fingerprint")
    check_input_columns(raw, cfg)  # the job's: the keep column, the id's and the text's types
    spark = df.sparkSession
    with scoped_settings(spark, {"spark.sql.shuffle.partitions": str(id_check_partitions(raw, cfg))}):
        check_ids(raw, id_col)
    result = NearDuplicates(None, None, {})
    timer = StageTimer()

    def size_shuffles(rows: int) -> None:  # inside scoped_settings: the caller's value is put back after
        if not cfg.shuffle_partitions:
            partitions = api_shuffle_partitions(rows, spark.sparkContext.defaultParallelism)
            spark.conf.set("spark.sql.shuffle.partitions", str(partitions))

    with scoped_settings(spark, job_settings(cfg, spark)):
        stages = run_stages(raw, cfg, timer=timer, persist=persisting(result.persisted),
                            checkpoint=result.local_checkpoint, input_rows=size_shuffles)
        found = stages.clustered
        kept_rows = sum(found.histogram.values())
        report = dedup_report(cfg, stages.fingerprinted, stages.short_text, found, kept_rows, stages.related)
        report.seconds = timer.seconds
        report.shuffle_partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))  # still the run's here
        result.report = report.api_dict()
    result.clusters = found.clusters.select(*CLUSTERS_COLUMNS)
    if stages.related is not None:
        result.related = stages.related.pairs.select(*RELATED_COLUMNS)
    kept_ids = found.clusters.where(~F.col("is_duplicate")).select(F.col("id").alias("_kept_id"))
    result.kept = df.join(kept_ids, df[id_col] == kept_ids["_kept_id"], "left_semi")
    return result


def id_check_partitions(df: DataFrame, cfg: DedupConfig) -> int:
    """The id check's shuffle partitions: the rows are not counted yet (size_shuffles comes later), so the input's
    own partitions (at least one a core), never more than the session's; the given shuffle_partitions when set.
    With adaptive execution off, the session's 200 (Spark's default) were 200 tasks for a 32-row call."""
    if cfg.shuffle_partitions:
        return cfg.shuffle_partitions
    spark = df.sparkSession
    session = int(spark.conf.get("spark.sql.shuffle.partitions"))
    return max(1, min(session, max(df.rdd.getNumPartitions(), spark.sparkContext.defaultParallelism)))


def related_pages(df: DataFrame, *, n: int = 10, distance: int = DEFAULT_RELATED_DISTANCE, **kwargs) -> NearDuplicates:
    """The near-duplicate step plus, for every kept row, the n nearest other kept rows within `distance` bits
    of its fingerprint, nearest first (ties by id), none of its own cluster: `result.related` (id, related_id,
    distance, rank, similarity: the two pages' estimated Jaccard index, null without signatures). kwargs: as
    near_duplicates' (id_col, text_col, fingerprint_col, config and DedupConfig fields)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise DedupError(f"related_pages: n must be a whole number of pages, at least 1 (got {n!r})")
    return near_duplicates(df, related=n, related_distance=distance, **kwargs)
