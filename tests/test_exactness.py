"""The exactness promise on Spark: clusters == components of the brute-force 'distance <= k' graph."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from reference import brute_force_clusters, hamming, planted_fingerprints

from simhash_udf.job.stages import SearchSpecs, StageContext, StageTimer, near_duplicate_clusters
from simhash_udf.spark import blocks as pairs
from simhash_udf.spark.components import DRIVER_EDGES


@pytest.fixture(scope="module")
def cluster(spark, tmp_path_factory):
    spark.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("ckpt")))

    def run(ids, fps, k, blocks=None, partitions=3, driver_edges=DRIVER_EDGES, more_edges=None, timer=None):
        df = spark.createDataFrame(list(zip(ids, fps)), "id long, fingerprint long").repartition(partitions)
        docs = df.withColumn("rank", F.struct(F.col("id").alias("i")))
        persisted = []
        more = None if more_edges is None else spark.createDataFrame(more_edges, "src long, dst long")
        found = near_duplicate_clusters(docs, StageContext(
            SearchSpecs(k, blocks or 0, max_rounds=50, driver_edges=driver_edges), timer or StageTimer(),
            lambda d: persisted.append(d.cache()) or d.cache()), more)
        clusters, histogram, stats = found.clusters, found.histogram, found.stats
        rows = {r.id: (r.cluster_id, r.is_duplicate, r.fingerprint) for r in clusters.collect()}
        for d in persisted:
            d.unpersist()
        return rows, histogram, stats

    return run


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(0, 6),
    extra_blocks=st.integers(0, 2),
    n_centres=st.sampled_from([5, 40, 150]),
    driver_edges=st.sampled_from([0, DRIVER_EDGES]),
)
def test_clusters_equal_brute_force_components(cluster, seed, k, extra_blocks, n_centres, driver_edges):
    """Components found on the driver (the default for these sizes) or in Spark rounds (driver_edges 0)."""
    rng = np.random.default_rng(seed)
    fps = planted_fingerprints(rng, n_centres, k)  # distances 0..k+2 around each centre, repeats allowed
    ids = [int(i) for i in rng.permutation(len(fps)) * 3 + 1000]
    rows, histogram, stats = cluster(ids, fps, k, k + 1 + extra_blocks, driver_edges=driver_edges)
    expect = brute_force_clusters(ids, fps, k)
    assert {i: r[0] for i, r in rows.items()} == expect
    assert all(r[1] == (i != r[0]) for i, r in rows.items())
    assert sum(s * c for s, c in histogram.items()) == len(ids)  # every document exactly once
    assert stats.distinct_fingerprints == len(set(fps))


@pytest.mark.parametrize("driver_edges", [0, 1, DRIVER_EDGES])
def test_more_edges_of_unknown_count_join_clusters_the_same_way(cluster, driver_edges):
    """Edges from another source (as the short-text stage's) whose number is not given: the components stage counts
    them and, within driver_edges, finds the components on the driver, otherwise in Spark rounds; the clusters are
    the same. Two pairs within k, and one more edge joining the pairs (a distance of 20 bits) and a third page."""
    a, c, e = 0x0123456789ABCDEF, 0x7EDCBA9876543210, 0x5555555555555555
    fps = [a, a ^ 1, c, c ^ 2, e]
    timer = StageTimer()
    rows, histogram, stats = cluster([1, 2, 3, 4, 5], fps, 3, driver_edges=driver_edges,
                                    more_edges=[(a ^ 1, c), (e, c ^ 2)], timer=timer)
    assert {i: r[0] for i, r in rows.items()} == {i: 1 for i in range(1, 6)}
    assert histogram == {5: 1}
    on = "the driver" if driver_edges >= 4 else "Spark"  # 2 pairs within k and 2 more edges
    assert timer.counts["components"]["on"] == on


def test_pairs_just_outside_k_stay_apart(cluster):
    """Two fingerprints at distance k + 1 with no chain between them are never joined."""
    k = 3
    a = 0x0123456789ABCDEF
    b = a ^ 0b1111  # distance 4, all in block 0
    c = a ^ (1 | 1 << 20 | 1 << 40)  # distance 3, in three blocks
    rows, _, stats = cluster([1, 2, 3], [a, b, c], k)
    assert rows[1][0] == 1 and rows[3][0] == 1  # a ~ c
    assert rows[2][0] == 2 and not rows[2][1]  # b is distance 4 from a and 3+4 from c
    assert stats.candidates.pairs_accepted == 1


def test_exact_copies_never_enter_the_pair_stage(cluster):
    """1,000 mirrors of one page plus a near copy: one node in the pair search, one accepted pair."""
    a = -0x123456789ABCDEF
    ids = list(range(1000, 2000)) + [5]
    rows, histogram, stats = cluster(ids, [a] * 1000 + [a ^ 0b101], 3)
    assert stats.distinct_fingerprints == 2
    # the pair shares the keys of tables 1-3 (its two differing bits are in block 0): compared 3 times,
    # accepted once (in table 1, its first shared table)
    assert stats.candidates.pairs_compared == 3 and stats.candidates.pairs_accepted == 1
    assert histogram == {1001: 1}
    assert {r[0] for r in rows.values()} == {5}


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    plan=st.sampled_from([(3, 4), (6, 8), (2, 5), (1, 20)]),  # (1, 20): keys too wide to pack with the table
)
def test_groups_cut_across_arrow_batches_stay_exact(cluster, seed, plan):
    """With 3 rows per Arrow batch nearly every key group runs across batches; clusters stay exact."""
    k, m = plan
    rng = np.random.default_rng(seed)
    fps = planted_fingerprints(rng, 30, k)
    ids = [int(i) for i in rng.permutation(len(fps)) + 1]
    before, pairs.GROUP_BATCH_ROWS = pairs.GROUP_BATCH_ROWS, 3
    try:
        rows, _, stats = cluster(ids, fps, k, m)
    finally:
        pairs.GROUP_BATCH_ROWS = before
    assert {i: r[0] for i, r in rows.items()} == brute_force_clusters(ids, fps, k)
    n = len(set(fps))
    assert stats.candidates.pairs_accepted == sum(
        hamming(a, b) <= k for i, a in enumerate(sorted(set(fps))) for b in sorted(set(fps))[i + 1:]
    )
    assert 0 < stats.candidates.key_groups <= n * len(stats.table_plan.key_bits)
