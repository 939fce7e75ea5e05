"""Related pages (core.related): the multi-index search against the brute-force definition (hypothesis), its
plan, and the chance-neighbour estimate."""
import functools
import itertools
import math
import operator

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from reference import brute_force_related, planted_fingerprints, planted_signatures

from simhash_udf.core.related import (
    MAX_COST_PER_PAGE,
    MIN_RECALL,
    RelatedPlan,
    approximate_plans,
    block_layout,
    chance_neighbours,
    exact_plan,
    first_block,
    hamming,
    missed_placements,
    plan_related,
    related_pages,
    table_layouts,
    within,
)
from simhash_udf.core.signature import SignatureSpec, similarity
from simhash_udf.spark.related import HOT_KEY_ROWS, index_rows, related_pairs, split_hot_keys


def as_rows(found: dict) -> list[tuple]:
    return sorted(zip(*(found[c].tolist() for c in ("id", "related_id", "distance", "rank"))))


def planted(seed: int, centres: int, spread: int) -> list[int]:
    return planted_fingerprints(np.random.default_rng(seed), centres, spread, max_extra=3)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), centres=st.integers(1, 12), distance=st.integers(1, 20),
       n=st.integers(0, 6), m=st.integers(2, 21), with_clusters=st.booleans())
def test_related_pages_match_brute_force(seed, centres, distance, n, m, with_clusters):
    """Any block count (not only the planner's) gives the exact top-n within distance: the pigeonhole with r
    errors per block leaves no pair out, and first_block keeps each pair once."""
    fps = planted(seed, centres, distance)
    ids = np.arange(len(fps)) * 7 % 101 + 1000 * np.arange(len(fps))  # distinct, not in fingerprint order
    rng = np.random.default_rng(seed)
    clusters = rng.integers(0, 3, len(fps)) if with_clusters else None
    plan = exact_plan(distance, min(m, distance + 1))
    assume(max(within(w, plan.radius) for w in plan.widths) <= 3000)  # the masks stay few
    found = as_rows(related_pages(ids, np.array(fps, np.int64), clusters, n, distance, plan))
    assert found == brute_force_related(ids.tolist(), fps, None if clusters is None else clusters.tolist(), n,
                                        distance)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 5))
def test_related_pages_properties_and_order_independence(seed, n):
    """Every pair within D, no self pair, none inside one cluster, ranks 1..k without gaps, and the same rows
    whatever the order of the input."""
    fps = np.array(planted(seed, 10, 14), np.int64)
    ids = np.array([f"p{i:03d}" for i in range(len(fps))])
    clusters = np.array([i // 3 for i in range(len(fps))])
    found = related_pages(ids, fps, clusters, n, 14)
    pos = {i: k for k, i in enumerate(ids)}
    for a, b, d, r in as_rows(found):
        assert a != b and clusters[pos[a]] != clusters[pos[b]]
        assert d == hamming(fps[pos[a]], fps[pos[b]]) <= 14 and 1 <= r <= n
    perm = np.random.default_rng(seed).permutation(len(fps))
    assert as_rows(related_pages(ids[perm], fps[perm], clusters[perm], n, 14)) == as_rows(found)


def test_hot_key_pages_are_all_found():
    """Many pages sharing every block key but one (a popular key): the search still returns each page's
    exact top n."""
    base = 0x0123456789ABCDEF
    fps = np.array([base ^ (i << 40) for i in range(200)], np.int64)
    ids = np.arange(200)
    got = as_rows(related_pages(ids, fps, None, 3, 6))
    assert got == brute_force_related(ids.tolist(), fps.tolist(), None, 3, 6)


def test_first_block_is_within_radius_for_every_pair_within_distance():
    rng = np.random.default_rng(1)
    plan = exact_plan(14, 4)
    a = rng.integers(-2**63, 2**63 - 1, 2000, dtype=np.int64)
    flips = [sum(1 << int(b) for b in rng.choice(64, int(rng.integers(0, 15)), replace=False)) for _ in a]
    b = a ^ np.array([f - (1 << 64) if f >= 1 << 63 else f for f in flips], np.int64)
    assert (first_block(a, b, plan) < len(plan.blocks)).all()


def test_plan_and_layout():
    assert sum(bin(m).count("1") for m in block_layout(5)) == 64 and block_layout(5)[1] == ((1 << 13) - 1) << 13
    for m, tables in [(4, 3), (5, 2), (7, 3)]:
        layout = table_layouts(m, tables)
        for t in range(tables):  # every table a partition of the 64 bits
            part = layout[t * m:(t + 1) * m]
            assert sum(bin(b).count("1") for b in part) == 64 and functools.reduce(operator.or_, part) == 2**64 - 1
    small, large = plan_related(1_000, 14), plan_related(10_000_000, 14, max_cost_per_page=float("inf"))
    assert small.radius == 14 // len(small.blocks) and large.radius == 14 // len(large.blocks)
    assert small.cost(1_000) <= exact_plan(14, 15).cost(1_000)
    # at 10M pages the plan probes more keys to meet fewer pages per key than the 15-block pigeonhole
    assert large.probes_per_page > 15 and large.expected_pairs(10**7) < exact_plan(14, 15).expected_pairs(10**7)


def test_chance_neighbours_by_the_formula_and_by_sampling():
    """(N - 1) * sum_{i <= D} C(64, i) / 2^64: ~3.5 chance neighbours within 14 bits at 10^6 random pages,
    ~3,500 at 10^9; and the same rate measured on random fingerprints at a radius where it is frequent."""
    assert math.isclose(chance_neighbours(10**6, 14), (10**6 - 1) * sum(math.comb(64, i) for i in range(15)) / 2**64)
    assert 3.4 < chance_neighbours(10**6, 14) < 3.6 and 3400 < chance_neighbours(10**9, 14) < 3600
    rng = np.random.default_rng(0)
    fps = rng.integers(-2**63, 2**63 - 1, 3000, dtype=np.int64)
    measured = ((hamming(fps[:, None], fps[None, :]) <= 24).sum() - len(fps)) / len(fps)
    assert math.isclose(measured, chance_neighbours(3000, 24), rel_tol=0.2)


def spark_pages(spark, ids, fps, clusters, sigs, partitions):
    rows = list(zip(ids, fps, clusters, sigs))
    schema = "id long, fingerprint long, cluster_id long, signature binary"
    return spark.createDataFrame(rows, schema).repartition(partitions)


@pytest.mark.parametrize("search, partitions, hot_key_rows", [("join", 1, HOT_KEY_ROWS), ("join", 4, 3), ("runs", 1, 0),
                                                              ("runs", 4, 0)])
def test_spark_related_pairs_match_brute_force_at_any_partitioning(spark, search, partitions, hot_key_rows):
    """Both searches give the brute-force top n at 1 and 4 partitions, the joins also with every key of more
    than 3 pages split (the hot-key path); similarity is the signatures' estimate, null where a page has none."""
    rng = np.random.default_rng(7)
    fps = planted_fingerprints(rng, 25, 14, max_extra=4)
    fps += [fps[0] ^ (1 << b) for b in range(20, 40)]  # a popular key: 20 pages one bit from the first
    ids = list(range(len(fps)))
    clusters = [i // 4 * 4 for i in ids]
    sigs = planted_signatures(rng, fps)
    sigs[3] = None
    plan = plan_related(len(fps), 14)
    got = spark_pages(spark, ids, fps, clusters, sigs, partitions).transform(
        lambda df: related_pairs(df, 4, plan, SignatureSpec(), search, hot_key_rows)).collect()
    assert sorted((r.id, r.related_id, r.distance, r.rank) for r in got) == brute_force_related(ids, fps, clusters, 4, 14)
    spec = SignatureSpec()
    for r in got:
        if 3 in (r.id, r.related_id):
            assert r.similarity is None
        else:
            want = similarity(np.frombuffer(sigs[r.id], np.uint8), np.frombuffer(sigs[r.related_id], np.uint8),
                              spec.bits)
            assert math.isclose(r.similarity, float(want))


def test_a_popular_key_is_split_so_no_join_group_gathers_its_pages(spark):
    """300 pages that share three of four 16-bit block keys (a popular key at any skew): every join group
    holds at most about hot_key_rows index rows (the splits are a hash of the id), and the related lists are
    still the brute-force ones."""
    rng = np.random.default_rng(11)
    base = int(rng.integers(0, 2**63))
    fps = [base ^ (int(v) << 16) for v in rng.choice(2**16, 300, replace=False)]  # only block 1 differs
    fps += [int(v) for v in rng.integers(-2**63, 2**63 - 1, 50, dtype=np.int64)]
    ids = list(range(len(fps)))
    pages = spark_pages(spark, ids, fps, ids, [None] * len(fps), 3)
    plan = exact_plan(14, 4)
    index, hot = split_hot_keys(index_rows(pages, plan), 40)
    groups = index.groupBy("block", "key", "split").count().agg(F.max("count"), F.count("*")).first()
    assert groups[0] <= 2 * 40 and hot.count() == 3  # the three shared keys, each over about 300 / 40 splits
    got = related_pairs(pages, 5, plan, SignatureSpec(), "join", 40).collect()
    assert sorted((r.id, r.related_id, r.distance, r.rank) for r in got) == brute_force_related(ids, fps, None, 5, 14)


@pytest.mark.parametrize("m, radius, d, tables", [(4, 2, 14, 1), (4, 1, 10, 1), (5, 1, 12, 2), (3, 3, 14, 1),
                                                  (4, 2, 14, 2), (4, 1, 14, 3)])
def test_approximate_recall_is_the_share_of_random_pairs_found(m, radius, d, tables):
    """RelatedPlan.recall_at(d) against pairs d bits apart at random places: the share that has a block within
    the radius (first_block finds one)."""
    rng = np.random.default_rng(m * 100 + radius)
    plan = RelatedPlan(14, table_layouts(m, tables), radius, tables)
    a = rng.integers(-2**63, 2**63 - 1, 20_000, dtype=np.int64)
    flips = np.array([sum(1 << int(b) for b in rng.choice(64, d, replace=False)) for _ in a], dtype=np.uint64)
    b = (a.view(np.uint64) ^ flips).view(np.int64)
    found = (first_block(a, b, plan) < len(plan.blocks)).mean()
    assert found == pytest.approx(plan.recall_at(d), abs=0.015)
    assert plan.recall_at(d) <= plan.recall_at(d - 1) <= 1.0


@settings(max_examples=200, deadline=None)
@given(bits=st.integers(4, 12), m=st.integers(2, 4), tables=st.integers(1, 3), radius=st.integers(0, 3),
       d=st.integers(0, 12), random_blocks=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_missed_placements_match_exhaustive_counting(bits, m, tables, radius, d, random_blocks, seed):
    """The recall's count of missed placements against every placement of d differing bits among `bits`, for
    the planner's arrangements and for arbitrary (overlapping, not covering) blocks."""
    assume(d <= bits and m <= bits)
    if random_blocks:
        rng = np.random.default_rng(seed)
        blocks = tuple(int(v) for v in rng.integers(1, 2**bits, m * tables))
    else:
        blocks = table_layouts(m, tables, bits)
    want = sum(all(sum(block >> b & 1 for b in placed) > radius for block in blocks)
               for placed in itertools.combinations(range(bits), d))
    assert missed_placements(blocks, radius, d, bits) == want


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), radius=st.integers(0, 2), tables=st.integers(1, 3))
def test_approximate_plan_lists_only_true_pairs_in_order(seed, radius, tables):
    """An approximate plan misses pairs but lists no wrong one: every listed pair is within D, ranks follow
    (distance, id) among what it found, and what it found is a subset of the exact pairs."""
    fps = np.array(planted(seed, 10, 14), np.int64)
    ids = np.arange(len(fps))
    plan = RelatedPlan(14, table_layouts(4, tables), radius, tables)
    approx = as_rows(related_pages(ids, fps, None, 50, 14, plan))
    exact = set(as_rows(related_pages(ids, fps, None, 50, 14)))
    assert {(a, b, d) for a, b, d, _ in approx} <= {(a, b, d) for a, b, d, _ in exact}
    for a in set(ids.tolist()):
        mine = sorted((r, d, b) for x, b, d, r in approx if x == a)
        assert [r for r, _, _ in mine] == list(range(1, len(mine) + 1))
        assert [(d, b) for _, d, b in mine] == sorted((d, b) for _, d, b in mine)


def test_planner_goes_approximate_only_beyond_its_budget():
    small, big = plan_related(100_000, 14), plan_related(1_000_000, 14)
    assert small.exact and small.describe()["expected_recall"] == 1.0
    assert not big.exact and MIN_RECALL <= big.recall_at(14) < 1.0 and big.describe()["kind"] == "approximate"
    assert big.tables > 1 and big.cost(10**6) < exact_plan(14, 4).cost(10**6)
    assert MAX_COST_PER_PAGE * 10**6 < min(exact_plan(14, m).cost(10**6) for m in range(2, 16))
    # no single table of blocks reaches the recall for less
    assert all(p.recall_at(14) < MIN_RECALL for p in approximate_plans(14)
               if p.tables == 1 and p.cost(10**6) <= big.cost(10**6))
    assert plan_related(1_000_000, 14, max_cost_per_page=1e9).exact


def test_spark_approximate_plan_gives_the_cores_rows(spark):
    """With an approximate plan (probe radius below D // blocks) both searches list what core.related lists
    with the same plan: the same misses, no other pair."""
    rng = np.random.default_rng(5)
    fps = planted_fingerprints(rng, 30, 14, max_extra=2)
    ids = list(range(len(fps)))
    plan = RelatedPlan(14, table_layouts(4, 2), 1, 2)
    want = as_rows(related_pages(np.array(ids), np.array(fps, np.int64), None, 50, 14, plan))
    for search in ("runs", "join"):
        got = related_pairs(spark_pages(spark, ids, fps, ids, [None] * len(fps), 3), 50, plan, SignatureSpec(),
                            search).collect()
        assert sorted((r.id, r.related_id, r.distance, r.rank) for r in got) == want
    assert len(want) < len(brute_force_related(ids, fps, None, 50, 14))  # it does miss pairs here
