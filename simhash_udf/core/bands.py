"""Signature bands: a second, OR-amplified candidate source beside the SimHash tables (pure numpy, no Spark).

The signature (signature.py) is split into `bands` runs of `bins` consecutive bins; two pages are band
candidates when their signatures are equal on every bin of at least one band (MinHash LSH, Indyk and Motwani
1998; Broder 1997). Each bin agrees with probability about J (the Jaccard index of the two pages' feature
sets), so a pair is a candidate with probability 1 - (1 - J^bins)^bands: with the default 10 bands of 5 bins,
0.98 at J = 0.8, 0.84 at J = 0.7, 0.28 at J = 0.5, 0.025 at J = 0.3. Unrelated pages (J near 0) share a band
key with probability about bands x 2^-(8 x bins) (9e-12 for 10 x 5 bins of 8 bits), so chance comparisons stay
small at any scale. A SimHash pair only finds copies within k bits; a page with a few edited words is often
10-20 bits from its original but still shares most of its features, and then a band.

The search is exact for its own definition: every pair of distinct fingerprints whose signatures share a
band key is compared, and a pair is *accepted* in the first band it shares, unless it is within k bits
(then the SimHash tables accept it), so each candidate pair is counted once. Every accepted pair is then
verified like a SimHash pair (verified.py).

Bands of a sparse page are left out. A page with fewer distinct features than bins has empty bins, filled by
densification from a neighbour (signature.py), so its signature has runs of equal bins: a band that is one
run carries 8 bits, not 40, and its key is shared by ~1/256 of all such pages (a day of 1M pages of 60 random
words compared 8.3e8 chance band pairs). A band is *usable* only with at least MIN_RUNS runs of equal
adjacent bins (all its bins when it has fewer): >= 32 bits, so chance groups stay small; a band of
independent random bins fails this with probability about 6 x 2^-16. Only usable bands make keys, and a pair
is accepted in the first usable band it shares.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .candidates import SMALL_GROUP, _small_group_pairs, key_groups
from .signature import SignatureSpec
from .xxhash64 import xxhash64_bytes, xxhash64_int

MAX_KEY_BITS = 56  # a band's value and the band index packed in one long
MIN_RUNS = 4  # runs of equal adjacent bins a band needs to make a key (8 bits each)
# band groups of up to this many members go on to verification as their far pairs (two fingerprints), larger
# ones as their members with signatures (see band_pairs_and_members)
PAIR_GROUP = 8


@dataclass(frozen=True)
class SignatureBands:
    bands: int = 10  # 0: no band search
    bins: int = 5  # bins per band
    signature: SignatureSpec = SignatureSpec()

    @property
    def key_bits(self) -> int:
        return self.bins * self.signature.bits

    @property
    def band_bytes(self) -> int:
        return self.key_bits // 8

    def check(self) -> None:
        if self.bands < 0 or self.bins < 1:
            raise ValueError(f"signature bands need bands >= 0 and bins >= 1 (got {self.bands} x {self.bins})")
        if self.bands * self.bins > self.signature.bins:
            raise ValueError(f"{self.bands} bands of {self.bins} bins need {self.bands * self.bins} signature bins; "
                             f"the signature has {self.signature.bins}: use fewer bands or fewer bins a band")
        if self.key_bits > MAX_KEY_BITS or (self.bands - 1).bit_length() + self.key_bits > 63:
            raise ValueError(f"a band of {self.bins} bins is {self.key_bits} bits; at most {MAX_KEY_BITS} bits "
                             "(with the band index) fit in a key: use fewer bins a band")

    @property
    def min_runs(self) -> int:
        return min(MIN_RUNS, self.bins)

    def usable(self, sigs: np.ndarray) -> np.ndarray:
        """(pages x bands) bool: the band has at least min_runs runs of equal adjacent bins (see above).
        sigs: (pages x bins) of the signature's dtype."""
        m = np.asarray(sigs)[:, : self.bands * self.bins].reshape(len(sigs), self.bands, self.bins)
        # the changes between adjacent bins counted one bin at a time into a small integer (a band has fewer
        # than 2^16 bins), not summed over a boolean array of them all: the band search's map side calls this
        # for every page, and the small integers cost far less than the array's temporaries
        changes = np.zeros((len(m), self.bands), dtype=np.uint16)
        for i in range(self.bins - 1):
            changes += m[:, :, i + 1] != m[:, :, i]
        return 1 + changes >= self.min_runs

    def describe(self) -> dict:
        return {"bands": self.bands, "bins_per_band": self.bins, "key_bits": self.key_bits,
                "min_runs": self.min_runs}

    def keys(self, sigs: np.ndarray) -> np.ndarray:
        """(pages x bands) int64 keys: the band index above the band's bytes read as one big-endian number.
        sigs: (pages x bins) of the signature's dtype."""
        raw = np.ascontiguousarray(sigs).view(np.uint8).reshape(len(sigs), -1)
        out = np.empty((len(sigs), self.bands), dtype=np.int64)
        nb = self.band_bytes
        weights = np.array([1 << (8 * (nb - 1 - i)) for i in range(nb)], dtype=np.uint64)
        for b in range(self.bands):
            part = raw[:, b * nb:(b + 1) * nb].astype(np.uint64)
            out[:, b] = ((part * weights).sum(axis=1, dtype=np.uint64) | np.uint64(b << self.key_bits)).view(np.int64)
        return out

    def hashed_keys(self, sigs: np.ndarray) -> np.ndarray:
        """(pages x bands) int64 band keys as the search and the history's band index use them: Spark's
        xxhash64(band index, the band's bytes of the signature), for every band (`usable` says which make
        keys). sigs: (pages x bins) of the signature's dtype. A hash rather than `keys` because the history's
        band indexes hold these values; two bands that collide on the hash only put a pair in one group, where
        verify_band_groups accepts it only if the signatures really share that band."""
        raw = np.ascontiguousarray(sigs).view(np.uint8).reshape(len(sigs), -1)
        nb = self.band_bytes
        out = np.empty((len(sigs), self.bands), dtype=np.int64)
        for b in range(self.bands):
            out[:, b] = xxhash64_bytes(raw[:, b * nb:(b + 1) * nb], xxhash64_int(b))
        return out

    def first_shared(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """For row pairs of two signature matrices, the first usable band on which they are equal (-1: none)."""
        if not len(a):
            return np.zeros(0, dtype=np.int64)
        eq = (a[:, : self.bands * self.bins] == b[:, : self.bands * self.bins]).reshape(len(a), self.bands, self.bins)
        shared = eq.all(axis=2) & self.usable(a)  # equal bands are usable in both or in neither
        return np.where(shared.any(axis=1), shared.argmax(axis=1), -1)

    def expected_chance_comparisons(self, n: int) -> float:
        """Band comparisons among n pages with independent signatures (J = 0): each pair shares a band's key
        with probability about bands x 2^-key_bits."""
        return n * (n - 1) / 2 * self.bands * 2.0 ** -self.key_bits

    def candidate_probability(self, j: float) -> float:
        """Probability that two pages of feature Jaccard j share at least one band (bins independent)."""
        p = j + (1 - j) * 2.0 ** -self.signature.bits
        return 1 - (1 - p ** self.bins) ** self.bands


class FarFilter:
    """The band search's pair test on fingerprints alone: more than k bits apart (pairs within k are the
    SimHash tables' own). Same interface as candidates.PairFilter."""

    def __init__(self, k: int):
        self.k = k

    def accept(self, x: np.ndarray, table=None) -> np.ndarray:
        return np.bitwise_count(x) > self.k


def band_members(members: np.ndarray, offsets: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """The first pass over band key groups (fingerprints only, no signatures): which members have a pair in
    their group more than k bits apart (only those can be band-accepted; they go on, with their group, to
    be verified), and the pairs compared. band_pairs_and_members with no group passed on as pairs."""
    involved, compared, *_ = band_pairs_and_members(members, offsets, k, pair_group=1)
    return involved, compared


def band_pairs_and_members(members: np.ndarray, offsets: np.ndarray, k: int, pair_group: int = PAIR_GROUP,
                           rows_per_chunk: int = 512):
    """The first pass over band key groups, split by group size. A pair of copies shares several bands (all
    ten, for an exact copy of the signature), so it is met in as many groups; only its first shared band
    counts it. Groups of at most pair_group members go on as their far pairs (more than k bits apart), which
    the caller makes distinct before fetching two signatures a pair; larger groups go on as their members
    with a far pair, verified group by group (verify_band_groups).

    Returns (involved, compared, lo, hi, group): which members of the larger groups have a far pair in their
    group; the pairs compared in all groups; lo < hi the two fingerprints (int64) of each far pair of a group
    of at most pair_group members, group its group's index."""
    u, _, starts, sizes = key_groups(members, offsets, np.zeros(len(offsets) - 1, dtype=np.int64))
    filt = FarFilter(k)
    small = np.flatnonzero((sizes >= 2) & (sizes <= SMALL_GROUP))
    i, j = _small_group_pairs(u, starts[small], sizes[small], np.zeros(len(small), dtype=np.int64), filt)
    group = np.searchsorted(starts, i, side="right") - 1
    as_pairs = sizes[group] <= pair_group
    involved = np.zeros(len(u), dtype=bool)
    involved[i[~as_pairs]] = involved[j[~as_pairs]] = True
    for g in np.flatnonzero(sizes > SMALL_GROUP):
        s, n = int(starts[g]), int(sizes[g])
        fps = u[s:s + n]
        for a in range(0, n, rows_per_chunk):
            b = min(a + rows_per_chunk, n)
            far = filt.accept(fps[a:b, None] ^ fps[None, :])
            involved[s + a:s + b] |= far.any(axis=1)
            involved[s:s + n] |= far.any(axis=0)
    a, b = u[i[as_pairs]].view(np.int64), u[j[as_pairs]].view(np.int64)
    return involved, int((sizes * (sizes - 1) // 2).sum()), np.minimum(a, b), np.maximum(a, b), group[as_pairs]
