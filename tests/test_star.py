"""Chaining control (--cluster-mode star): every duplicate is within k of its kept page; greedy centres in keep
order; equal to a brute-force reference on Spark, whatever the partitioning."""
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from reference import brute_force_clusters, brute_force_star, check_kept_fp_and_shape, planted_fingerprints, shape_reference

from simhash_udf.core.star import star_centres
from simhash_udf.job.stages import SearchSpecs, StageContext, StageTimer, near_duplicate_clusters


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=60), st.integers(0, 8))
def test_star_centres_are_greedy(values, k):
    fps = np.array(values, dtype=np.uint64)
    centre = star_centres(fps, k)
    d = lambda a, b: int(np.bitwise_count(fps[a] ^ fps[b]))  # noqa: E731
    centres = sorted(set(centre.tolist()))
    for i, c in enumerate(centre.tolist()):
        assert d(i, c) <= k  # within k of its centre
        assert centre[c] == c  # a centre is its own
        assert c == min(x for x in centres if x <= i and d(i, x) <= k)  # the first centre that reaches it
    for a in centres:  # a centre is not within k of any earlier centre
        assert all(d(a, b) > k for b in centres if b < a)


@pytest.fixture(scope="module")
def cluster(spark, tmp_path_factory):
    spark.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("ckpt")))

    def run(ids, fps, k, mode, partitions=3):
        df = spark.createDataFrame(list(zip(ids, fps)), "id long, fingerprint long").repartition(partitions)
        docs = df.withColumn("rank", F.struct(F.col("id").alias("i")))
        persisted = []
        found = near_duplicate_clusters(docs, StageContext(
            SearchSpecs(k, cluster_mode=mode, max_rounds=50), StageTimer(),
            lambda d: persisted.append(d.cache()) or d.cache()))
        collected = found.clusters.collect()
        rows = {r.id: r.cluster_id for r in collected}
        check_kept_fp_and_shape(collected, found.histogram, found.stats)
        # without signatures a duplicate's similarity to its kept page is known only for a copy of its fingerprint
        assert [r.similarity for r in collected] == [
            (1.0 if r.fingerprint == r.kept_fp else None) if r.is_duplicate else None for r in collected]
        for d in persisted:
            d.unpersist()
        return rows

    return run


def test_a_chain_is_cut_in_star_mode(cluster):
    a = 0
    b = a ^ 0b111  # 3 bits from a
    c = b ^ (0b111 << 10)  # 3 bits from b, 6 from a
    ids, fps = [1, 2, 3, 4], [a, b, c, c]
    assert cluster(ids, fps, 3, "transitive") == {1: 1, 2: 1, 3: 1, 4: 1}
    assert cluster(ids, fps, 3, "star") == {1: 1, 2: 1, 3: 3, 4: 3}


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 5), partitions=st.sampled_from([1, 4]))
def test_star_equals_brute_force(cluster, seed, k, partitions):
    rng = np.random.default_rng(seed)
    fps = planted_fingerprints(rng, 30, k, max_extra=k)  # long chains: variants up to 2k from a centre
    ids = [int(i) for i in rng.permutation(len(fps)) + 1]
    got = cluster(ids, fps, k, "star", partitions)
    assert got == brute_force_star(ids, fps, k)
    transitive = brute_force_clusters(ids, fps, k)
    assert len(set(got.values())) >= len(set(transitive.values()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 5), st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))), max_size=6,
                unique_by=lambda t: t[0]),
       st.lists(st.tuples(st.integers(0, 7), st.one_of(st.none(), st.integers(0, 255))), max_size=40))
@example(pages=[(1, -5)], members=[(1, 1), (1, 3), (1, None), (7, 0)])  # distances 1 and 2, and an earlier run's
def test_cluster_shape_equals_its_definition(spark, pages, members):
    """The report's cluster sizes and chaining distances equal their definition, for kept pages absent from the
    rows (an earlier run's: cluster ids 6-7, and 0-5 when not drawn) and fingerprints missing on either side.
    kept_fp (every resolve adds it) is the kept page's fingerprint, null when the kept page is not among the rows;
    a kept page with duplicates always has a fingerprint (duplicates are found through fingerprints)."""
    from simhash_udf.spark.clusters import cluster_shape

    with_dups = {cid for cid, _ in members}
    rows = [(i, i, False, 0 if fp is None and i in with_dups else fp) for i, fp in pages]
    base = {i: fp for i, _, _, fp in rows}
    rows += [(100 + j, cid, True, None if low is None else (base.get(cid) or 0) ^ low) for j, (cid, low) in enumerate(members)]
    df = spark.createDataFrame([(*r, base.get(r[1])) for r in rows],
                               "id long, cluster_id long, is_duplicate boolean, fingerprint long, kept_fp long")
    assert cluster_shape(df.repartition(3)) == shape_reference(rows)


def test_an_id_that_comes_back_on_a_later_day_is_two_clusters(spark):
    """With --history and ids such as URLs, today's kept page u1 and an earlier run's u1 (a different page of
    the same URL) are two clusters; grouped by cluster_id alone the report made them one of three pages."""
    from simhash_udf.spark.clusters import cluster_shape

    rows = [("u1", "u1", False, 0b1, 0b1, "2026-11-27"),  # today's u1, kept
            ("u3", "u1", True, 0b11, 0b1, "2026-11-27"),  # a near copy of it
            ("u2", "u1", True, 0b1100, None, "2026-11-26"),  # a copy of yesterday's u1 (kept in the history)
            ("u4", "u4", False, 0b10000, 0b10000, "2026-11-27")]
    df = spark.createDataFrame(rows, "id string, cluster_id string, is_duplicate boolean, fingerprint long, "
                                     "kept_fp long, kept_run_date string")
    shape = cluster_shape(df.repartition(2))
    assert shape == ({2: 1, 1: 2}, {1: 1}, 0)
    assert shape == shape_reference([((i, d), (c, d), dup, fp) for i, c, dup, fp, _, d in rows])
