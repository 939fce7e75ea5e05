"""Candidate pairs inside key groups, reduced to a spanning forest (pure numpy, no Spark).

A key group holds the distinct fingerprints that share one table's key. Every pair in it is compared with
popcount(a XOR b) <= k; a pair is accepted only if this table is the first one in which the pair shares a
key (see blocks.py), so across all tables each pair within distance k is accepted exactly once. Only a
spanning forest of the accepted pairs is emitted: connectivity is all the components stage needs, and a
hot key with n members then costs at most n - 1 edges instead of n^2 / 2.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .blocks import TablePlan

SMALL_GROUP = 256  # groups up to this size compare all pairs in one vectorised pass
_PAIRS_PER_CHUNK = 1 << 20  # pairs a vectorised pass holds at once (~8 MB of XORs)


@dataclass
class EdgeBatch:
    src: np.ndarray  # int64 fingerprints
    dst: np.ndarray
    compared: int  # pairs compared (each pair of members of a group once)
    accepted: int  # pairs within k accepted in their first shared table
    by_distance: np.ndarray  # accepted pairs by Hamming distance 0..k (int64, sums to accepted)


class PairFilter:
    """popcount(a ^ b) <= k and 'this table is the pair's first shared table', vectorised."""

    def __init__(self, plan: TablePlan):
        self.k = plan.k
        self.lookup = plan.first_table_lookup()
        self.block_masks = np.array([plan.block_mask(b) for b in range(plan.m)], dtype=np.uint64)

    def accept(self, x: np.ndarray, table: np.ndarray | int) -> np.ndarray:
        """x: XORs of pairs (any shape); table: the table of each pair, an int or an array that broadcasts to
        x's shape (one table per row of a 2-D x, as a column)."""
        ok = np.bitwise_count(x) <= self.k
        hit = np.flatnonzero(ok)  # flat: np.nonzero of a 2-D array costs ~40x more a pair
        if len(hit):
            xs = np.take(x, hit)
            agree = np.zeros(len(xs), dtype=np.int64)
            for b, mask in enumerate(self.block_masks):
                agree |= ((xs & mask) == 0).astype(np.int64) << b
            if isinstance(table, np.ndarray):
                table = np.broadcast_to(table, x.shape)[np.unravel_index(hit, x.shape)]
            np.put(ok, hit, self.lookup[agree] == table)
        return ok


@lru_cache(maxsize=8)
def pair_filter(plan: TablePlan) -> PairFilter:
    """One filter per plan and Python worker (its lookup has 2^m entries)."""
    return PairFilter(plan)


def key_groups(members, offsets, tables) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arrays of many key groups in the forms the comparisons use: members as uint64, the table of each
    group, each group's start and size."""
    members = np.asarray(members)
    members = members.view(np.uint64) if members.dtype == np.int64 else members.astype(np.uint64)
    offsets = np.asarray(offsets, dtype=np.int64)
    return members, np.asarray(tables, dtype=np.int64), offsets[:-1], np.diff(offsets)


def spanning_forest_edges(i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (i, j) that join two trees when added in order (union-find): a spanning forest."""
    parent: dict[int, int] = {}

    def find(a: int) -> int:
        root = a
        while parent.get(root, root) != root:
            root = parent[root]
        while a != root:  # path compression
            parent[a], a = root, parent.get(a, a)
        return root

    keep = np.zeros(len(i), dtype=bool)
    for n, (a, b) in enumerate(zip(i.tolist(), j.tolist())):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
            keep[n] = True
    return i[keep], j[keep]


def _small_group_pairs(members, starts, sizes, tables, filt: PairFilter):
    """Accepted pairs (flat member indices) of groups small enough to compare all at once, by group size,
    group and np.triu_indices order. The groups of one size are the rows of a matrix, and each
    row's pairs are two gathers along it, about half the cost per pair of index arrays into all members."""
    out_i, out_j = [], []
    for s in np.unique(sizes):
        s = int(s)
        iu, ju = np.triu_indices(s, 1)
        sel = np.flatnonzero(sizes == s)
        per_chunk = max(1, _PAIRS_PER_CHUNK // len(iu))
        for c in range(0, len(sel), per_chunk):
            g = sel[c : c + per_chunk]
            rows = starts[g][:, None] + np.arange(s)  # (groups, s) member indices
            m = members[rows]
            x = np.take(m, iu, axis=1)  # C order (m[:, iu] is not, and flattening it would copy it)
            x ^= np.take(m, ju, axis=1)
            gg, p = np.divmod(np.flatnonzero(filt.accept(x, tables[g][:, None])), len(iu))
            out_i.append(rows[gg, iu[p]])
            out_j.append(rows[gg, ju[p]])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_i), np.concatenate(out_j)


def big_group_accepted(fps: np.ndarray, table: int, filt: PairFilter, rows_per_chunk: int = 512):
    """One large group's accepted pairs counted by Hamming distance, and which members have one (a mask):
    by blocks of rows, so memory stays O(n * rows_per_chunk) however many pairs are accepted."""
    n = len(fps)
    total = np.zeros(filt.k + 1, dtype=np.int64)
    involved = np.zeros(n, dtype=bool)
    for a in range(0, n, rows_per_chunk):
        b = min(a + rows_per_chunk, n)
        x = fps[a:b, None] ^ fps[None, :]
        upper = np.arange(a, b)[:, None] < np.arange(n)[None, :]
        ok = np.zeros(x.shape, dtype=bool)
        ok[upper] = filt.accept(x[upper], table)
        total += np.bincount(np.bitwise_count(x[ok]), minlength=filt.k + 1)[: filt.k + 1]
        involved[a:b] |= ok.any(axis=1)
        involved |= ok.any(axis=0)
    return total, involved


def accepted_members(members: np.ndarray, offsets: np.ndarray, tables: np.ndarray, plan: TablePlan,
                     small_group: int = SMALL_GROUP) -> tuple[np.ndarray, int, np.ndarray]:
    """Which members of many key groups have at least one accepted pair in their group (a mask), the pairs
    compared and the accepted pairs by Hamming distance 0..k: the first pass of the verified search, which
    sends on only those members (with their group) to be verified."""
    members, tables, starts, sizes = key_groups(members, offsets, tables)
    filt = pair_filter(plan)
    small = (sizes >= 2) & (sizes <= small_group)
    i, j = _small_group_pairs(members, starts[small], sizes[small], tables[small], filt)
    involved = np.zeros(len(members), dtype=bool)
    involved[i] = involved[j] = True
    by_distance = np.bincount(np.bitwise_count(members[i] ^ members[j]), minlength=plan.k + 1)[: plan.k + 1].astype(np.int64)
    for g in np.flatnonzero(sizes > small_group):
        s, e = int(starts[g]), int(starts[g] + sizes[g])
        counts, inv = big_group_accepted(members[s:e], int(tables[g]), filt)
        by_distance += counts
        involved[s:e] |= inv
    return involved, int((sizes * (sizes - 1) // 2).sum()), by_distance


def bfs_forest(fps: np.ndarray, table: int, filt: PairFilter, verify=None) -> tuple[np.ndarray, np.ndarray]:
    """Spanning forest of one large group by breadth-first search: each member is expanded once against
    the members not yet reached, so memory stays O(n) and at most n - 1 edges come out. verify(u, idx), if
    given, says which of the accepted pairs (u, idx) may be edges."""
    n = len(fps)
    unreached = np.arange(n)
    src, dst = [], []
    while len(unreached):
        root, unreached = unreached[0], unreached[1:]
        queue = [root]
        while queue and len(unreached):
            u = queue.pop()
            ok = filt.accept(fps[u] ^ fps[unreached], table)
            if verify is not None and ok.any():
                ok[ok] = verify(u, unreached[ok])
            if ok.any():
                reached = unreached[ok]
                unreached = unreached[~ok]
                src.append(np.full(len(reached), u))
                dst.append(reached)
                queue.extend(reached.tolist())
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src), np.concatenate(dst)


def candidate_edges(
    members: np.ndarray, offsets: np.ndarray, tables: np.ndarray, plan: TablePlan, small_group: int = SMALL_GROUP
) -> EdgeBatch:
    """Spanning-forest edges of many key groups at once.

    members: the distinct fingerprints (int64 or uint64) of all groups one after another; offsets: group g
    owns members[offsets[g]:offsets[g+1]]; tables: the table index of each group.
    """
    members, tables, starts, sizes = key_groups(members, offsets, tables)
    filt = pair_filter(plan)
    compared = int((sizes * (sizes - 1) // 2).sum())

    small = (sizes >= 2) & (sizes <= small_group)
    i, j = _small_group_pairs(members, starts[small], sizes[small], tables[small], filt)
    by_distance = np.bincount(np.bitwise_count(members[i] ^ members[j]), minlength=plan.k + 1)[: plan.k + 1]
    by_distance = by_distance.astype(np.int64)
    fi, fj = spanning_forest_edges(i, j)
    src, dst = [members[fi]], [members[fj]]

    for g in np.flatnonzero(sizes > small_group):
        fps = members[starts[g] : starts[g] + sizes[g]]
        by_distance += big_group_accepted(fps, int(tables[g]), filt)[0]
        bi, bj = bfs_forest(fps, int(tables[g]), filt)
        src.append(fps[bi])
        dst.append(fps[bj])
    return EdgeBatch(
        src=np.concatenate(src).view(np.int64),
        dst=np.concatenate(dst).view(np.int64),
        compared=compared,
        accepted=int(by_distance.sum()),
        by_distance=by_distance,
    )


def candidate_pairs(
    members: np.ndarray, offsets: np.ndarray, tables: np.ndarray, plan: TablePlan, small_group: int = SMALL_GROUP,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Every accepted pair of many key groups (not a forest): for callers that check each pair again, like
    the short-text mode's Jaccard verification. Same inputs as candidate_edges; returns (src, dst, compared)
    with src < dst as unsigned fingerprints, each pair once across all tables."""
    members, tables, starts, sizes = key_groups(members, offsets, tables)
    filt = pair_filter(plan)
    small = (sizes >= 2) & (sizes <= small_group)
    i, j = _small_group_pairs(members, starts[small], sizes[small], tables[small], filt)
    src, dst = [members[i]], [members[j]]
    for g in np.flatnonzero(sizes > small_group):  # by blocks of rows, about _PAIRS_PER_CHUNK pairs each
        fps, n = members[starts[g] : starts[g] + sizes[g]], int(sizes[g])
        rows = max(1, _PAIRS_PER_CHUNK // n)
        for a in range(0, n, rows):
            b = min(a + rows, n)
            ii, jj = np.nonzero(np.arange(a, b)[:, None] < np.arange(a, n)[None, :])
            ii, jj = ii + a, jj + a
            ok = filt.accept(fps[ii] ^ fps[jj], int(tables[g]))
            src.append(fps[ii[ok]])
            dst.append(fps[jj[ok]])
    s, d = np.concatenate(src), np.concatenate(dst)
    lo, hi = np.minimum(s, d), np.maximum(s, d)
    return lo.view(np.int64), hi.view(np.int64), int((sizes * (sizes - 1) // 2).sum())
