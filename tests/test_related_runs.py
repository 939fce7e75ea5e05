"""The run-table search (core.related_runs) against the brute-force definition and against core.related's probe
search with the same plan (hypothesis), its pieces (packed keys, equal-key pairs, the one table that keeps a
pair, the bounded top n), and a popular key processed in chunks."""
import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import brute_force_related, planted_fingerprints

from simhash_udf.core.related import RelatedPlan, exact_plan, hamming, related_pages, table_layouts
from simhash_udf.core.related_runs import (
    TopN,
    canonical_table,
    equal_key_pairs,
    related_positions,
    run_tables,
    table_keys,
)


def rows(q, p, d, ids, n):
    """(id, related_id, distance, rank) of positions already in each page's order."""
    out, last, rank = [], None, 0
    for a, b, x in sorted(zip(q.tolist(), p.tolist(), d.tolist()), key=lambda t: (t[0], t[2], t[1])):
        rank = rank + 1 if a == last else 1
        last = a
        out.append((int(ids[a]), int(ids[b]), int(x), rank))
    assert all(r <= n for *_, r in out)
    return sorted(out)


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), centres=st.integers(1, 10), distance=st.integers(1, 18),
       n=st.integers(1, 5), m=st.integers(2, 19), tasks=st.integers(1, 5), chunk=st.sampled_from([3, 64, 1 << 20]),
       buffer=st.sampled_from([5, 1 << 22]), long_runs=st.sampled_from([0, 2, 256]), with_clusters=st.booleans(),
       min_column=st.sampled_from([0, 10**9]))
def test_exact_plans_give_the_brute_force_lists(seed, centres, distance, n, m, tasks, chunk, buffer, long_runs,
                                                with_clusters, min_column):
    """Any exact plan, any dealing of its tables to tasks, tiny chunks, a tiny top-n buffer and either way of
    comparing runs: each page's n nearest within D outside its cluster, ties by id (positions are id order)."""
    rng = np.random.default_rng(seed)
    fps = planted_fingerprints(rng, centres, distance, max_extra=4)
    ids = np.arange(len(fps)) * 3 + 5
    clusters = rng.integers(0, 3, len(fps)) if with_clusters else None
    plan = exact_plan(distance, min(m, distance + 1))
    if plan.run_table_count > 400:
        plan = exact_plan(distance, distance + 1)  # radius 0: one table a block
    q, p, d = related_positions(np.array(fps, np.int64), clusters, plan, n, tasks, chunk=chunk, buffer=buffer,
                                long_runs=long_runs, min_column=min_column)
    want = brute_force_related(ids.tolist(), fps, None if clusters is None else clusters.tolist(), n, distance)
    assert rows(q, p, d, ids, n) == want


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(3, 6), radius=st.integers(0, 2), tables=st.integers(1, 3),
       tasks=st.integers(1, 4))
def test_approximate_plans_find_what_the_probe_search_finds(seed, m, radius, tables, tasks):
    """An approximate plan's run tables find exactly the pairs its probes find (the same misses, no other
    pair), so the computed recall holds for the run search."""
    fps = np.array(planted_fingerprints(np.random.default_rng(seed), 12, 14, max_extra=3), np.int64)
    ids = np.arange(len(fps))
    plan = RelatedPlan(14, table_layouts(m, tables), min(radius, 14 // m - 1), tables)
    want = related_pages(ids, fps, None, 50, 14, plan)
    q, p, d = related_positions(fps, None, plan, 50, tasks)
    assert rows(q, p, d, ids, 50) == sorted(zip(*(want[c].tolist() for c in ("id", "related_id", "distance", "rank"))))


@settings(max_examples=100, deadline=None)
@given(mask=st.integers(1, 2**64 - 1), seed=st.integers(0, 2**32 - 1))
def test_table_keys_pack_the_masked_bits(mask, seed):
    fps = np.random.default_rng(seed).integers(-2**63, 2**63 - 1, 50, dtype=np.int64)
    positions = [b for b in range(64) if mask >> b & 1]
    want = [sum(((int(f) % 2**64) >> b & 1) << i for i, b in enumerate(positions)) for f in fps]
    assert table_keys(fps, mask).astype(np.uint64).tolist() == want


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), keys=st.integers(1, 6), pages=st.integers(0, 120), distance=st.integers(0, 64),
       chunk=st.sampled_from([1, 4, 1 << 20]), long_runs=st.sampled_from([0, 1, 3, 256]),
       min_column=st.sampled_from([0, 10**9]))
def test_equal_key_pairs_are_every_close_pair_of_a_key_once(seed, keys, pages, distance, chunk, long_runs, min_column):
    """Both ways of comparing runs (columns, offsets) give every pair of equal keys within the distance once."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, keys, pages).astype(np.uint16)
    fps = rng.integers(-2**63, 2**63 - 1, pages, dtype=np.int64) >> int(rng.integers(0, 60))
    found = [tuple(sorted(t)) for a, b in equal_key_pairs(k, fps, distance, chunk, long_runs, min_column)
             for t in zip(a.tolist(), b.tolist())]
    want = [(i, j) for i, j in itertools.combinations(range(pages), 2)
            if k[i] == k[j] and hamming(fps[i], fps[j]) <= distance]
    assert sorted(found) == want


def test_a_popular_key_is_compared_in_chunks():
    """3,000 pages of one key (a popular key) and a chunk of 100: every close pair is found, and no slice
    the search compares is longer than the chunk."""
    rng = np.random.default_rng(3)
    base = int(rng.integers(0, 2**62))
    fps = np.array([base ^ int(v) for v in rng.integers(0, 2**20, 3000)], np.int64)
    keys = np.zeros(3000, np.uint16)
    got = set()
    for a, b in equal_key_pairs(keys, fps, 4, chunk=100, long_runs=1, min_column=0):
        assert len(a) <= 100
        got.update(zip(a.tolist(), b.tolist()))
    d = hamming(fps[:, None], fps[None, :])
    assert len(got) == (np.triu(d <= 4, 1)).sum() > 0


@settings(max_examples=200, deadline=None)
@given(width=st.integers(1, 12), radius=st.integers(0, 3), xor=st.integers(0, 2**12 - 1), offset=st.integers(0, 52))
def test_one_table_of_a_block_keeps_each_pair_found_there(width, radius, xor, offset):
    """Among the tables of a block whose cleared bits cover where a pair differs in the block, exactly one keeps
    it (none where it differs in more than the radius)."""
    block = ((1 << width) - 1) << offset
    differ = (xor & ((1 << width) - 1)) << offset
    plan = RelatedPlan(14, (block,), radius)
    assert len(run_tables(plan)) == plan.run_table_count
    covering = [c for _, c in run_tables(plan) if differ & ~c == 0]
    kept = [c for c in covering if canonical_table(np.array([differ], np.uint64).view(np.int64), block, c)[0]]
    assert len(kept) == (1 if bin(differ).count("1") <= min(radius, width) else 0)


def test_top_n_reduces_in_bounded_memory_to_the_same_lists():
    rng = np.random.default_rng(9)
    q, p, d = (rng.integers(0, 40, 5000) for _ in range(3))
    small, whole = TopN(3, buffer=50), TopN(3)
    for i in range(0, 5000, 37):
        small.add(q[i:i + 37], p[i:i + 37], d[i:i + 37])
        assert small.rows <= 2 * 40 * 3 + 37  # twice n a page (40 pages) plus one addition
        whole.add(q[i:i + 37], p[i:i + 37], d[i:i + 37])
    assert [a.tolist() for a in small.result()] == [a.tolist() for a in whole.result()]
    want = sorted(zip(q.tolist(), d.tolist(), p.tolist()))
    firsts = [t for i, t in enumerate(want) if sum(1 for u in want[:i] if u[0] == t[0]) < 3]
    assert sorted(zip(*(a.tolist() for a in whole.result()))) == sorted((a, c, b) for a, b, c in firsts)
