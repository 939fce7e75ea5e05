"""Spark glue of verified clusters (verified.py is the pure part).

Candidates in two passes, so that signatures never ride along with the exploded block rows (one row per
fingerprint and table, 28 at k = 6): the first walk over the key groups finds which members have an accepted
pair in their group (within k, first shared table) and sends on only those, with their group; they get their
fingerprint's signature by a join, are grouped again, and the second walk verifies every accepted pair and
emits a spanning forest of the verified ones. Resolve: per component, units in keep order, greedy centres
(verified.verified_centres); the components without earlier clusters or short texts of one Arrow batch in one
vectorised pass (verified.greedy_centres), the others one Python call each; without verification, the first
unit or earlier cluster of each component, in SQL (first_centres)."""
from __future__ import annotations

from functools import reduce
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StructField, StructType

from ..core.blocks import TablePlan
from ..core.signature import agreeing_bins, agreement_similarity, from_arrow
from ..core.verified import BANDS, VerifySpec, greedy_centres, verified_centres, verify_groups
from .blocks import walk_groups
from .joins import broadcast_if_small, is_small
from .session import unique_key_aggregation

# a unit's prose (sentence_keys.page_prose: a frame told from added prose in resolve), and with its feature count
# and characters (containment and its size bound) its sizes: null where the run has none
PROSE_COLUMNS = ("prose_letters", "prose_lead", "prose_tail")
SIZE_COLUMNS = ("n_features", "text_chars", *PROSE_COLUMNS)
VERIFIED_SCHEMA = StructType([
    StructField("src", LongType(), True), StructField("dst", LongType(), True),
    StructField("band", IntegerType(), True), StructField("verified", LongType(), True),
    StructField("rejected", LongType(), True),
])
_VERIFIED_ARROW = pa.schema([pa.field(f.name, pa.int32() if f.dataType == IntegerType() else pa.int64())
                             for f in VERIFIED_SCHEMA])


def verified_batches(src, dst, verified_by_band, rejected_by_band) -> Iterator[pa.RecordBatch]:
    """A verify walk's output in VERIFIED_SCHEMA: its edges (src, dst; band and counts null), then one
    statistics row per similarity band (band, verified, rejected; src and dst null)."""
    n = len(src)
    yield pa.RecordBatch.from_arrays(
        [pa.array(src, pa.int64()), pa.array(dst, pa.int64()), pa.nulls(n, pa.int32()), pa.nulls(n, pa.int64()),
         pa.nulls(n, pa.int64())], schema=_VERIFIED_ARROW)
    yield pa.RecordBatch.from_arrays(
        [pa.nulls(BANDS, pa.int64()), pa.nulls(BANDS, pa.int64()), pa.array(np.arange(BANDS, dtype=np.int32)),
         pa.array(verified_by_band, pa.int64()), pa.array(rejected_by_band, pa.int64())], schema=_VERIFIED_ARROW)


def distinct_fingerprints(columns: list[DataFrame]) -> DataFrame:
    """(fingerprint): the distinct values of the one-column DataFrames `columns`, nulls left out."""
    return reduce(DataFrame.unionByName, [c.toDF("fingerprint").where(F.col("fingerprint").isNotNull())
                                          for c in columns]).distinct()


def signatures_of(fp_signatures: DataFrame, fingerprints: DataFrame, n_fingerprints: int) -> DataFrame:
    """The (fingerprint, signature) rows of `fingerprints` (n_fingerprints distinct values): a semi-join,
    broadcast when they are few (joins.is_small). The verify stage's joins meet these rows, cached, instead of
    sorting every fingerprint's signature once per join; and the pages need not stay partitioned by
    fingerprint for the joins to be cheap."""
    return fp_signatures.join(broadcast_if_small(fingerprints, n_fingerprints), "fingerprint", "left_semi")


def verified_edges(members: DataFrame, fp_signatures: DataFrame | None, plan: TablePlan,
                   spec: VerifySpec | None) -> DataFrame:
    """members: (table, key, fingerprint) from group_members; fp_signatures: (fingerprint, signature), one
    per fingerprint, or None (no verification). Returns forest edges (src, dst) of the verified pairs and
    BANDS statistics rows per call (band, verified, rejected; src and dst null)."""
    rows = members.select("table", "key", "fingerprint")
    use_sigs = spec is not None and fp_signatures is not None
    if use_sigs:
        rows = rows.join(fp_signatures, "fingerprint")
    # key first (Spark's sort prefix is the first column; a few table indices would tie almost everywhere)
    runs = rows.repartition("key").sortWithinPartitions("key", "table", "fingerprint")
    sig_spec = spec.signature if spec is not None else None

    def extra(batch: pa.RecordBatch) -> np.ndarray:
        if not use_sigs:
            return np.zeros((batch.num_rows, 0), dtype=np.uint8)
        return from_arrow(batch.column("signature"), sig_spec)

    def per_groups(fps, offsets, tables, keys, sigs):
        out = verify_groups(fps, sigs if use_sigs else None, offsets, tables, plan, spec if use_sigs else None)
        yield from verified_batches(out.src, out.dst, out.verified_by_band, out.rejected_by_band)

    return runs.mapInArrow(lambda b: walk_groups(b, per_groups, extra=extra), VERIFIED_SCHEMA)


def component_centres(batches: Iterator[pa.RecordBatch], spec: VerifySpec | None) -> Iterator[pa.RecordBatch]:
    """Rows (comp, pos, signature, short_text, fixed, fingerprint, unit_id, h_cluster, h_kept_date[, n_features]) sorted by
    (comp, pos) -> (fingerprint, unit_id, kept_id, h_cluster, h_kept_date) for every unit (_centres_of):
    verified_centres of each component, many components per Arrow batch (a component still
    running at the end of a batch is carried into the next)."""
    pending = None  # rows of the last component seen, which may go on in the next batch
    for batch in batches:
        table = pa.Table.from_batches([batch])
        if pending is not None:
            table = pa.concat_tables([pending, table])
        if not table.num_rows:
            continue
        comp = table.column("comp").to_numpy()
        change = np.flatnonzero(comp[1:] != comp[:-1])
        last = int(change[-1] + 1) if len(change) else 0
        if last:
            yield from _centres_of(table.slice(0, last).combine_chunks(), spec)
        pending = table.slice(last)
    if pending is not None and pending.num_rows:
        yield from _centres_of(pending.combine_chunks(), spec)


def _centres_of(table: pa.Table, spec: VerifySpec | None) -> Iterator[pa.RecordBatch]:
    """Complete components, rows sorted by (comp, pos): each unit row (fixed false) with its centre's
    unit_id as kept_id, or the centre's h_cluster and h_kept_date when the centre is an earlier run's page, its
    estimated similarity to the centre (from the two signatures: an earlier cluster's is its kept page's;
    null without signatures), and whether it joined the centre only by containment (by_containment)."""
    if not table.num_rows:
        return
    comp = table.column("comp").to_numpy()
    fixed = table.column("fixed").to_numpy(zero_copy_only=False)
    sig_col = table.column("signature").combine_chunks()
    sigs = from_arrow(sig_col, spec.signature) if spec is not None and sig_col.null_count == 0 else None
    counts, chars, *prose = ((pa.compute.fill_null(table.column(c), -1).to_numpy(zero_copy_only=False)
                              if c in table.column_names else None) for c in SIZE_COLUMNS)
    prose = None if any(p is None for p in prose) else np.stack(prose, axis=1)
    has_text = table.column("short_text").is_valid().to_numpy(zero_copy_only=False)
    texts = table.column("short_text").to_pylist() if has_text.any() else [None] * len(comp)
    starts = np.r_[0, np.flatnonzero(comp[1:] != comp[:-1]) + 1, len(comp)]
    centre_row = np.empty(len(comp), dtype=np.int64)
    one_call = np.ones(len(starts) - 1, dtype=bool)  # components that need a call of their own
    if sigs is not None:
        # the components without earlier clusters or short texts (nearly all), in one vectorised greedy pass:
        # a Python call per component cost ~16 microseconds (10M fingerprints: ~300,000 components)
        one_call = np.logical_or.reduceat(fixed | has_text, starts[:-1])
        rows = np.flatnonzero(np.repeat(~one_call, np.diff(starts)))
        sizes = np.diff(starts)[~one_call]
        centre_row[rows] = rows[greedy_centres(sigs[rows], np.r_[0, np.cumsum(sizes)], spec,
                                               None if counts is None else counts[rows],
                                               None if chars is None else chars[rows],
                                               None if prose is None else prose[rows])]
    # a component of earlier clusters alone (history rows that share no component with this run's units)
    # answers for no unit: no call
    one_call &= np.logical_or.reduceat(~fixed, starts[:-1])
    for a, b in zip(starts[:-1][one_call], starts[1:][one_call]):
        t = texts[a:b]
        centre = verified_centres(None if sigs is None else sigs[a:b], t if any(x is not None for x in t) else None,
                                  spec, int(fixed[a:b].sum()), int(b - a), None if counts is None else counts[a:b],
                                  None if chars is None else chars[a:b], None if prose is None else prose[a:b])
        centre_row[a:b] = a + centre
    units = np.flatnonzero(~fixed)
    to_centre = np.full(len(units), np.nan)
    by_containment = np.zeros(len(units), dtype=bool)
    if sigs is not None:
        centres = centre_row[units]
        agree = agreeing_bins(sigs[units], sigs[centres])
        to_centre = agreement_similarity(agree, spec.signature)
        if spec.containment:  # joined neither by similarity nor by two short texts' shingles
            by_containment = (centres != units) & (agree < spec.need) & ~(has_text[units] & has_text[centres])
    centre = pa.array(centre_row[units])
    by_fixed = pa.array(fixed[centre_row[units]])
    kept = table.column("unit_id").take(centre)
    out = pa.table({
        "fingerprint": table.column("fingerprint").take(pa.array(units)),
        "unit_id": table.column("unit_id").take(pa.array(units)),
        "kept_id": pa.compute.if_else(by_fixed, pa.scalar(None, kept.type), kept),
        "h_cluster": table.column("h_cluster").take(centre),
        "h_kept_date": table.column("h_kept_date").take(centre),
        # the kept page's fingerprint (its unit's; an earlier cluster's rows have none): for the report's chaining
        "kept_fingerprint": table.column("fingerprint").take(centre),
        "similarity": pa.array(to_centre, pa.float64(), mask=np.isnan(to_centre)),
        "by_containment": pa.array(by_containment),
    })
    yield from out.combine_chunks().to_batches()


def first_centres(multi: DataFrame, first_fixed: DataFrame | None, fixed_rows: int) -> DataFrame:
    """verified_clusters without verification (spec None: everyone joins the component's first centre,
    verified_centres), in SQL: multi's units (verified_clusters' windows gave each its component's first unit,
    first_unit and first_fingerprint) join the first earlier cluster of their component (first_fixed: (comp,
    h_cluster, h_kept_date), pos 1; fixed_rows a bound on its rows, -1: not known) or, with none, the first unit.
    No signature, no Python worker and no second sort of the components: the windows already sorted them."""
    if first_fixed is not None:
        multi = multi.join(broadcast_if_small(first_fixed.select("comp", "h_cluster", "h_kept_date"), fixed_rows),
                           "comp", "left")
    else:
        multi = multi.select("*", F.lit(None).cast(dict(multi.dtypes)["unit_id"]).alias("h_cluster"),
                             F.lit(None).cast("string").alias("h_kept_date"))
    to_unit = F.col("h_cluster").isNull()  # an earlier cluster always has an id (resolve_verified reads it so)
    return multi.select("fingerprint", "unit_id", F.when(to_unit, F.col("first_unit")).alias("kept_id"),
                        "h_cluster", "h_kept_date", F.when(to_unit, F.col("first_fingerprint")).alias("kept_fingerprint"),
                        F.lit(None).cast("double").alias("similarity"), F.lit(False).alias("by_containment"))


def with_units(docs: DataFrame, keep: Callable[[DataFrame], DataFrame],
               checkpoint: Callable[[DataFrame], DataFrame], split: bool = True) -> tuple[DataFrame, int | None]:
    """docs plus `unit`: the best (rank, id) of the pages with the same fingerprint, signature and short text,
    which verify alike (its id names the unit), `fp_best`: the best (rank, id) of the pages with the same
    fingerprint, and `fp_units`: how many units that fingerprint has. Also how many fingerprints are repeated
    (None when not `split`: not counted). Three passes read the result (the fingerprints' signatures, the units
    and the pages in resolve): it is cached (`keep`) when the pages were shuffled for it; split, it is docs
    joined to a broadcast, and each pass reads docs again instead (a pass over docs costs a fraction of caching
    every page with its signature).

    Most fingerprints are met once (10M of bench_scale's: 105,301 repeated), and such a page is its own unit
    and its fingerprint's best page where it lies. A count of the fingerprints (a hash aggregation of one
    column) finds the repeated ones. When their pages are few (joins.is_small), only these are shuffled by
    fingerprint for the windows, and their columns (checkpointed: later plans stay short, see below) are
    broadcast back to the pages by id, instead of every page with its signature being shuffled and sorted.
    When they are many, or not `split` (a small input, where the count and the checkpoint cost more
    Spark jobs than the shuffle they save), every page is shuffled by fingerprint; the pages then stay
    partitioned by fingerprint (resolve_verified).

    The lineage is cut because a cached DataFrame's plan string prints the plan of every cache it reads: with
    --history the report's queries, whose plans read a dozen caches, printed 15 MB plans already, and the
    split pages referenced twice grew them past a 3 GB heap."""
    if not split:
        return keep(_with_unit_windows(docs)), None
    fp_pages = docs.where(F.col("fingerprint").isNotNull()).groupBy("fingerprint").agg(F.count(F.lit(1)).alias("pages"))
    with unique_key_aggregation(docs.sparkSession):  # most fingerprints are met once
        repeated = keep(fp_pages.where(F.col("pages") > 1))
    counts = repeated.agg(F.count(F.lit(1)).alias("fingerprints"), F.sum("pages").alias("pages")).first()
    n_repeated, n_repeated_pages = int(counts["fingerprints"]), int(counts["pages"] or 0)
    if not is_small(n_repeated_pages):
        return keep(_with_unit_windows(docs)), n_repeated
    of_repeated = docs.join(F.broadcast(repeated.select("fingerprint")), "fingerprint", "left_semi")
    columns = checkpoint(_with_unit_windows(of_repeated).select(
        F.col("id").alias("_id"), F.col("unit").alias("_unit"), F.col("fp_best").alias("_fp_best"),
        F.col("fp_units").alias("_fp_units")))
    itself = F.struct("rank", "id")
    joined = docs.join(F.broadcast(columns), docs["id"] == columns["_id"], "left")
    return joined.select(*docs.columns, F.coalesce("_unit", itself).alias("unit"),
                         F.coalesce("_fp_best", itself).alias("fp_best"),
                         F.coalesce("_fp_units", F.lit(1).cast("long")).alias("fp_units")), n_repeated


def _with_unit_windows(docs: DataFrame) -> DataFrame:
    """with_units' columns by two windows over the pages shuffled by fingerprint: one shuffle and one sort
    serve both (two persisted passes would cost about twice as much)."""
    by_unit, by_fp = Window.partitionBy("fingerprint", "signature", "short_text"), Window.partitionBy("fingerprint")
    return (docs.repartition("fingerprint").withColumn("unit", F.min(F.struct("rank", "id")).over(by_unit))
            .select("*", F.min(F.struct("rank", "id")).over(by_fp).alias("fp_best"),
                    F.sum((F.col("id") == F.col("unit.id")).cast("long")).over(by_fp).alias("fp_units")))


def units_of(docs_u: DataFrame) -> DataFrame:
    """(fingerprint, signature, short_text, best, fp_units, *SIZE_COLUMNS): one row per unit (its best page's),
    fingerprint not null; the SIZE_COLUMNS (for containment) null when docs_u has none."""
    sizes = [F.col(c) if c in docs_u.columns else F.lit(None).cast("int").alias(c) for c in SIZE_COLUMNS]
    return docs_u.where(F.col("fingerprint").isNotNull() & (F.col("id") == F.col("unit.id"))).select(
        "fingerprint", "signature", "short_text", F.col("unit").alias("best"), "fp_units", *sizes)


def fingerprint_signatures(docs_u: DataFrame) -> DataFrame:
    """(fingerprint, signature): one per fingerprint, the signature of its best page (whose unit is the best
    unit)."""
    return docs_u.where(F.col("fingerprint").isNotNull() & (F.col("id") == F.col("fp_best.id"))).select(
        "fingerprint", "signature")


def with_size_columns(units: DataFrame) -> DataFrame:
    """units with SIZE_COLUMNS (null where it has none: containment then compares nothing, and resolve tells
    no frame)."""
    for c in SIZE_COLUMNS:
        if c not in units.columns:
            units = units.withColumn(c, F.lit(None).cast("int"))
    return units


def verified_clusters(units: DataFrame, roots: DataFrame, spec: VerifySpec | None,
                      fixed: DataFrame | None = None, fixed_rows: int = -1, root_rows: int = -1) -> DataFrame:
    """units: (fingerprint, signature, short_text, best, fp_units[, *SIZE_COLUMNS]) with best = min (rank, id)
    of the unit's pages, fp_units the units of its fingerprint, n_features, text_chars and the prose columns its
    best page's feature count, characters and prose, for containment (units_of; without them, or null, a pair
    verifies by similarity alone);
    roots: (node, root) of the components; fixed (with --history): (fingerprint, h_cluster, h_kept_date,
    signature) of the history fingerprints in the search, signature = that of their cluster's kept page;
    fixed_rows: a bound on fixed's rows if known (-1: not), for a broadcast; root_rows: roots' rows if known
    (connected_components counts them; -1: counted here).
    Returns (fingerprint, unit_id, kept_id, h_cluster, h_kept_date, kept_fingerprint, similarity, by_containment)
    for each unit that shares its component with another unit or an earlier cluster: unit_id = its best page's
    id, kept_id the best page of its centre unit and kept_fingerprint that unit's fingerprint, or
    h_cluster/h_kept_date when its centre is an earlier run's kept page; similarity its estimated Jaccard index
    to the centre (component_centres), by_containment whether it joined it only by containment (estimated).
    Every other unit is its own cluster, kept by its best page, and gets no row (all units of one fingerprint
    share a component, so either all or none of them have a row).

    Most units are alone in their component and need no signature here: only components of two or more
    units (or with earlier clusters) bring their signatures to one Python call."""
    units = with_size_columns(units)

    def with_comp(df: DataFrame) -> DataFrame:
        return df.join(roots, df["fingerprint"] == roots["node"], "left").withColumn(
            "comp", F.coalesce("root", "fingerprint")).drop("node", "root")

    # roots lists a component's other nodes only: its root is added as its own root, so that every unit in
    # the graph is `linked`
    linked_nodes = roots.unionByName(roots.select(F.col("root").alias("node"), "root").distinct())
    # the graph's nodes (at most twice roots' rows) are few next to the units: broadcast when known small,
    # the units are then not sorted to meet them
    n_linked = 2 * (root_rows if root_rows >= 0 else roots.count())
    # One pass over the units, signatures included, keeps those that can share a component with another unit:
    # the units in the graph (all units of one fingerprint are, or none), and the units of a fingerprint with
    # several units (fp_units, counted by with_units), whose component outside the graph is their fingerprint.
    # Only these rows move on, with their signatures: no second pass, and no join to fetch the signatures of
    # the few that are kept.
    cand = units.join(broadcast_if_small(linked_nodes, n_linked), F.col("fingerprint") == linked_nodes["node"], "left")
    cand = cand.withColumn("comp", F.coalesce("root", "fingerprint"))
    wanted = F.col("root").isNotNull() | (F.col("fp_units") > 1)
    if fixed is not None:
        # earlier clusters (their kept pages) in keep order: the earliest run first; n_fixed per component.
        # A single unit outside the graph whose fingerprint names such a component (the same fingerprint
        # stored by an earlier run) is wanted too. Rows of components without a unit of this run give
        # nothing (component_centres answers for units only).
        f = with_comp(fixed).select("comp", "h_cluster", "h_kept_date", "signature").distinct()
        f = f.withColumn("pos", F.row_number().over(Window.partitionBy("comp").orderBy("h_kept_date", "h_cluster")))
        n_fixed = broadcast_if_small(f.groupBy("comp").agg(F.max("pos").alias("n_fixed")), fixed_rows)
        cand = cand.join(n_fixed, "comp", "left")
        wanted = wanted | F.col("n_fixed").isNotNull()
    else:
        cand = cand.withColumn("n_fixed", F.lit(None).cast("int"))
    cand = cand.where(wanted).select("fingerprint", "best", F.col("best.id").alias("unit_id"), "comp", "signature",
                                     "short_text", F.coalesce("n_fixed", F.lit(0)).alias("n_fixed"), "n_features",
                                     *SIZE_COLUMNS[1:])
    by_comp = Window.partitionBy("comp")
    # units of the component (whole components were kept above), and their place in keep order; only units
    # with another unit or an earlier cluster in their component get a row (single units keep their own best
    # page: resolve_verified)
    in_order = by_comp.orderBy("best")
    cand = cand.select("*", F.count(F.lit(1)).over(by_comp).alias("n"), F.row_number().over(in_order).alias("unit_pos"),
                       *((F.first("unit_id").over(in_order).alias("first_unit"),
                          F.first("fingerprint").over(in_order).alias("first_fingerprint")) if spec is None else ()))
    multi = cand.where(F.col("n") + F.col("n_fixed") > 1).withColumn("pos", F.col("n_fixed") + F.col("unit_pos"))
    earlier = f if fixed is not None else None
    if spec is None:
        return first_centres(multi, None if earlier is None else earlier.where(F.col("pos") == 1), fixed_rows)
    return greedy_component_centres(multi, earlier, spec)


def greedy_component_centres(multi: DataFrame, f: DataFrame | None, spec: VerifySpec) -> DataFrame:
    """verified_clusters with verification: multi's units and the earlier clusters f (comp, pos, h_cluster,
    h_kept_date, signature; None: no history), sorted by (comp, pos), to component_centres."""
    id_type = dict(multi.dtypes)["unit_id"]
    h_type = dict(f.dtypes)["h_cluster"] if f is not None else id_type
    rows = multi.select("comp", "pos", "signature", "short_text", F.lit(False).alias("fixed"), "fingerprint", "unit_id",
                        F.lit(None).cast(h_type).alias("h_cluster"), F.lit(None).cast("string").alias("h_kept_date"),
                        *(F.col(c).cast("int").alias(c) for c in SIZE_COLUMNS))
    if f is not None:
        rows = rows.unionByName(f.select("comp", "pos", "signature", F.lit(None).cast("string").alias("short_text"),
                                         F.lit(True).alias("fixed"), F.lit(None).cast("long").alias("fingerprint"),
                                         F.lit(None).cast(id_type).alias("unit_id"), "h_cluster", "h_kept_date",
                                         *(F.lit(None).cast("int").alias(c) for c in SIZE_COLUMNS)))
    runs = rows.repartition("comp").sortWithinPartitions("comp", "pos")
    out_schema = StructType([runs.schema[c] for c in ("fingerprint", "unit_id")]
                            + [StructField("kept_id", runs.schema["unit_id"].dataType, True)]
                            + [runs.schema[c] for c in ("h_cluster", "h_kept_date")]
                            + [StructField("kept_fingerprint", LongType(), True),
                               StructField("similarity", DoubleType(), True),
                               StructField("by_containment", BooleanType(), True)])
    return runs.mapInArrow(lambda batches: component_centres(batches, spec), out_schema)
