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
it approximate, with a recall computed exactly (RelatedPlan.recall_at) for the report.

Fingerprints are int64 (the unsigned SimHash in two's complement, as the job stores them)."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

FINGERPRINT_BITS = 64
DEFAULT_RELATED_DISTANCE = 14
MAX_RELATED_DISTANCE = 32
# Probes per block beyond which a plan is not considered (the probe masks are a literal of every query row).
MAX_PROBES_PER_BLOCK = 20_000
# A probe costs about as much as this many pair comparisons (a shuffled row against a filtered joined row).
PROBE_COST_IN_PAIRS = 4.0
# The planner's budget per page (in pair comparisons) beyond which an exact plan gives way to an approximate one:
# at 100,000 pages the exact plan at D = 14 costs ~8,000 a page, at 10^6 ~54,000.
MAX_COST_PER_PAGE = 20_000.0


def within(width: int, radius: int) -> int:
    """Keys within `radius` bits of one key of `width` bits: sum_{i <= radius} C(width, i)."""
    return sum(math.comb(width, i) for i in range(min(radius, width) + 1))


def chance_neighbours(pages: int, distance: int, bits: int = FINGERPRINT_BITS) -> float:
    """Expected other pages within `distance` bits of one page among `pages` uniformly random fingerprints:
    (pages - 1) * sum_{i <= D} C(bits, i) / 2^bits. Where this reaches ~1, related lists hold chance pages."""
    return max(pages - 1, 0) * within(bits, distance) / 2.0**bits


@dataclass(frozen=True)
class RelatedPlan:
    """A multi-index plan: `blocks` as (shift, width) from the low bits up, probed within `radius`. Exact when
    radius = distance // blocks (the pigeonhole); with a smaller radius it is approximate: a pair is found only
    when some block differs in at most `radius` bits, with the probability `recall_at`."""
    distance: int
    blocks: tuple[tuple[int, int], ...]
    radius: int

    @property
    def exact(self) -> bool:
        return self.radius >= self.distance // len(self.blocks)

    def recall_at(self, d: int) -> float:
        """The chance that a pair d bits apart (its differing bits anywhere, all placements alike) has a block
        within the radius, so that the search finds it: 1 - placements with every block over the radius / C(64, d),
        counted block by block."""
        ways = {0: 1}  # differing bits placed so far -> placements with every block so far over the radius
        for _, width in self.blocks:
            nxt: dict[int, int] = {}
            for placed, count in ways.items():
                for c in range(self.radius + 1, width + 1):
                    if placed + c <= d:
                        nxt[placed + c] = nxt.get(placed + c, 0) + count * math.comb(width, c)
            ways = nxt
        return 1.0 - ways.get(d, 0) / math.comb(sum(w for _, w in self.blocks), d)

    @property
    def probes_per_page(self) -> int:
        return sum(within(w, self.radius) for _, w in self.blocks)

    def expected_pairs(self, pages: int) -> float:
        """Pairs a probe meets on uniformly random fingerprints (all blocks, before the distance check)."""
        return pages * sum(within(w, self.radius) * max(pages - 1, 0) / 2.0**w for _, w in self.blocks)

    def cost(self, pages: int) -> float:
        return PROBE_COST_IN_PAIRS * pages * self.probes_per_page + self.expected_pairs(pages)

    def masks(self, width: int) -> np.ndarray:
        """The probe masks of a block of `width` bits: every value with at most `radius` bits set (0 first)."""
        out = [0]
        for r in range(1, min(self.radius, width) + 1):
            out.extend(sum(1 << b for b in bits) for bits in itertools.combinations(range(width), r))
        return np.array(out, dtype=np.int64)

    def describe(self) -> dict:
        return {"kind": "exact" if self.exact else "approximate", "distance": self.distance,
                "blocks": len(self.blocks), "block_bits": [w for _, w in self.blocks], "probe_radius": self.radius,
                "probes_per_page": self.probes_per_page, "expected_recall": self.recall_at(self.distance)}


def block_layout(m: int, bits: int = FINGERPRINT_BITS) -> tuple[tuple[int, int], ...]:
    """m blocks of nearly equal width covering `bits` bits, as (shift, width), the wider ones first."""
    widths = [bits // m + (1 if i < bits % m else 0) for i in range(m)]
    shifts = [sum(widths[:i]) for i in range(m)]
    return tuple(zip(shifts, widths))


def exact_plan(distance: int, m: int) -> RelatedPlan:
    return RelatedPlan(distance, block_layout(m), distance // m)


def _usable(plan: RelatedPlan) -> bool:
    return (max(w for _, w in plan.blocks) <= 32
            and max(within(w, plan.radius) for _, w in plan.blocks) <= MAX_PROBES_PER_BLOCK)


def plan_related(pages: int, distance: int = DEFAULT_RELATED_DISTANCE,
                 max_cost_per_page: float = MAX_COST_PER_PAGE) -> RelatedPlan:
    """The cheapest exact plan for `pages` pages at `distance` (block counts whose keys fit 32 bits and whose
    probes per block stay under MAX_PROBES_PER_BLOCK, by cost: probes plus expected key-sharing pairs; ties to
    fewer blocks) while its cost per page is within max_cost_per_page; beyond, the approximate plan (a smaller
    probe radius) of the best recall at `distance` within that cost, or the cheapest one if none is."""
    check_distance(distance)
    n = max(pages, 2)
    exact = min((p for p in (exact_plan(distance, m) for m in range(2, distance + 2)) if _usable(p)),
                key=lambda p: (p.cost(n), len(p.blocks)))
    if exact.cost(n) <= max_cost_per_page * n:
        return exact
    approximate = [RelatedPlan(distance, block_layout(m), r) for m in range(2, distance + 2)
                   for r in range(distance // m)]
    approximate = [p for p in approximate if _usable(p)]
    affordable = [p for p in approximate if p.cost(n) <= max_cost_per_page * n]
    if not affordable:
        return min(approximate, key=lambda p: p.cost(n))
    return max(affordable, key=lambda p: (round(p.recall_at(distance), 6), -p.cost(n)))


def check_distance(distance: int) -> None:
    if not 1 <= distance <= MAX_RELATED_DISTANCE:
        raise ValueError(f"related distance {distance} is not in 1..{MAX_RELATED_DISTANCE}")


def block_keys(fps: np.ndarray, shift: int, width: int) -> np.ndarray:
    """The block's value of each fingerprint (int64, non-negative)."""
    u = np.asarray(fps, dtype=np.int64).view(np.uint64)
    return ((u >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.int64)


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """popcount(a XOR b) of int64 fingerprints, elementwise (on the unsigned view: numpy counts a signed
    integer's absolute value)."""
    x = np.bitwise_xor(np.asarray(a, np.int64), np.asarray(b, np.int64))
    return np.bitwise_count(x.view(np.uint64)).astype(np.int64)


def first_block(a: np.ndarray, b: np.ndarray, plan: RelatedPlan) -> np.ndarray:
    """The first block where a and b differ in at most plan.radius bits (len(plan.blocks) where none does):
    the one block through which the search keeps the pair."""
    x = np.bitwise_xor(np.asarray(a, np.int64), np.asarray(b, np.int64))
    out = np.full(x.shape, len(plan.blocks), dtype=np.int64)
    for j in reversed(range(len(plan.blocks))):
        shift, width = plan.blocks[j]
        out[np.bitwise_count(block_keys(x, shift, width)) <= plan.radius] = j
    return out


def candidate_pairs(fps: np.ndarray, plan: RelatedPlan) -> tuple[np.ndarray, np.ndarray]:
    """Ordered index pairs (i, j), i != j, within plan.distance, each once: per block, each page's probe keys
    meet the pages holding them (a sort and searchsorted, no all-pairs matrix)."""
    fps = np.asarray(fps, dtype=np.int64)
    left, right = [], []
    for j, (shift, width) in enumerate(plan.blocks):
        keys = block_keys(fps, shift, width)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        for mask in plan.masks(width):
            probe = keys ^ mask
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
