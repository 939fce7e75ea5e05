"""A Bloom filter of one run's search keys, to pick the few history rows that can share a key with the run
before anything of the history is shuffled.

A run with --history must find the history fingerprints that share a table key or a band key with its own.
Matching every history row against the run's keys by a join costs a shuffle of the whole history when the
run's keys are too many to broadcast (a day of 10^6 pages has 10^7-2x10^7 table keys and 10^7 band keys).
A bitmap of 24 bits a key or more (3-6 MB per 10^6 keys) answers "may this key be one of the run's?" with no
false negatives and at most ~0.16% false positives; the few rows it lets through are then matched exactly,
so the result is the same as without the filter.

Keys are int64 (a table's key bits with the table index mixed in, a band key with the band mixed in); a
key's three bit positions come from one 64-bit mix of it (splitmix64's finaliser), h1 + i * h2 from its two
halves.
"""
from __future__ import annotations

import numpy as np

from .blocks import TablePlan

BITS_PER_KEY = 24  # three probes at 24 bits a key: (1 - e^(-1/8))^3 = 0.16% false positives (fewer when
PROBES = 3  # the power of two above leaves more bits)
MIN_LOG2_BITS = 15  # one 4096-byte chunk (spark/key_filter.py)
MAX_LOG2_BITS = 31  # 256 MB: past ~9e7 keys the false-positive share grows instead
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def log2_bits_for(n_keys: int) -> int:
    """log2 of the bitmap's size in bits for n_keys keys (a power of two, so positions are masks)."""
    want = max(1, int(n_keys)) * BITS_PER_KEY
    return int(min(MAX_LOG2_BITS, max(MIN_LOG2_BITS, (want - 1).bit_length())))


def mix64(keys: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over int64 or uint64 keys: every input bit moves about half the output bits."""
    z = keys.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z += _GOLDEN
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def _hash_halves(keys: np.ndarray, log2_bits: int) -> tuple[np.ndarray, np.ndarray, np.uint64]:
    """h1, h2 (odd) and the position mask of each key: probe i is at (h1 + i * h2) & mask."""
    h = mix64(keys)
    return h & np.uint64(0xFFFFFFFF), (h >> np.uint64(32)) | np.uint64(1), np.uint64((1 << log2_bits) - 1)


def _probe(h1: np.ndarray, h2: np.ndarray, i: int, mask: np.uint64) -> np.ndarray:
    with np.errstate(over="ignore"):
        return ((h1 + np.uint64(i) * h2) & mask).astype(np.int64)


def positions(keys: np.ndarray, log2_bits: int) -> list[np.ndarray]:
    """The PROBES bit positions (int64, in [0, 2^log2_bits)) of each key: h1 + i * h2 (Kirsch and
    Mitzenmacher) from the two 32-bit halves of its mix; h2 is odd, so the positions of a key differ."""
    h1, h2, mask = _hash_halves(keys, log2_bits)
    return [_probe(h1, h2, i, mask) for i in range(PROBES)]


def build_bitmap(keys: np.ndarray, log2_bits: int) -> np.ndarray:
    """The filter of these keys as packed bits (uint8, bit i of byte j is position 8j + i)."""
    bitmap = np.zeros(1 << (log2_bits - 3), dtype=np.uint8)
    set_bits(bitmap, keys, log2_bits)
    return bitmap


def set_bits(bitmap: np.ndarray, keys: np.ndarray, log2_bits: int) -> None:
    """Add these keys to the filter `bitmap` (in place)."""
    for p in positions(keys, log2_bits):
        np.bitwise_or.at(bitmap, p >> 3, np.left_shift(1, p & 7).astype(np.uint8))


def might_contain(bitmap: np.ndarray, keys: np.ndarray, log2_bits: int) -> np.ndarray:
    """True where a key may be in the filter (always for the keys it was built from). Each probe is tested
    only for the keys that passed the ones before (most keys of another set fail the first)."""
    h1, h2, mask = _hash_halves(keys, log2_bits)
    alive = np.arange(len(keys))
    for i in range(PROBES):
        p = _probe(h1, h2, i, mask)
        ok = ((bitmap[p >> 3] >> (p & 7).astype(np.uint8)) & 1).astype(bool)
        alive, h1, h2 = alive[ok], h1[ok], h2[ok]
    hit = np.zeros(len(keys), dtype=bool)
    hit[alive] = True
    return hit


def table_filter_keys(fingerprints: np.ndarray, plan: TablePlan) -> np.ndarray:
    """(n, tables) int64: the key of each fingerprint in each table, with the table index mixed in so that
    equal key bits of two tables are different filter keys. Only the filter uses these (both of its sides
    call this function), so they need not equal the packed keys of the Spark search."""
    fps = fingerprints.astype(np.int64, copy=False).view(np.uint64)
    out = np.empty((len(fps), len(plan.tables)), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for t, mask in enumerate(plan.table_masks()):
            out[:, t] = (fps & np.uint64(mask & 0xFFFFFFFFFFFFFFFF)) ^ (np.uint64(t + 1) * _GOLDEN)
    return out.view(np.int64)


def band_filter_keys(bands: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """int64 filter keys of (band, band key) rows: the band index mixed into the key (band keys are hashes,
    and equal hashes of two bands are different keys)."""
    with np.errstate(over="ignore"):
        mixed = keys.astype(np.int64, copy=False).view(np.uint64) ^ (
            (bands.astype(np.uint64) + np.uint64(1)) * _GOLDEN)
    return mixed.view(np.int64)
