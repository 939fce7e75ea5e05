"""Related pages searched in sorted runs: core.related's plan carried out with contiguous numpy slices instead of
probes, so that a task compares pages without materialising probe copies or candidate pairs as rows.

A block probed within r bits finds the pairs whose block keys differ in at most r bits. Every such pair has
equal keys once some r of the block's bits are cleared from both (the bits where they differ, padded with
others): so the plan's search is, per block, one *run table* for each set of min(r, width) bits of the block,
keyed by the block's other bits. A table is sorted by key; the pages of one key form a run, and every pair inside
a run is compared by comparing each page with the page s places after it, for s = 1, 2, ..., the runs ordered
from the longest so that the runs still longer than s are a prefix: each step is a few passes over contiguous
arrays, processed in chunks of bounded length, so memory stays bounded whatever the size of one run (a popular
key costs time, the pairs it holds, never memory beyond its pages).

A pair is found in several tables (every table whose cleared bits cover where the pair differs in the block,
and every block within r); it is kept once, at the first block within r (core.related.first_block) and, in that
block, at the one table whose cleared bits are the bits where the pair differs there plus the lowest others
(`canonical_table`). Pages are positions in id order, so ties by position are ties by id; a task keeps each
page's n nearest of what its tables found (`TopN`), and the n nearest overall are among the tasks' lists."""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from .related import FINGERPRINT_BITS, RelatedPlan, first_block, hamming

# Elements per slice of a run-table step: bounds a step's temporaries (a few arrays of this length), small enough
# to stay in cache (one 10^6-page table: 0.25 s in slices of 2^16, 0.39 s in slices of 2^20).
CHUNK = 1 << 16
# Found pairs buffered before a task reduces them to each page's n nearest.
PAIR_BUFFER = 1 << 22
# The longest runs of a table, compared by offsets (long_run_pairs); the rest column by column, so that a
# column pair is at least this many comparisons and one popular key does not make every column short.
LONG_RUNS = 256
# The fewest runs compared column by column: a column pair costs a few numpy calls, so short columns are slower
# than offsets (measured, one table: 2,048 runs of ~50 pages 6x slower; 4,096 runs of ~240 pages 1.2x slower).
MIN_COLUMN = 16_384
# Found pairs checked together (first block, canonical table, cluster).
BATCH = 1 << 16


def run_tables(plan: RelatedPlan) -> list[tuple[int, int]]:
    """(block, cleared bits as a mask) of every run table of the plan: for each block, every set of
    min(radius, width) of its bits."""
    out = []
    for j, mask in enumerate(plan.blocks):
        positions = [b for b in range(FINGERPRINT_BITS) if mask >> b & 1]
        for bits in itertools.combinations(positions, min(plan.radius, len(positions))):
            out.append((j, sum(1 << b for b in bits)))
    return out


def table_keys(fps: np.ndarray, mask: int) -> np.ndarray:
    """The bits of `mask` of each fingerprint packed into a small unsigned integer (runs of consecutive bits
    moved by one shift each)."""
    u = np.asarray(fps, np.int64).view(np.uint64)
    positions = [b for b in range(FINGERPRINT_BITS) if mask >> b & 1]
    key = np.zeros(len(u), np.uint64)
    at = 0
    for _, run in itertools.groupby(enumerate(positions), lambda t: t[1] - t[0]):
        run = [b for _, b in run]
        key |= ((u >> np.uint64(run[0])) & np.uint64((1 << len(run)) - 1)) << np.uint64(at)
        at += len(run)
    return key.astype(np.uint16) if at <= 16 else key.astype(np.uint32) if at <= 32 else key


def equal_key_pairs(keys: np.ndarray, fps: np.ndarray, distance: int, chunk: int = CHUNK, long_runs: int = LONG_RUNS,
                    min_column: int = MIN_COLUMN) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Position pairs (a, b), each unordered pair once, of pages with equal keys whose fingerprints are within
    `distance` bits. The runs of a sort by key, longest first: the many short runs column by column (column i
    holds the i-th page of every run longer than i, a prefix of the runs, so columns i and j compare as two
    contiguous slices, every comparison a pair of one run); the `long_runs` longest runs, or all where fewer
    than `min_column` would be left for columns, by offsets in chunks (`long_run_pairs`), so that a popular key
    neither makes every column short nor gathers its pairs at once."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    sizes = np.diff(np.r_[starts, len(keys)])
    longest = np.argsort(-sizes, kind="stable")
    starts, sizes = starts[longest], sizes[longest]
    runs = int(np.searchsorted(-sizes, -1, side="left"))  # runs of two pages or more
    long = min(long_runs, runs) if runs - long_runs >= min_column else runs  # short columns: offsets for all
    if long:
        yield from long_run_pairs(order, starts[:long], sizes[:long], fps, distance, chunk)
    starts, sizes = starts[long:runs], sizes[long:runs]
    if not len(sizes):
        return
    f = np.asarray(fps, np.int64).view(np.uint64)
    columns = [order[starts[: np.searchsorted(-sizes, -i, side="left")] + i] for i in range(int(sizes[0]))]
    values = [f[c] for c in columns]
    longest_column = len(values[0])
    xor, bits, near = (np.empty(longest_column, t) for t in (np.uint64, np.uint8, bool))
    for j in range(1, len(columns)):
        m = len(values[j])
        for i in range(j):  # into buffers: a column pair is a few thousand comparisons, allocations would show
            np.bitwise_count(np.bitwise_xor(values[i][:m], values[j], out=xor[:m]), out=bits[:m])
            if np.less_equal(bits[:m], distance, out=near[:m]).any():
                hit = np.flatnonzero(near[:m])
                yield columns[i][hit], columns[j][hit]


def long_run_pairs(order: np.ndarray, starts: np.ndarray, sizes: np.ndarray, fps: np.ndarray, distance: int,
                   chunk: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The pairs within `distance` inside the given runs (longest first): every page against the page s places
    after it, s = 1, 2, ..., over the prefix of runs still longer than s, in slices of at most `chunk`."""
    members = order[np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())]
    run_of = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    f = np.asarray(fps, np.int64)[members].view(np.uint64)
    ends = np.cumsum(sizes)
    for s in range(1, int(sizes[0])):
        prefix = int(ends[np.searchsorted(-sizes, -s, side="left") - 1])
        for lo in range(0, prefix - s, chunk):
            hi = min(lo + chunk, prefix - s)
            hit = np.flatnonzero(np.bitwise_count(f[lo:hi] ^ f[lo + s:hi + s]) <= distance) + lo
            hit = hit[run_of[hit] == run_of[hit + s]]
            if len(hit):
                yield members[hit], members[hit + s]


def fill_down(x: np.ndarray) -> np.ndarray:
    """Every bit at or below the highest set bit of each value (uint64)."""
    for shift in (1, 2, 4, 8, 16, 32):
        x = x | (x >> np.uint64(shift))
    return x


def canonical_table(xor: np.ndarray, block: int, cleared: int) -> np.ndarray:
    """Whether `cleared` is the one table of the block that keeps a pair of this XOR (found there, so the
    block's differing bits are among the cleared ones): the differing bits plus the lowest other bits."""
    u = np.asarray(xor, np.int64).view(np.uint64)
    differ = u & np.uint64(block)
    padding = np.uint64(cleared) & ~differ
    others = np.uint64(block) & ~differ
    return (others & fill_down(padding)) == padding


class TopN:
    """Each query page's n nearest (distance, then position) of the ordered pairs added, in bounded memory:
    pairs are buffered and reduced to n per page whenever the buffer exceeds `buffer` rows or twice what the
    last reduction kept (at most n per page), whichever is more."""

    def __init__(self, n: int, buffer: int = PAIR_BUFFER):
        self.n, self.buffer = n, buffer
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.rows = self.kept = 0

    def add(self, q: np.ndarray, p: np.ndarray, d: np.ndarray) -> None:
        self.parts.append((q, p, d))
        self.rows += len(q)
        if self.rows > max(self.buffer, 2 * self.kept):
            self.parts = [self.result()]
            self.rows = self.kept = len(self.parts[0][0])

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        q, p, d = (np.concatenate(c) for c in zip(*self.parts))
        order = np.lexsort((p, d, q))
        q, p, d = q[order], p[order], d[order]
        starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if len(q) else np.zeros(0, np.int64)
        rank = np.arange(len(q)) - np.repeat(starts, np.diff(np.r_[starts, len(q)]))
        keep = rank < self.n
        return q[keep], p[keep], d[keep]


def search_tables(fps: np.ndarray, clusters: np.ndarray | None, plan: RelatedPlan, tables: Sequence[tuple[int, int]],
                  n: int, chunk: int = CHUNK, buffer: int = PAIR_BUFFER, long_runs: int = LONG_RUNS,
                  min_column: int = MIN_COLUMN) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query position, related position, distance): each page's n nearest of the pairs that the given run
    tables keep (within plan.distance, other clusters, each pair at its one table), both directions."""
    fps = np.asarray(fps, np.int64)
    top = TopN(n, buffer)
    for j, cleared in tables:
        keys = table_keys(fps, plan.blocks[j] & ~cleared)
        for a, b in batched(equal_key_pairs(keys, fps, plan.distance, chunk, long_runs, min_column)):
            keep = (first_block(fps[a], fps[b], plan) == j) & canonical_table(fps[a] ^ fps[b], plan.blocks[j], cleared)
            if clusters is not None:
                keep &= clusters[a] != clusters[b]
            a, b = a[keep], b[keep]
            d = hamming(fps[a], fps[b])
            top.add(np.r_[a, b], np.r_[b, a], np.r_[d, d])
    return top.result()


def batched(pairs: Iterator[tuple[np.ndarray, np.ndarray]], rows: int = BATCH) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The pair arrays joined into batches of about `rows` pairs (the checks after the search cost a few numpy
    calls per batch, not per column pair)."""
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    held = 0
    for a, b in pairs:
        parts.append((a, b))
        held += len(a)
        if held >= rows:
            yield np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])
            parts, held = [], 0
    if parts:
        yield np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])


def related_positions(fps: np.ndarray, clusters: np.ndarray | None, plan: RelatedPlan, n: int, tasks: int = 1,
                      **limits) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The whole search in one process (the run tables dealt to `tasks` lists as the Spark search deals them,
    then merged): each page's n nearest by (distance, position). limits: search_tables' chunk, buffer, long_runs,
    min_column."""
    parts = [search_tables(fps, clusters, plan, t, n, **limits) for t in deal(run_tables(plan), tasks)]
    top = TopN(n)
    for part in parts:
        top.add(*part)
    return top.result()


def deal(tables: list[tuple[int, int]], tasks: int) -> list[list[tuple[int, int]]]:
    """The run tables dealt round-robin to at most `tasks` non-empty lists."""
    return [tables[i::tasks] for i in range(min(tasks, len(tables)))]
