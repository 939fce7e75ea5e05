"""Related pages: for every page the N nearest other pages within D bits of its 64-bit SimHash (D = 14 marks
pages on the same topic, where dedup uses 3), nearest first, ties by id, the page itself and pages of its own
cluster left out.

The search is multi-index hashing (Norouzi, Punjani and Fleet, 2012): the 64 bits are cut into m blocks;
two fingerprints within D bits differ in at most r = floor(D / m) bits of at least one block (the distances of
the blocks add up to at most D), so probing, for each block, every key within r bits of a page's own key finds
every pair within D. A pair found through several blocks is kept only at the first block where it is within r
(`first_block`), so each ordered pair is produced once without a de-duplicating shuffle. The plan (`plan_related`)
chooses m from the number of pages: few blocks mean many probes per page, many blocks mean narrow keys shared by
many pages. Where the exact plan costs more per page than the planner's budget, a smaller probe radius makes
it approximate; several arrangements of the bits (tables: consecutive bits, every m-th bit, a shifted cut) win
back what one arrangement misses, and the recall is counted exactly over the placements of a pair's differing
bits (missed_placements, RelatedPlan.recall_at) for --plan and the report. Blocks are bit masks, so every
arrangement is the same search; a pair is kept at its first block over all tables.

Fingerprints are int64 (the unsigned SimHash in two's complement, as the job stores them)."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

FINGERPRINT_BITS = 64
DEFAULT_RELATED_DISTANCE = 14
MAX_RELATED_DISTANCE = 32
# Probes per block beyond which a plan is not considered (the probe masks are a literal of every query row).
MAX_PROBES_PER_BLOCK = 20_000
# Pages up to which the search runs as numpy run tables (core.related_runs; its tasks hold every page's
# fingerprint and cluster code); beyond, as joins of probe rows (spark.related.join_search).
RUN_SEARCH_MAX_PAGES = 20_000_000
# In the join search a probe costs about as much as this many pair comparisons (a shuffled row against a
# filtered joined row).
PROBE_COST_IN_PAIRS = 4.0
# In the run search a table costs about as much per page as this many pair comparisons (packing its keys and a
# sort: ~100 ns a page against ~5 ns a comparison, measured at 10^6 pages).
TABLE_COST_IN_PAIRS = 20.0
# The planner's budget per page (in pair comparisons) beyond which an exact plan gives way to an approximate one:
# the run search's exact plan at D = 14 costs ~18,000 a page at 100,000 pages, ~116,000 at 10^6.
MAX_COST_PER_PAGE = 40_000.0
# An approximate plan must find at least this share of the pairs exactly `distance` bits apart.
MIN_RECALL = 0.95
# Arrangements of the bits an approximate plan may index (table_layouts).
MAX_TABLES = 3


def within(width: int, radius: int) -> int:
    """Keys within `radius` bits of one key of `width` bits: sum_{i <= radius} C(width, i)."""
    return sum(math.comb(width, i) for i in range(min(radius, width) + 1))


def chance_neighbours(pages: int, distance: int, bits: int = FINGERPRINT_BITS) -> float:
    """Expected other pages within `distance` bits of one page among `pages` uniformly random fingerprints:
    (pages - 1) * sum_{i <= D} C(bits, i) / 2^bits. Where this reaches ~1, related lists hold chance pages."""
    return max(pages - 1, 0) * within(bits, distance) / 2.0**bits


def bit_count(mask: int) -> int:
    return bin(mask).count("1")


def signed(mask: int) -> int:
    """A 64-bit mask as the int64 of the same bits (two's complement), as Spark and numpy hold it."""
    return mask - (1 << 64) if mask >= 1 << 63 else mask


@lru_cache(maxsize=4096)
def missed_placements(blocks: tuple[int, ...], radius: int, d: int, bits: int = FINGERPRINT_BITS) -> int:
    """Of the C(bits, d) ways to place d differing bits, the number that put more than `radius` of them in every
    block (the pairs a plan of these blocks misses). Blocks are bit masks and may overlap (several tables):
    a walk over the bits, whose states are the differing bits placed so far and, per block still open, how
    many of them fell in it (capped at radius + 1); a block that closes under the cap ends its placements."""
    last = [mask.bit_length() - 1 for mask in blocks]
    cap = radius + 1
    states = {(0, (0,) * len(blocks)): 1}
    for b in range(bits):
        inside = [j for j, mask in enumerate(blocks) if mask >> b & 1]
        closing = [j for j in inside if last[j] == b]
        nxt: dict[tuple[int, tuple[int, ...]], int] = {}
        for (placed, counts), ways in states.items():
            taken = list(counts)
            for j in inside:
                taken[j] = min(cap, taken[j] + 1)
            for key in ((placed, counts), (placed + 1, tuple(taken))):
                if key[0] <= d and all(key[1][j] == cap for j in closing):
                    nxt[key] = nxt.get(key, 0) + ways
        states = nxt
    return sum(ways for (placed, _), ways in states.items() if placed == d)


@dataclass(frozen=True)
class RelatedPlan:
    """A multi-index plan: `blocks` as bit masks, `tables` arrangements of the 64 bits after one another (each a
    partition into the same number of blocks), every block probed within `radius`. Exact when radius =
    distance // (blocks of a table), the pigeonhole; with a smaller radius it is approximate: a pair is found
    only when some block of some table differs in at most `radius` bits, with the probability `recall_at`.
    More tables (other arrangements of the bits) raise that probability at the cost of their probes."""
    distance: int
    blocks: tuple[int, ...]
    radius: int
    tables: int = 1

    @property
    def blocks_per_table(self) -> int:
        return len(self.blocks) // self.tables

    @property
    def exact(self) -> bool:
        return self.radius >= self.distance // self.blocks_per_table

    @property
    def widths(self) -> list[int]:
        return [bit_count(mask) for mask in self.blocks]

    def recall_at(self, d: int) -> float:
        """The chance that a pair d bits apart (its differing bits anywhere, all placements alike) has a block
        within the radius, so that the search finds it: 1 - missed placements / C(64, d), counted exactly."""
        if self.exact and d <= self.distance:
            return 1.0
        return 1.0 - missed_placements(self.blocks, self.radius, d) / math.comb(FINGERPRINT_BITS, d)

    @property
    def probes_per_page(self) -> int:
        return sum(within(w, self.radius) for w in self.widths)

    def expected_pairs(self, pages: int) -> float:
        """Pairs a probe meets on uniformly random fingerprints (all blocks, before the distance check)."""
        return pages * sum(within(w, self.radius) * max(pages - 1, 0) / 2.0**w for w in self.widths)

    @property
    def run_table_count(self) -> int:
        """Run tables of the run search (core.related_runs.run_tables): per block, C(width, radius)."""
        return sum(math.comb(w, min(self.radius, w)) for w in self.widths)

    def run_comparisons(self, pages: int) -> float:
        """Pair comparisons of the run tables on uniformly random fingerprints: per table, the unordered pairs of
        pages sharing a key of (width - radius) bits."""
        return sum(math.comb(w, min(self.radius, w)) * pages * max(pages - 1, 0) / 2.0 ** (w - min(self.radius, w))
                   for w in self.widths) / 2

    def cost(self, pages: int) -> float:
        """The search's cost in pair comparisons: the run search's tables and comparisons up to
        RUN_SEARCH_MAX_PAGES pages, the join search's probe rows and the pairs they meet beyond."""
        if search_for(pages) == "runs":
            return TABLE_COST_IN_PAIRS * pages * self.run_table_count + self.run_comparisons(pages)
        return PROBE_COST_IN_PAIRS * pages * self.probes_per_page + self.expected_pairs(pages)

    def masks(self, block: int) -> np.ndarray:
        """The probe masks of block `block`: every set of at most `radius` of its bits (0 first), as int64."""
        positions = [b for b in range(FINGERPRINT_BITS) if self.blocks[block] >> b & 1]
        out = [0]
        for r in range(1, min(self.radius, len(positions)) + 1):
            out.extend(sum(1 << b for b in bits) for bits in itertools.combinations(positions, r))
        return np.array([signed(m) for m in out], dtype=np.int64)

    def describe(self) -> dict:
        return {"kind": "exact" if self.exact else "approximate", "distance": self.distance,
                "tables": self.tables, "blocks": len(self.blocks), "block_bits": self.widths,
                "probe_radius": self.radius, "probes_per_page": self.probes_per_page,
                "expected_recall": self.recall_at(self.distance)}


def search_for(pages: int) -> str:
    """The search the related stage uses for this many pages: "runs" or "join"."""
    return "runs" if pages <= RUN_SEARCH_MAX_PAGES else "join"


def block_layout(m: int, bits: int = FINGERPRINT_BITS, offset: int = 0) -> tuple[int, ...]:
    """m blocks of nearly equal width of consecutive bits (from bit `offset`, around the end), as masks, the
    wider ones first."""
    widths = [bits // m + (1 if i < bits % m else 0) for i in range(m)]
    starts = [offset + sum(widths[:i]) for i in range(m)]
    return tuple(sum(1 << ((s + i) % bits) for i in range(w)) for s, w in zip(starts, widths))


def interleaved_layout(m: int, bits: int = FINGERPRINT_BITS) -> tuple[int, ...]:
    """m blocks taking every m-th bit (block j holds the bits b with b % m == j): each meets every block of
    block_layout(m) in about bits / m^2 bits, so the differing bits of a pair spread differently over them."""
    return tuple(sum(1 << b for b in range(j, bits, m)) for j in range(m))


def table_layouts(m: int, tables: int, bits: int = FINGERPRINT_BITS) -> tuple[int, ...]:
    """The blocks of `tables` arrangements of m blocks each: consecutive bits, then every m-th bit, then
    consecutive bits shifted by half a block."""
    arrangements = [block_layout(m, bits), interleaved_layout(m, bits), block_layout(m, bits, bits // m // 2)]
    return tuple(mask for layout in arrangements[:tables] for mask in layout)


def exact_plan(distance: int, m: int) -> RelatedPlan:
    return RelatedPlan(distance, block_layout(m), distance // m)


def _usable(plan: RelatedPlan) -> bool:
    return max(within(w, plan.radius) for w in plan.widths) <= MAX_PROBES_PER_BLOCK


def approximate_plans(distance: int) -> list[RelatedPlan]:
    """Every plan of 1..MAX_TABLES tables of m blocks probed within a radius below distance // m."""
    return [p for m in range(2, distance + 2) for r in range(distance // m) for t in range(1, MAX_TABLES + 1)
            if _usable(p := RelatedPlan(distance, table_layouts(m, t), r, t))]


def plan_related(pages: int, distance: int = DEFAULT_RELATED_DISTANCE,
                 max_cost_per_page: float = MAX_COST_PER_PAGE, min_recall: float = MIN_RECALL) -> RelatedPlan:
    """The cheapest exact plan for `pages` pages at `distance` (block counts whose probes per block stay under
    MAX_PROBES_PER_BLOCK, by cost: probes plus expected key-sharing pairs; ties to fewer blocks) while its cost
    per page is within max_cost_per_page; beyond, the cheapest approximate plan whose recall at `distance` is
    at least min_recall, when one is cheaper than the exact plan (else the exact plan)."""
    check_distance(distance)
    n = max(pages, 2)
    exact = min((p for p in (exact_plan(distance, m) for m in range(2, distance + 2)) if _usable(p)),
                key=lambda p: (p.cost(n), len(p.blocks)))
    if exact.cost(n) <= max_cost_per_page * n:
        return exact
    cheaper = sorted((p for p in approximate_plans(distance) if p.cost(n) < exact.cost(n)), key=lambda p: p.cost(n))
    return next((p for p in cheaper if p.recall_at(distance) >= min_recall), exact)


def check_distance(distance: int) -> None:
    if not 1 <= distance <= MAX_RELATED_DISTANCE:
        raise ValueError(f"related distance {distance} is not in 1..{MAX_RELATED_DISTANCE}")


def block_keys(fps: np.ndarray, mask: int) -> np.ndarray:
    """The block's bits of each fingerprint (the fingerprint AND the block's mask, int64)."""
    return np.bitwise_and(np.asarray(fps, dtype=np.int64), np.int64(signed(mask)))


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """popcount(a XOR b) of int64 fingerprints, elementwise (on the unsigned view: numpy counts a signed
    integer's absolute value)."""
    x = np.bitwise_xor(np.asarray(a, np.int64), np.asarray(b, np.int64))
    return np.bitwise_count(x.view(np.uint64)).astype(np.int64)


def first_block(a: np.ndarray, b: np.ndarray, plan: RelatedPlan) -> np.ndarray:
    """The first block (over all tables) where a and b differ in at most plan.radius bits (len(plan.blocks)
    where none does): the one block through which the search keeps the pair."""
    x = np.bitwise_xor(np.asarray(a, np.int64), np.asarray(b, np.int64))
    out = np.full(x.shape, len(plan.blocks), dtype=np.int64)
    for j in reversed(range(len(plan.blocks))):
        out[np.bitwise_count(block_keys(x, plan.blocks[j]).view(np.uint64)) <= plan.radius] = j
    return out


def candidate_pairs(fps: np.ndarray, plan: RelatedPlan) -> tuple[np.ndarray, np.ndarray]:
    """Ordered index pairs (i, j), i != j, within plan.distance, each once: per block, each page's probe keys
    meet the pages holding them (a sort and searchsorted, no all-pairs matrix)."""
    fps = np.asarray(fps, dtype=np.int64)
    left, right = [], []
    for j, mask in enumerate(plan.blocks):
        keys = block_keys(fps, mask)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        for probe_mask in plan.masks(j):
            probe = keys ^ probe_mask
            lo, hi = np.searchsorted(sorted_keys, probe, "left"), np.searchsorted(sorted_keys, probe, "right")
            counts = hi - lo
            q = np.repeat(np.arange(len(fps)), counts)
            starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
            p = order[starts + np.arange(counts.sum())] if counts.sum() else np.zeros(0, np.int64)
            keep = (q != p) & (hamming(fps[q], fps[p]) <= plan.distance)
            q, p = q[keep], p[keep]
            keep = first_block(fps[q], fps[p], plan) == j
            left.append(q[keep])
            right.append(p[keep])
    if not left:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(left), np.concatenate(right)


def top_related(ids: np.ndarray, q: np.ndarray, p: np.ndarray, dist: np.ndarray, n: int) -> np.ndarray:
    """Of the ordered pairs (q, p) at `dist`, each q's first n by (distance, id of p): the positions kept and
    their rank (1 = nearest), as an (k x 2) array [pair position, rank]."""
    ids = np.asarray(ids)
    _, id_order = np.unique(ids, return_inverse=True)
    order = np.lexsort((id_order[p], dist, id_order[q]))
    qs = q[order]
    starts = np.r_[0, np.flatnonzero(qs[1:] != qs[:-1]) + 1] if len(qs) else np.zeros(0, np.int64)
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(qs)]))
    rank = np.arange(len(qs)) - group_start + 1
    keep = rank <= n
    return np.column_stack([order[keep], rank[keep]])


def related_pages(ids: np.ndarray, fps: np.ndarray, clusters: np.ndarray | None, n: int,
                  distance: int = DEFAULT_RELATED_DISTANCE, plan: RelatedPlan | None = None) -> dict[str, np.ndarray]:
    """For every page the n nearest other pages within `distance` bits, outside its own cluster (clusters:
    the pages' cluster ids, None for no clusters): columns id, related_id, distance, rank (1 = nearest; ties
    by related id), rows ordered by id then rank. ids must be distinct."""
    ids, fps = np.asarray(ids), np.asarray(fps, dtype=np.int64)
    plan = plan or plan_related(len(ids), distance)
    if plan.distance != distance:
        raise ValueError(f"plan is for distance {plan.distance}, not {distance}")
    q, p = candidate_pairs(fps, plan)
    if clusters is not None:
        clusters = np.asarray(clusters)
        keep = clusters[q] != clusters[p]
        q, p = q[keep], p[keep]
    dist = hamming(fps[q], fps[p])
    chosen = top_related(ids, q, p, dist, n) if n > 0 else np.zeros((0, 2), np.int64)
    at, rank = chosen[:, 0], chosen[:, 1]
    return {"id": ids[q[at]], "related_id": ids[p[at]], "distance": dist[at], "rank": rank}
