"""Blocks and candidates, pure numpy: every pair within k is found, each exactly once, as a forest."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import components_of, hamming, planted_fingerprints, within_k_pairs

from simhash_udf.core.blocks import chance_pairs, plan_tables
from simhash_udf.core.candidates import _small_group_pairs, candidate_edges, key_groups, pair_filter, spanning_forest_edges
from simhash_udf.job.stages import chance_warning


def python_key_groups(fps, plan):
    """What the Spark blocks stage does, in plain Python: (table, sorted members) per shared key."""
    groups = {}
    for t, mask in enumerate(plan.table_masks()):
        for fp in set(fps):
            groups.setdefault((t, fp & mask), []).append(fp)
    return [(t, sorted(m)) for (t, _), m in sorted(groups.items()) if len(m) >= 2]


def run_candidates(fps, plan, small_group=256):
    groups = python_key_groups(fps, plan)
    members = np.array([fp for _, m in groups for fp in m], dtype=np.int64)
    offsets = np.r_[0, np.cumsum([len(m) for _, m in groups])]
    tables = np.array([t for t, _ in groups], dtype=np.int64)
    return groups, candidate_edges(members, offsets, tables, plan, small_group)


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(0, 6),
    extra_blocks=st.integers(0, 3),
    n_centres=st.integers(1, 40),
    small_group=st.sampled_from([2, 3, 256]),
)
def test_components_equal_brute_force(seed, k, extra_blocks, n_centres, small_group):
    rng = np.random.default_rng(seed)
    fps = sorted(set(planted_fingerprints(rng, n_centres, k)))
    plan = plan_tables(k, k + 1 + extra_blocks)
    groups, edges = run_candidates(fps, plan, small_group)
    truth = within_k_pairs(fps, k)
    # each pair within k is accepted exactly once, in its first shared table, and counted at its distance
    assert edges.accepted == len(truth)
    distances = [hamming(fps[i], fps[j]) for i, j in truth]
    assert edges.by_distance.tolist() == [distances.count(d) for d in range(k + 1)]
    assert edges.compared == sum(len(m) * (len(m) - 1) // 2 for _, m in groups)
    # the forest has the same connectivity as the brute-force graph
    expect = components_of(fps, [(fps[i], fps[j]) for i, j in truth])
    got = components_of(fps, zip(edges.src.tolist(), edges.dst.tolist()))
    assert got == expect
    # a forest per key group: never more edges than accepted pairs, nor than n - 1 per group
    assert len(edges.src) <= edges.accepted
    assert len(edges.src) <= sum(len(m) - 1 for _, m in groups)
    for a, b in zip(edges.src.tolist(), edges.dst.tolist()):
        assert hamming(a, b) <= k


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(0, 6), extra_blocks=st.integers(0, 2),
       sizes=st.lists(st.integers(2, 12), min_size=1, max_size=30))
def test_small_group_pairs_are_every_accepted_pair_in_order(seed, k, extra_blocks, sizes):
    """The vectorised comparison (groups of one size as matrix rows) against its definition pair by pair: every
    pair of a group within k whose first shared table is the group's, by group size, group and np.triu order."""
    rng = np.random.default_rng(seed)
    plan = plan_tables(k, k + 1 + extra_blocks)
    masks = plan.table_masks()
    members, tables = [], []
    for size in sizes:  # members near a random centre, so that pairs within k and first tables both vary
        centre = int(rng.integers(0, 2**64, dtype=np.uint64))
        tables.append(int(rng.integers(0, len(masks))))
        for _ in range(size):
            flips = rng.choice(64, size=int(rng.integers(0, 2 * k + 2)), replace=False)
            v = centre ^ sum(1 << int(b) for b in flips)
            members.append(v - (1 << 64) if v >> 63 else v)
    offsets = np.r_[0, np.cumsum(sizes)]
    u, t, starts, sz = key_groups(np.array(members, dtype=np.int64), offsets, np.array(tables))
    got_i, got_j = _small_group_pairs(u, starts, sz, t, pair_filter(plan))
    expect = []
    for g, size in sorted(enumerate(sizes), key=lambda gs: gs[1]):  # groups of one size together, smallest first
        s = int(offsets[g])
        for a in range(size):
            for b in range(a + 1, size):
                x, y = members[s + a], members[s + b]
                first = next((n for n, mask in enumerate(masks) if x & mask == y & mask), None)
                if hamming(x, y) <= k and first == tables[g]:
                    expect.append((s + a, s + b))
    assert list(zip(got_i.tolist(), got_j.tolist())) == expect


def test_pigeonhole_every_table_plan_shares_a_key():
    """For any pair of fingerprints within k, some table key is equal (exhaustive over small plans)."""
    rng = np.random.default_rng(1)
    for k in range(0, 7):
        for m in range(k + 1, k + 4):
            plan = plan_tables(k, m)
            masks = plan.table_masks()
            for _ in range(200):
                a = int(rng.integers(-(2**63), 2**63 - 1))
                bits = rng.choice(64, size=k, replace=False)
                b = a
                for bit in bits:
                    b ^= 1 << int(bit)
                b = (b + 2**63) % 2**64 - 2**63
                assert any((a & mask) == (b & mask) for mask in masks)


def test_default_plan_is_four_16_bit_blocks():
    plan = plan_tables(3)
    assert plan.describe()["block_widths"] == [16, 16, 16, 16]
    assert plan.key_bits() == [16, 16, 16, 16]
    assert [len(t) for t in plan.tables] == [1, 1, 1, 1]


@pytest.mark.parametrize("k,m", [(-1, None), (11, None), (3, 3), (3, 65), (6, 40), (1, 21), (0, 64)])
def test_impossible_plans_are_refused(k, m):
    with pytest.raises(ValueError):
        plan_tables(k, m)


def test_hot_key_of_20000_members_gives_a_spanning_forest():
    """20,000 distinct fingerprints within k of a centre, all in one key group: the group is compared in
    full, at most n - 1 edges come out, and the clusters match brute force."""
    k = 4  # (k = 3 allows only 18,473 distinct fingerprints within k of a centre that keep a 16-bit key)
    plan = plan_tables(k)
    key_width = plan.blocks[0][1]  # table 0's key is block 0: the low key_width bits
    rng = np.random.default_rng(7)
    centre = int(rng.integers(0, 2**63))
    fps = {centre}
    while len(fps) < 20_000:  # flip up to k of the bits outside table 0's key
        v = centre
        for b in rng.choice(np.arange(key_width, 64), size=int(rng.integers(1, k + 1)), replace=False):
            v ^= 1 << int(b)
        fps.add(v)
    fps = np.array(sorted(fps), dtype=np.uint64).view(np.int64)
    edges = candidate_edges(fps, [0, len(fps)], [0], plan)
    n = len(fps)
    assert edges.compared == n * (n - 1) // 2
    assert len(edges.src) == n - 1  # everything is connected through the centre
    got = components_of(fps.tolist(), zip(edges.src.tolist(), edges.dst.tolist()))
    assert set(got.values()) == {int(fps.min())}
    x = (edges.src ^ edges.dst).view(np.uint64)
    assert int(np.bitwise_count(x).max()) <= k
    # accepted pairs: brute force over the same group (pairs whose first shared table is table 0)
    u = fps.view(np.uint64)
    d = np.concatenate([np.bitwise_count(u[i] ^ u[i + 1 :]) for i in range(n)])
    assert edges.accepted == int(np.count_nonzero(d <= k))
    assert edges.by_distance.tolist() == np.bincount(d[d <= k], minlength=k + 1).tolist()


def test_spanning_forest_edges_keeps_only_joining_pairs():
    i = np.array([0, 1, 0, 3, 4, 5])
    j = np.array([1, 2, 2, 4, 5, 3])
    fi, fj = spanning_forest_edges(i, j)
    assert list(zip(fi.tolist(), fj.tolist())) == [(0, 1), (1, 2), (3, 4), (4, 5)]


def test_planner_widens_keys_as_n_grows():
    from simhash_udf.core.blocks import choose_plan, plan_cost

    assert choose_plan(1_000, 3).m == 4  # 4 x 16 bits for small crawls
    assert choose_plan(10**9, 3).m == 5  # 10 tables of 25-26-bit keys for a billion
    # against a history: keys wide enough that a day's keys are a small share of them (a day of 200,000 holds
    # every 16-bit key, so every history fingerprint would take part), and without one the same plan as before
    assert choose_plan(200_000, 3, 6_000_000).m == 5
    assert choose_plan(200_000, 3, 200_000).m == 4  # against one day of its size: measured faster with 4
    assert choose_plan(1_000_000, 3, 30_000_000).m == 6  # 20 tables: 283 s against 346 s with 10 (scripts/bench/history.py)
    assert all(choose_plan(n, 3, 0) == choose_plan(n, 3) for n in (10, 10**5, 10**7, 10**9))
    for n in (10**3, 10**6, 10**9):
        for k in range(0, 7):
            chosen = choose_plan(n, k)
            assert chosen.m >= k + 1
            costs = [plan_cost(n, plan_tables(k, m))["cost"] for m in range(k + 1, k + 6)]
            assert plan_cost(n, chosen)["cost"] <= min(costs)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 8), st.integers(0, 10**12), st.integers(0, 10**12))
def test_planner_blocks_grow_with_n_and_a_bound_below_the_first_change_fixes_the_plan(k, a, b):
    """The short-text stage plans from a bound on its fingerprints when the bound is below first_plan_change:
    that gives the exact n's plan only if the blocks never shrink as n grows."""
    from simhash_udf.core.blocks import choose_plan, first_plan_change

    lo, hi = sorted((a, b))
    assert choose_plan(lo, k).m <= choose_plan(hi, k).m
    first = first_plan_change(k)
    assert choose_plan(first - 1, k) == choose_plan(0, k)
    assert first == 1 << 63 or choose_plan(first, k) != choose_plan(0, k)
    if hi < first:
        assert choose_plan(lo, k) == choose_plan(hi, k) == choose_plan(0, k)


@pytest.mark.parametrize("k,m", [(0, 1), (3, 4), (3, 7), (6, 8), (6, 9), (2, 12)])
def test_first_table_lookup_is_the_first_table_whose_blocks_all_agree(k, m):
    plan = plan_tables(k, m)
    lookup = plan.first_table_lookup()
    for agree in range(1 << m):
        first = next((t for t, table in enumerate(plan.tables) if all(agree >> b & 1 for b in table)), -1)
        assert lookup[agree] == first


@settings(max_examples=40, deadline=None)
@given(f=st.integers(1, 10), k=st.integers(0, 12))
def test_chance_pairs_is_exact_when_every_value_is_drawn(f, k):
    """n = 2^f distinct f-bit fingerprints are all the values there are, so the expectation is the count."""
    assert chance_pairs(2**f, k, f) == pytest.approx(len(within_k_pairs(np.arange(2**f), k)))


def test_chance_pairs_matches_sampled_random_fingerprints():
    """Monte Carlo check at f = 16, k = 3: 400 random distinct fingerprints, 200 draws."""
    rng = np.random.default_rng(5)
    counts = []
    for _ in range(200):
        counts.append(len(within_k_pairs(rng.choice(2**16, size=400, replace=False), 3)))
    expected = chance_pairs(400, 3, 16)  # 79,800 pairs x 696 / 65,535 = 847.5
    assert abs(np.mean(counts) - expected) < 4 * np.std(counts) / np.sqrt(len(counts))
    assert chance_pairs(1, 6) == chance_pairs(0, 6) == 0.0
    assert chance_pairs(10**9, 6) == pytest.approx(2.26e6, rel=0.01)


def test_chance_warning_only_when_chance_pairs_matter():
    assert chance_warning(0.5, 0, 6, 10**5) is None          # less than one pair expected
    assert chance_warning(2.3, 86_103, 6, 10**6) is None     # 2.3 of 86,103 accepted: noise
    text = chance_warning(2.26e6, 5_000_000, 6, 10**9)
    assert text is not None and "2,260,000 of the 5,000,000 pairs within k = 6" in text and "--min-similarity 0.8" in text
