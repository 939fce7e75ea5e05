"""Table plans: which bits of a fingerprint form the key of each table (pure Python, no Spark).

Split the f = 64 bits into m >= k + 1 contiguous blocks. Two fingerprints within Hamming distance k differ
in at most k blocks, so they agree on at least m - k blocks; making every choice of m - k blocks one table
(C(m, k) tables) guarantees that such a pair shares the key of at least one table (Manku, Jain and Das
Sarma, WWW 2007). A table's key is the fingerprint AND a mask of its blocks' bits, so in Spark it is one
column expression. Each pair is accepted only in the *first* table whose key it shares, so a pair is
counted once and never yields duplicate edges.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from math import comb

import numpy as np

BITS = 64  # fingerprint width
MAX_K = 10
# bytes of one row of a key-group search as shuffled packed (spark/packed_groups.py): key (int64) and member
# fingerprint (int64); the table or band index goes as runs (a few bytes a packed value); job/sizing.py prices
# the shuffle with it
PACKED_ROW_BYTES = 8 + 8
MAX_TABLES = 512
MAX_BLOCKS = 20  # the first-shared-table lookup has 2^m entries (2 MB at m = 20)


@dataclass(frozen=True)
class TablePlan:
    k: int
    blocks: tuple[tuple[int, int], ...]  # (first bit, width) per block, low bits first
    tables: tuple[tuple[int, ...], ...]  # block indices that form each table's key

    @property
    def m(self) -> int:
        return len(self.blocks)

    def block_mask(self, b: int) -> int:
        start, width = self.blocks[b]
        return ((1 << width) - 1) << start

    def table_masks(self) -> list[int]:
        """Key mask of each table as a signed int64 (usable as a Spark literal)."""
        masks = []
        for table in self.tables:
            mask = 0
            for b in table:
                mask |= self.block_mask(b)
            masks.append(mask - (1 << 64) if mask >= 1 << 63 else mask)
        return masks

    def key_bits(self) -> list[int]:
        return [sum(self.blocks[b][1] for b in table) for table in self.tables]

    def first_table_lookup(self) -> np.ndarray:
        """For each m-bit set of agreeing blocks, the first table whose blocks all agree (-1: none)."""
        lookup = np.full(1 << self.m, -1, dtype=np.int16)
        agree = np.arange(1 << self.m, dtype=np.int64)
        for t in reversed(range(len(self.tables))):  # later tables first, so the first one wins
            bits = sum(1 << b for b in self.tables[t])
            lookup[(agree & bits) == bits] = t
        return lookup

    def describe(self) -> dict:
        return {
            "f": BITS,
            "k": self.k,
            "blocks": self.m,
            "block_widths": [w for _, w in self.blocks],
            "tables": len(self.tables),
            "key_bits": self.key_bits(),
            "table_blocks": [list(t) for t in self.tables],
        }


def packed_key_shift(plan: TablePlan) -> int | None:
    """Bit position of the table index in a packed key, or None when table index + key bits exceed 64."""
    table_bits = (len(plan.tables) - 1).bit_length()
    if max(plan.key_bits()) + table_bits > BITS:
        return None
    return BITS - table_bits


def table_keys(fingerprints: np.ndarray, plan: TablePlan) -> np.ndarray:
    """(tables, n) int64: the key of each fingerprint in each table, as the search groups them: the table
    index in the top bits and the table's blocks side by side below (packed_key_shift), or the masked
    fingerprint when that does not fit (then the table index tells the tables apart). The same values as
    spark/blocks.key_expressions, so rows made here and rows made in SQL meet in one group."""
    fps = fingerprints.astype(np.int64, copy=False).view(np.uint64)
    out = np.empty((len(plan.tables), len(fps)), dtype=np.uint64)
    shift, masks = packed_key_shift(plan), np.array(plan.table_masks(), dtype=np.int64).view(np.uint64)
    for t, table in enumerate(plan.tables):
        if shift is None:
            out[t] = fps & masks[t]
            continue
        key = np.full(len(fps), np.uint64(t << shift) if shift < BITS else np.uint64(0), dtype=np.uint64)
        offset = 0
        for b in table:
            start, width = plan.blocks[b]
            key |= ((fps >> np.uint64(start)) & np.uint64((1 << width) - 1)) << np.uint64(offset)
            offset += width
        out[t] = key
    return out.view(np.int64)


def check_k(k: int) -> None:
    if not 0 <= k <= MAX_K:
        raise ValueError(
            f"k={k} is outside 0..{MAX_K}: a 64-bit SimHash cannot be blocked into tables with useful keys "
            f"for larger distances (and k < 0 means nothing); pass --k between 0 and {MAX_K}"
        )


# Cost model of the planner, in units of "one shuffled block row". Comparing one candidate pair is a few
# nanoseconds of numpy inside a group, shuffling one (table, key, fingerprint) row is about a microsecond.
COMPARISONS_PER_ROW = 256


def plan_cost(n: int, plan: TablePlan) -> dict:
    """Exploded rows and expected candidate comparisons for n distinct, uniformly spread fingerprints."""
    rows = n * len(plan.tables)
    pairs = sum(n * (n - 1) / 2 / 2.0**bits for bits in plan.key_bits())
    return {"rows": rows, "expected_comparisons": pairs, "cost": rows + pairs / COMPARISONS_PER_ROW}


def chance_pairs(n: int, k: int, f: int = 64) -> float:
    """Expected number of pairs within k bits among n distinct, uniformly random f-bit fingerprints.

    A floor on the job's chance joins: real unrelated pages of one language agree on more bits than random
    ones. It grows with n squared, which is why k must shrink (or star clusters be used) as a history grows:
    about 2.3 pairs per 10^6 fingerprints at k = 6, 2.3 million per 10^9."""
    if n < 2:
        return 0.0
    within = sum(comb(f, d) for d in range(1, min(k, f) + 1))
    return n * (n - 1) / 2 * within / (2.0**f - 1)


# With --history, per history fingerprint: each of its table keys is only tested against a Bloom filter of
# the run's keys in numpy (key_filter.py: ~0.07 us of CPU a key against ~1 us for a shuffled row), while a
# history fingerprint that shares a key with the run is read with its signature and cluster, joins the key
# groups and is a fixed centre of resolve (~5 rows). 5 keeps a day against one day of its size at 4 x 16-bit
# tables (faster there than 10), and gives a day of 10^6 pages against 3 x 10^7 history rows 20 tables of
# 30-33-bit keys: 643,440 history fingerprints share a key instead of 6 million with 10 tables
# (scripts/bench/history.py).
HISTORY_PROBE_ROWS = 0.05
HISTORY_RELATED_ROWS = 5


def history_plan_cost(n: int, n_history: int, plan: TablePlan) -> dict:
    """plan_cost of a run of n distinct fingerprints searched against n_history fingerprints of earlier runs:
    the run's own rows and pairs, the history's rows probed, the history fingerprints expected to share a key
    with the run (all of them when the run holds every key of a table), and the cross comparisons."""
    own = plan_cost(n, plan)
    if n_history <= 0:
        return {**own, "history_related": 0.0, "cross_comparisons": 0.0}
    bits = plan.key_bits()
    missed = 1.0
    for b in bits:
        missed *= max(0.0, 1.0 - n / 2.0**b)  # no fingerprint of the run has this history key
    related = n_history * (1.0 - missed)
    cross = sum(n * n_history / 2.0**b for b in bits)
    cost = (own["cost"] + n_history * len(plan.tables) * HISTORY_PROBE_ROWS + related * HISTORY_RELATED_ROWS
            + cross / COMPARISONS_PER_ROW)
    return {**own, "history_related": related, "cross_comparisons": cross, "cost": cost}


def choose_plan(n: int, k: int, n_history: int = 0) -> TablePlan:
    """The plan with m in k+1 .. MAX_BLOCKS blocks that minimises exploded rows plus expected comparisons for n
    distinct fingerprints (Manku et al.: more tables with wider keys as n grows). With n_history fingerprints
    of earlier runs (--history) the cost is history_plan_cost: keys wide enough that the run's keys are a
    small share of them, so that only a few history fingerprints take part in the search."""
    check_k(k)
    best = None
    for m in range(k + 1, MAX_BLOCKS + 1):
        if comb(m, k) > MAX_TABLES:
            break
        plan = plan_tables(k, m)
        cost = history_plan_cost(n, n_history, plan)["cost"]
        if best is None or cost < best[0]:
            best = (cost, plan)
    return best[1]


@lru_cache(maxsize=None)
def first_plan_change(k: int) -> int:
    """The smallest n whose choose_plan(n, k) differs from choose_plan(0, k): every smaller n has that plan (the
    plan's blocks grow with n, tests/test_candidates.py), so a bound below it fixes the plan without the exact n."""
    small, n = choose_plan(0, k), 1
    while choose_plan(n, k) == small:
        if n >= 1 << 62:
            return 1 << 63  # one plan for every n (k = 0)
        n *= 2
    lo, hi = n // 2, n  # choose_plan(lo) is the small plan, choose_plan(hi) is not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if choose_plan(mid, k) == small else (lo, mid)
    return hi


def plan_tables(k: int, m: int | None = None) -> TablePlan:
    """Blocks and tables for distance k with m blocks (default k + 1: 4 x 16 bits for k = 3)."""
    check_k(k)
    m = k + 1 if m is None or m == 0 else m
    if not k + 1 <= m <= MAX_BLOCKS:
        raise ValueError(f"--blocks {m} cannot guarantee distance k={k} (or needs a 2^{m}-entry table lookup): "
                         f"use between {k + 1} and {MAX_BLOCKS} blocks")
    if comb(m, k) > MAX_TABLES:
        raise ValueError(f"--blocks {m} with k={k} makes {comb(m, k)} tables (> {MAX_TABLES}); use fewer blocks")
    base, extra = divmod(BITS, m)
    widths = [base + (1 if b < extra else 0) for b in range(m)]
    starts = np.r_[0, np.cumsum(widths)[:-1]].tolist()
    blocks = tuple(zip(starts, widths))
    tables = tuple(combinations(range(m), m - k))
    return TablePlan(k=k, blocks=blocks, tables=tables)
