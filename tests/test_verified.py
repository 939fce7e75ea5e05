"""Verified clusters: every duplicate is verified-similar to its kept page. The pure core against brute
force (hypothesis), the Spark stages against a brute-force reference of the definition, chance immunity,
and the promise checked on a whole job's output."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from reference import (
    agreeing,
    brute_force_clusters,
    brute_force_verified,
    check_kept_fp_and_shape,
    components_of,
    planted_fingerprints,
    planted_signatures,
    within_k_pairs,
)

from simhash_udf.core.blocks import plan_tables
from simhash_udf.core.shingles import jaccard, shingle_set
from simhash_udf.core.verified import VerifySpec, greedy_centres, verified_centres, verify_groups
from simhash_udf.job.stages import (
    LARGE_RUN_PAGES,
    HistoryView,
    SearchSpecs,
    StageContext,
    StageTimer,
    near_duplicate_clusters,
)
from simhash_udf.job.stages.exact_collapse import exact_collapse_stage
from simhash_udf.spark.session import scoped_settings
from simhash_udf.spark.verified import PROSE_COLUMNS

SPEC = VerifySpec(0.7, min_containment=0.0)  # the brute-force references verify by similarity alone
# a scan of the cached pages that reads the units' signatures along with their fingerprint's unit count
# (adaptive execution prints a scan in its final and its initial plan, with the same attribute ids: the
# distinct matches are the scans)
UNITS_READ_WITH_SIGNATURES = re.compile(r"InMemoryTableScan \[[^\]]*fp_units[^\]]*signature[^\]]*\]")


def _sig_matrix(sigs):
    return np.frombuffer(b"".join(sigs), dtype=np.uint8).reshape(len(sigs), -1)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), fixed=st.integers(0, 3), short=st.booleans())
def test_verified_centres_equal_greedy_definition(seed, n, fixed, short):
    rng = np.random.default_rng(seed)
    fixed = min(fixed, n)
    sigs = planted_signatures(rng, [int(x) << 40 for x in rng.integers(0, 3, n)])
    words = ["alpha beta gamma delta", "alpha beta gamma delta epsilon", "zeta eta theta iota kappa", "alpha beta"]
    texts = [words[int(rng.integers(0, 4))] if short and rng.random() < 0.5 and i >= fixed else None for i in range(n)]
    centre = verified_centres(_sig_matrix(sigs), texts if short else None, SPEC, fixed)

    def verified(a, b):
        if short and texts[a] is not None and texts[b] is not None:
            return jaccard(shingle_set(texts[a]), shingle_set(texts[b])) >= SPEC.short_min_jaccard
        return agreeing(sigs[a], sigs[b]) >= SPEC.need

    expect, left = [None] * n, list(range(fixed, n))
    for c in range(fixed):
        expect[c] = c
        for u in [u for u in left if verified(u, c)]:
            expect[u] = c
            left.remove(u)
    while left:
        c = left[0]
        for u in [u for u in left if u == c or verified(u, c)]:
            expect[u] = c
            left.remove(u)
    assert centre.tolist() == expect
    assert all(centre[u] == u or verified(u, centre[u]) for u in range(n))  # the promise itself


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 6), n=st.sampled_from([8, 60, 300]), small=st.sampled_from([4, 256]))
def test_verify_groups_forest_spans_the_verified_pairs(seed, k, n, small):
    """One key group of planted fingerprints (big ones take the breadth-first path when small = 4): the
    forest connects exactly what the verified accepted pairs connect, and every accepted pair is counted in
    one band, verified or rejected, as brute force says."""
    rng = np.random.default_rng(seed)
    fps = np.array(planted_fingerprints(rng, max(1, n // 3), k), dtype=np.int64)
    fps = np.unique(fps)
    plan = plan_tables(k, k + 1)
    table0 = np.array([f for f in fps if True], dtype=np.int64)  # one group; the table rule applied as for table 0
    sigs = planted_signatures(rng, [int(f) for f in table0])
    out = verify_groups(table0, _sig_matrix(sigs), np.array([0, len(table0)]), np.array([0]), plan, SPEC, small)
    from simhash_udf.core.candidates import pair_filter

    filt = pair_filter(plan)
    u = table0.view(np.uint64)
    accepted = [(a, b) for a, b in within_k_pairs(table0, k) if filt.accept(np.array([u[a] ^ u[b]]), 0)[0]]
    verified = [(a, b) for a, b in accepted if agreeing(sigs[a], sigs[b]) >= SPEC.need]
    assert int(out.verified_by_band.sum()) == len(verified)
    assert int(out.rejected_by_band.sum()) == len(accepted) - len(verified)
    assert len(out.src) <= max(len(table0) - 1, 0)
    index = {int(f): i for i, f in enumerate(table0)}
    got = components_of(range(len(table0)), [(index[int(a)], index[int(b)]) for a, b in zip(out.src, out.dst)])
    want = components_of(range(len(table0)), verified)
    assert {i: got[i] == got[j] for i in range(len(table0)) for j in (0, len(table0) - 1)} == \
        {i: want[i] == want[j] for i in range(len(table0)) for j in (0, len(table0) - 1)}
    assert len(set(got.values())) == len(set(want.values()))


@pytest.fixture(scope="module")
def cluster(spark, tmp_path_factory):
    spark.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("ckpt")))

    def run(ids, fps, sigs, k, mode="verified", partitions=3, verify=SPEC, history=None, n_pages=-1):
        df = spark.createDataFrame(list(zip(ids, fps, sigs)), "id long, fingerprint long, signature binary")
        docs = df.repartition(partitions).withColumn("rank", F.struct(F.col("id").alias("i")))
        if history is not None:
            history = spark.createDataFrame(history, "fingerprint long, h_cluster long, h_kept_date string, "
                                                     "signature binary, kept_signature binary")
        persisted = []
        # joins planned as at scale (no broadcast), so that run.last_plan shows the shuffles a large run makes
        with scoped_settings(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
            run.last_timer = StageTimer()
            found = near_duplicate_clusters(docs, StageContext(
                SearchSpecs(k, verify=verify, cluster_mode=mode, max_rounds=50), run.last_timer,
                lambda d: persisted.append(d.cache()) or d.cache(),
                history=HistoryView(history, None, "2026-11-23") if history is not None else None,
                large=n_pages >= LARGE_RUN_PAGES))
            clusters, stats = found.clusters, found.stats
            collected = clusters.collect()
            rows = {r.id: (r.cluster_id, r.kept_run_date) if history is not None else r.cluster_id for r in collected}
            check_kept_fp_and_shape(collected, found.histogram, stats,
                                    lambda r: history is not None and r.kept_run_date != "2026-11-23",
                                    {((r[1], r[2]), r[0]) for r in history.collect()} if history is not None else set())
            run.last_plan = clusters._jdf.queryExecution().executedPlan().toString()
        for d in persisted:
            d.unpersist()
        return rows, stats

    return run


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 6), partitions=st.sampled_from([1, 4]),
       large=st.sampled_from([False, True]))
def test_verified_mode_equals_brute_force_definition(cluster, seed, k, partitions, large):
    rng = np.random.default_rng(seed)
    fps = planted_fingerprints(rng, 40, k, max_extra=k)  # chains: variants up to 2k from a centre
    fps += fps[: len(fps) // 4]  # repeated fingerprints, some with another signature
    sigs = planted_signatures(rng, fps)
    ids = [int(i) for i in rng.permutation(len(fps)) + 1]
    # large: the passes of a large run (stages.LARGE_RUN_PAGES): only the pages of repeated fingerprints
    # shuffled for the units (with_units' split), the verify joins on the candidates' signatures alone
    got, stats = cluster(ids, fps, sigs, k, partitions=partitions, n_pages=10**9 if large else -1)
    assert got == brute_force_verified(ids, fps, sigs, k, SPEC.need)
    plan = cluster.last_plan
    if large:
        # the split pages are not partitioned by fingerprint: resolve broadcasts the units' assignments (few)
        assert "BroadcastHashJoin" in plan
    else:
        # The pages are partitioned by fingerprint (with_units) and stay where they are: resolve joins them to
        # their units' assignments by a sort-merge join on the fingerprint that moves the assignments only.
        # The units are read once, with their signatures, to pick those that share a component
        # (verified_clusters).
        assert "SortMergeJoin" in plan
        assert len(set(UNITS_READ_WITH_SIGNATURES.findall(plan))) == 1, plan
    # nothing is re-shuffled by unit (4M fingerprints: 4M rows, 584 MB; stages.CLUSTERING_SETTINGS)
    assert not re.search(r"Exchange hashpartitioning\([^)]*unit", plan), plan
    for i, c in got.items():  # every duplicate is verified-similar to its kept page
        assert c == i or agreeing(sigs[ids.index(i)], sigs[ids.index(c)]) >= SPEC.need
    assert stats.candidates.pairs_verified + stats.candidates.pairs_rejected == stats.candidates.pairs_accepted


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 6), partitions=st.sampled_from([1, 4]),
       large=st.sampled_from([False, True]))
# two earlier clusters hold one fingerprint (fps repeat): each of today's pages of it counted once
@example(seed=1441131992, k=1, partitions=1, large=False)
def test_verified_mode_without_verification_joins_each_component(cluster, seed, k, partitions, large):
    """--min-similarity 0 (verify None; spark.verified.first_centres): every page of a component joins its
    best page, as brute force's transitive clusters; with a history, the component's earliest cluster, as
    transitive mode with the same history."""
    rng = np.random.default_rng(seed)
    fps = planted_fingerprints(rng, 30, k, max_extra=k)
    fps += fps[: len(fps) // 4]
    sigs = planted_signatures(rng, fps)
    ids = [int(i) for i in rng.permutation(len(fps)) + 1]
    n_pages = 10**9 if large else -1
    got, _ = cluster(ids, fps, sigs, k, partitions=partitions, verify=None, n_pages=n_pages)
    assert got == brute_force_clusters(ids, fps, k)
    # earlier clusters: two of them near some of today's fingerprints, on different dates (the earliest is kept)
    history = [(fps[i] ^ 1, 900 + j, f"2026-11-{10 + j % 3:02d}", sigs[i], sigs[i])
               for j, i in enumerate(rng.choice(len(fps), size=6, replace=False))]
    history += [(fps[int(rng.integers(len(fps)))] ^ 2, 990, "2026-11-01", sigs[0], sigs[0])]
    with_history, _ = cluster(ids, fps, sigs, k, partitions=partitions, verify=None, history=history, n_pages=n_pages)
    transitive, _ = cluster(ids, fps, sigs, k, partitions=partitions, mode="transitive", verify=None, history=history)
    assert with_history == transitive
    assert sum(date != "2026-11-23" for _, date in with_history.values()) >= 1


@pytest.mark.parametrize("verify", [None, SPEC])
@pytest.mark.parametrize("large", [False, True])
def test_the_fingerprints_keep_their_signatures_only_when_pairs_are_verified(spark, tmp_path, verify, large):
    """The exact collapse's fingerprints (one row each, cached for the search): with verification each carries its
    best page's signature; without, nothing compares signatures, and the cache holds none."""
    spark.sparkContext.setCheckpointDir(str(tmp_path))
    rng = np.random.default_rng(11)
    fps = planted_fingerprints(rng, 20, 3)
    fps += fps[:6]
    sigs = planted_signatures(rng, fps)
    docs = spark.createDataFrame([(i + 1, f, s) for i, (f, s) in enumerate(zip(fps, sigs))],
                                 "id long, fingerprint long, signature binary").select(
        "*", F.struct(F.col("id").alias("i")).alias("rank"), F.lit(None).cast("string").alias("short_text"),
        F.lit(1).alias("n_features"), F.lit(None).cast("array<bigint>").alias("sentence_keys"),
        *(F.lit(None).cast("int").alias(c) for c in ("text_chars", *PROSE_COLUMNS)))
    persisted = []
    ctx = StageContext(SearchSpecs(3, verify=verify), StageTimer(), lambda d: persisted.append(d.cache()) or d.cache(),
                       large=large)
    collapsed = exact_collapse_stage(docs, ctx)
    rows = {r.fingerprint: r.signature for r in collapsed.fingerprints.collect()}
    assert set(rows) == set(fps) and collapsed.n_distinct == len(set(fps))
    if verify is None:
        assert all(s is None for s in rows.values())
    else:  # the signature of the fingerprint's best page (the smallest id)
        assert rows == {f: sigs[fps.index(f)] for f in set(fps)}
    for d in persisted:
        d.unpersist()


def test_graph_nodes_broadcast_when_few_same_clusters_either_way(cluster, monkeypatch):
    """verified_clusters broadcasts the graph's nodes, and the units of multi-unit components, when they are
    known to be few (Spark's own broadcast is off in this fixture), so the units are not sorted to meet them;
    with nothing broadcast, the same clusters."""
    from simhash_udf.spark import joins

    rng = np.random.default_rng(11)
    fps = planted_fingerprints(rng, 30, 3, max_extra=3)
    fps += fps[:8]
    sigs = planted_signatures(rng, fps)
    ids = [int(i) for i in rng.permutation(len(fps)) + 1]
    broadcast, _ = cluster(ids, fps, sigs, 3)
    assert "BroadcastHashJoin" in cluster.last_plan
    monkeypatch.setattr(joins, "BROADCAST_MAX_ROWS", -1)
    shuffled, _ = cluster(ids, fps, sigs, 3)
    plan = cluster.last_plan
    assert "BroadcastHashJoin" not in plan
    # by sort-merge join, the graph's nodes meet the units where they lie (see above)
    assert not re.search(r"Exchange hashpartitioning\([^)]*unit", plan), plan
    assert len(set(UNITS_READ_WITH_SIGNATURES.findall(plan))) == 1, plan
    assert broadcast == shuffled == brute_force_verified(ids, fps, sigs, 3, SPEC.need)


@pytest.mark.parametrize("broadcast", [True, False])
def test_large_run_passes_equal_brute_force(cluster, monkeypatch, broadcast):
    """The passes of a large run (stages.LARGE_RUN_PAGES): only the pages of repeated fingerprints shuffled for
    the units (with_units' split), the verify joins on the candidates' signatures alone (signatures_of), the
    units' assignments broadcast. The clusters and pair statistics of the brute-force definition and of a small
    run's passes, with the sides broadcast when known to be few, and with nothing broadcast (every page then
    windowed, every join by shuffle)."""
    from simhash_udf.spark import joins

    rng = np.random.default_rng(17)
    fps = planted_fingerprints(rng, 40, 4, max_extra=4)
    fps += fps[:10]  # repeated fingerprints, some with another signature
    sigs = planted_signatures(rng, fps)
    ids = [int(i) for i in rng.permutation(len(fps)) + 1]
    if not broadcast:
        monkeypatch.setattr(joins, "BROADCAST_MAX_ROWS", -1)
    got, stats = cluster(ids, fps, sigs, 4, n_pages=10**9)
    counts = cluster.last_timer.counts
    assert counts["exact_collapse"]["repeated_fingerprints"] == sum(fps.count(f) > 1 for f in set(fps))
    assert 0 < counts["verify"]["candidate_fingerprints"] < len(set(fps))
    assert got == brute_force_verified(ids, fps, sigs, 4, SPEC.need)
    small, small_stats = cluster(ids, fps, sigs, 4)
    assert "repeated_fingerprints" not in cluster.last_timer.counts["exact_collapse"]
    assert "candidate_fingerprints" not in cluster.last_timer.counts["verify"]
    assert (small, small_stats) == (got, stats)


def test_chance_pairs_are_never_joined(cluster):
    """Unrelated pages (independent signatures) whose fingerprints lie within k, and a chain of them: in
    verified mode each stays its own cluster; without verification they are joined."""
    rng = np.random.default_rng(5)
    a = 0x0F0F0F0F0F0F0F0F
    fps = [a, a ^ 0b111, a ^ 0b111 ^ (0b111 << 20), a ^ 0b111 ^ (0b111 << 20) ^ (0b11 << 50)]
    fps = [f - (1 << 64) if f >= 1 << 63 else f for f in fps]
    sigs = [rng.integers(0, 256, 128, dtype=np.uint8).tobytes() for _ in fps]
    ids = [1, 2, 3, 4]
    got, stats = cluster(ids, fps, sigs, 6)
    assert got == {1: 1, 2: 2, 3: 3, 4: 4}
    assert stats.candidates.pairs_accepted >= 3 and stats.candidates.pairs_verified == 0 and stats.candidates.forest_edges == 0
    joined, _ = cluster(ids, fps, sigs, 6, mode="transitive", verify=None)
    assert set(joined.values()) == {1}


def test_a_verified_chain_is_cut_at_the_kept_page(cluster):
    """A ~ B ~ C each verified, A and C not: C does not become a duplicate of A (transitive mode joins all)."""
    rng = np.random.default_rng(1)
    base = rng.integers(0, 256, 128, dtype=np.uint8)
    b = base.copy()
    b[:30] = rng.integers(0, 256, 30)  # A~B: 98 of 128 bins agree
    c = b.copy()
    c[30:60] = rng.integers(0, 256, 30)  # B~C: 98 agree, A~C: 68 agree
    fps = [0, 0b111, 0b111 | 0b111 << 20]
    sigs = [base.tobytes(), b.tobytes(), c.tobytes()]
    got, _ = cluster([1, 2, 3], fps, sigs, 6)
    assert got == {1: 1, 2: 1, 3: 3}
    transitive, _ = cluster([1, 2, 3], fps, sigs, 6, mode="transitive")
    assert transitive == {1: 1, 2: 1, 3: 1}
    assert brute_force_clusters([1, 2, 3], fps, 6) == transitive



def test_incremental_runs_verify_against_the_earlier_kept_page(cluster):
    """History: cluster 100 (kept page K, 2026-11-20) with a member D near K. Today: T1 within k of K but
    unrelated (chance) stays apart; T2 a true copy of K joins cluster 100; T3 a copy of D that is not similar
    to K (chained through D) is not removed as a duplicate of K."""
    rng = np.random.default_rng(3)
    k_sig = rng.integers(0, 256, 128, dtype=np.uint8)
    d_sig = k_sig.copy()
    d_sig[:30] = rng.integers(0, 256, 30)  # D ~ K: 98 bins agree
    t3_sig = d_sig.copy()
    t3_sig[30:60] = rng.integers(0, 256, 30)  # T3 ~ D, not ~ K (68 bins)
    t2_sig = k_sig.copy()
    t2_sig[100:110] = rng.integers(0, 256, 10)
    kf, df_ = 0x00FF00FF00FF00FF, 0x00FF00FF00FF00FF ^ 0b111
    history = [(kf, 100, "2026-11-20", k_sig.tobytes(), k_sig.tobytes()),
               (df_, 100, "2026-11-20", d_sig.tobytes(), k_sig.tobytes())]
    ids = [1, 2, 3]
    fps = [kf ^ (0b11 << 30), kf ^ (0b1 << 45), df_ ^ (0b111 << 20)]
    sigs = [rng.integers(0, 256, 128, dtype=np.uint8).tobytes(), t2_sig.tobytes(), t3_sig.tobytes()]
    got, stats = cluster(ids, fps, sigs, 6, history=history)
    assert got == {1: (1, "2026-11-23"), 2: (100, "2026-11-20"), 3: (3, "2026-11-23")}
    assert stats.exact_duplicates == 0
    # T4, a byte copy of D (a member of cluster 100 in the history): a duplicate there, and an exact one
    t4, t4_stats = cluster(ids + [4], fps + [df_], sigs + [d_sig.tobytes()], 6, history=history)
    assert t4[4] == (100, "2026-11-20") and t4_stats.exact_duplicates == 1
    assert cluster(ids, fps, sigs, 6, history=history, n_pages=10**9)[0] == got  # a large run's passes
    transitive, _ = cluster(ids, fps, sigs, 6, mode="transitive", verify=None, history=history)
    assert transitive == {1: (100, "2026-11-20"), 2: (100, "2026-11-20"), 3: (100, "2026-11-20")}


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(1, 9), max_size=12))
def test_greedy_centres_equal_one_call_per_component(seed, sizes):
    """The vectorised greedy pass over many components gives each component what verified_centres gives it
    alone (which the test above holds to the definition)."""
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    comp = np.repeat(np.arange(len(sizes)), sizes)
    sigs = _sig_matrix(planted_signatures(rng, [int(c % 3) << 40 for c in comp])) if n else np.zeros((0, 128), np.uint8)
    starts = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    got = greedy_centres(sigs, starts, SPEC)
    expect = np.concatenate([a + verified_centres(sigs[a:b], None, SPEC) for a, b in zip(starts[:-1], starts[1:])]
                            or [np.zeros(0, np.int64)])
    assert got.tolist() == expect.tolist()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(1, 12), max_size=6), short=st.booleans())
def test_component_walk_is_independent_of_batch_cuts(seed, cuts, short):
    """The resolve walk hands verified_centres whole components whatever the Arrow batches look like; with
    short texts, the components that have one go one call each and the others the vectorised pass, mixed in
    one batch."""
    import pyarrow as pa

    from simhash_udf.spark.verified import component_centres

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, 8)
    comp = np.repeat(np.arange(len(sizes)) * 7, sizes)
    pos = np.concatenate([np.arange(1, n + 1) for n in sizes]).astype(np.int32)
    sigs = planted_signatures(rng, [int(c) << 40 for c in comp])
    unit = np.arange(len(comp), dtype=np.int64) * 3 + 5
    words = ["alpha beta gamma delta", "alpha beta gamma delta epsilon", "zeta eta theta iota kappa"]
    texts = [words[int(rng.integers(0, 3))] if short and rng.random() < 0.3 else None for _ in comp]
    table = pa.table({"comp": comp, "pos": pos, "signature": pa.array(sigs, pa.binary()),
                      "short_text": pa.array(texts, pa.string()), "fixed": np.zeros(len(comp), bool),
                      "fingerprint": comp, "unit_id": unit, "h_cluster": pa.nulls(len(comp), pa.int64()),
                      "h_kept_date": pa.nulls(len(comp), pa.string())})
    bounds = sorted({min(int(c), len(comp)) for c in np.cumsum([0] + cuts)} | {len(comp)})
    pieces = [table.slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:])] + [table.slice(0, 0)]
    batches = [b for piece in pieces for b in piece.to_batches()]
    got = pa.Table.from_batches(list(component_centres(iter(batches), SPEC)))
    expect = []
    for c in np.unique(comp):
        idx = np.flatnonzero(comp == c)
        t = [texts[i] for i in idx]
        centre = verified_centres(_sig_matrix([sigs[i] for i in idx]), t if any(x is not None for x in t) else None,
                                  SPEC)
        expect += list(zip(unit[idx].tolist(), unit[idx][centre].tolist()))
    assert sorted(zip(got.column("unit_id").to_pylist(), got.column("kept_id").to_pylist())) == sorted(expect)


def test_components_of_earlier_clusters_alone_cost_no_call(monkeypatch):
    """With --history, earlier clusters that share no component with this run's units reach the resolve walk
    too: they answer for no unit, so they get no per-component call; a component with an earlier cluster and
    a unit gets one."""
    import pyarrow as pa

    from simhash_udf.spark import verified as spark_verified

    calls = []
    real = spark_verified.verified_centres
    monkeypatch.setattr(spark_verified, "verified_centres", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    rng = np.random.default_rng(3)
    comp = np.array([1, 1, 2, 3, 3], dtype=np.int64)
    fixed = np.array([True, False, True, True, True])
    sigs = planted_signatures(rng, [0] * 5)
    table = pa.table({"comp": comp, "pos": np.array([1, 2, 1, 1, 2], np.int32), "signature": pa.array(sigs, pa.binary()),
                      "short_text": pa.nulls(5, pa.string()), "fixed": fixed, "fingerprint": comp,
                      "unit_id": np.arange(5, dtype=np.int64), "h_cluster": pa.array([10, None, 20, 30, 31], pa.int64()),
                      "h_kept_date": pa.array(["d", None, "d", "d", "e"])})
    out = pa.Table.from_batches(list(spark_verified.component_centres(iter(table.to_batches()), SPEC)))
    assert out.column("unit_id").to_pylist() == [1] and len(calls) == 1


def test_signatures_of_keeps_exactly_the_wanted_fingerprints(spark):
    """The verify stage's narrowed signatures (signatures_of of distinct_fingerprints): the rows of the
    fingerprints named in any of the given columns, each once, nulls and unknown fingerprints ignored; read by a
    broadcast semi-join when they are known to be few, by a shuffle otherwise."""
    from simhash_udf.spark.verified import distinct_fingerprints, signatures_of

    rng = np.random.default_rng(5)
    fps = [int(x) for x in rng.integers(-(2**63), 2**63 - 1, 60, dtype=np.int64)]
    sigs = spark.createDataFrame([(f, bytes([i]) * 4) for i, f in enumerate(fps)], "fingerprint long, signature binary")
    a = spark.createDataFrame([(f,) for f in fps[:10] + fps[5:12]] + [(None,), (12345,)], "fingerprint long")
    b = spark.createDataFrame([(f,) for f in fps[40:45]] + [(None,)], "other long")
    wanted = distinct_fingerprints([a, b])
    assert sorted(r.fingerprint for r in wanted.collect()) == sorted(fps[:12] + fps[40:45] + [12345])
    want = sorted((f, bytes([i]) * 4) for i, f in enumerate(fps) if i < 12 or 40 <= i < 45)
    with scoped_settings(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
        for n, join in ((18, "BroadcastHashJoin"), (-1, "SortMergeJoin")):
            got = signatures_of(sigs, wanted, n)
            assert sorted((r.fingerprint, r.signature) for r in got.collect()) == want
            assert join in got._jdf.queryExecution().executedPlan().toString()
