"""Character n-gram shingle sets and their Jaccard index (pure numpy).

One definition serves two users: the job's short-text mode verifies candidate pairs with it, and the
evaluation oracle (quality.py) measures copies with it. Shingles are the character n-grams of the job's
normalize_text (NFKC, lower case, digits to 0, Chinese punctuation as ASCII, white space folded); a non-empty
text shorter than n is one shingle; each shingle is hashed to 64 bits (a collision among a page's few thousand
shingles has odds of about 1e-13)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .text import normalize_text, normalized_codes

SHINGLE = 5

_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                  0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9], dtype=np.uint64)


def _mix(x: np.ndarray) -> np.ndarray:
    """The mixer of the n-gram hashes (_mix_in_place) on a copy of x."""
    out = np.array(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        _mix_in_place(out, np.empty_like(out))
    return out


def shingle_set(text: str | None, n: int = SHINGLE) -> np.ndarray:
    """Sorted unique uint64 hashes of the character n-grams of normalize_text(text)."""
    normal = normalize_text(text or "")
    if not normal:
        return np.zeros(0, np.uint64)
    codes = np.frombuffer(normal.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if len(codes) < n:
        codes = np.r_[codes, np.zeros(n - len(codes), np.uint64)]  # the whole text is one shingle
    m = len(codes) - n + 1
    return np.unique(_gram_hashes(np.full(m, len(normal) < n, dtype=np.uint64), lambda j: codes[j : j + m], n))


def _gram_hashes(whole: np.ndarray, chars_at: Callable[[int], np.ndarray], n: int) -> np.ndarray:
    """The hash of each n-gram: whole (uint64) 1 where the n-gram is a whole text shorter than n, 0 elsewhere;
    chars_at(j) the code points at offset j of every n-gram (a view of the code points). Made in place, with one
    scratch array: no new array the size of the n-grams a step."""
    h = whole.copy()
    scratch = np.empty_like(h)
    with np.errstate(over="ignore"):
        for j in range(n):
            np.multiply(chars_at(j), _MULT[j % len(_MULT)], out=scratch)
            h += scratch
            _mix_in_place(h, scratch)
    return h


def _mix_in_place(x: np.ndarray, scratch: np.ndarray) -> None:
    """x = _mix(x), in place (scratch: an array of x's shape and type, overwritten)."""
    np.right_shift(x, np.uint64(31), out=scratch)
    x ^= scratch
    x *= np.uint64(0xBF58476D1CE4E5B9)
    np.right_shift(x, np.uint64(29), out=scratch)
    x ^= scratch


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) == 0 or len(b) == 0:
        return 0.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)


# shingle_sets shingles its texts in groups of about this many characters: each group's arrays stay in the CPU's
# caches and its memory is reused, where one pass over all texts at once (the text checks' tens of MB) made every
# numpy step a new array of hundreds of MB.
GROUP_CHARS = 1 << 18


def shingle_sets(texts: list[str | None], n: int = SHINGLE, group_chars: int = GROUP_CHARS) -> tuple[np.ndarray, np.ndarray]:
    """(owner, hashes): shingle_set(t, n) of every text, computed in groups and concatenated in text order,
    `owner` the text's index of each hash. The same hashes as text by text: one normalisation of a group's joined
    texts (about group_chars characters, consecutive texts; a longer text alone) and one pass of numpy over all
    their n-grams (text by text, a short text's ~40 numpy calls cost more than its n-grams)."""
    sizes = np.fromiter((len(t or "") for t in texts), dtype=np.int64, count=len(texts))
    owners, hashes = [np.zeros(0, np.int64)], [np.zeros(0, np.uint64)]
    for start, end in _groups(sizes, group_chars):
        owner, h = _group_shingle_sets(texts[start:end], n)
        owners.append(owner + start)
        hashes.append(h)
    return np.concatenate(owners), np.concatenate(hashes)


def _groups(sizes: np.ndarray, group: int) -> list[tuple[int, int]]:
    """(start, end) of consecutive non-empty groups of the items, in order, each group's sizes summing to about
    `group` (an item larger than that alone)."""
    cut = np.arange(1, int(sizes.sum()) // group + 1) * group
    ends = np.unique(np.r_[np.searchsorted(np.cumsum(sizes), cut, side="right"), len(sizes)])
    return [(start, end) for start, end in zip(np.r_[0, ends[:-1]].tolist(), ends.tolist()) if end > start]


def _group_shingle_sets(texts: list[str | None], n: int) -> tuple[np.ndarray, np.ndarray]:
    """shingle_sets of one group of texts. The n-grams are hashed at every position of the texts laid out one after
    another (each padded to n), each step a view of the code points, and the n-grams that start in their text kept."""
    chars, lengths = normalized_codes([t or "" for t in texts])
    padded = np.where(lengths == 0, 0, np.maximum(lengths, n))  # a text shorter than n is one shingle
    starts = np.cumsum(padded) - padded
    size = int(padded.sum())
    codes = np.zeros(size + n, np.uint64)
    first_char = np.cumsum(lengths) - lengths
    codes[np.repeat(starts - first_char, lengths) + np.arange(len(chars))] = chars
    whole = np.repeat((lengths < n).astype(np.uint64), padded)
    h = _gram_hashes(whole, lambda j: codes[j:j + size], n)
    grams = np.where(padded > 0, padded - n + 1, 0)
    owner = np.repeat(np.arange(len(texts)), grams)
    h = h[np.repeat(starts - (np.cumsum(grams) - grams), grams) + np.arange(int(grams.sum()))]
    order = _order_by(owner, h)
    owner, h = owner[order], h[order]
    first = np.ones(len(h), dtype=bool)
    first[1:] = (owner[1:] != owner[:-1]) | (h[1:] != h[:-1])
    return owner[first], h[first]


def pair_jaccards(texts_a: list[str | None], texts_b: list[str | None], n: int = SHINGLE) -> np.ndarray:
    """[jaccard(shingle_set(a, n), shingle_set(b, n)) for each pair (a_i, b_i)], as one batch (ShingleSets.jaccard)."""
    sets, a, b = _indexed_pairs(texts_a, texts_b, n)
    return sets.jaccard(a, b)


def pair_overlaps(texts_a: list[str | None], texts_b: list[str | None],
                  n: int = SHINGLE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shared, size_a, size_b) of each pair (a_i, b_i): the shingles the two sets share and their sizes, as
    one batch. Each distinct text is shingled once (a kept page is one side of many pairs: the text checks compare
    it with each page joined to it, and its normalisation and hashing are most of the work), and each pair's
    smaller set is looked up in the larger one (ShingleSets.shared)."""
    sets, a, b = _indexed_pairs(texts_a, texts_b, n)
    return sets.shared(a, b), sets.counts[a], sets.counts[b]


def _indexed_pairs(texts_a: list[str | None], texts_b: list[str | None],
                   n: int) -> tuple[ShingleSets, np.ndarray, np.ndarray]:
    """The distinct texts' ShingleSets, and each pair's two texts as indices into it."""
    k = len(texts_a)
    if len(texts_b) != k:
        raise ValueError(f"pair_overlaps: {k} texts on one side and {len(texts_b)} on the other")
    index: dict = {}
    which = np.fromiter((index.setdefault(t or "", len(index)) for t in list(texts_a) + list(texts_b)),
                        dtype=np.int64, count=2 * k)
    return ShingleSets(*shingle_sets(list(index), n), len(index)), which[:k], which[k:]


class ShingleSets:
    """Texts' distinct shingle hashes (owner, hashes: shingle_sets, ordered by text and then hash; texts: their
    number), indexed once to count the hashes any two of them share (shared) or their Jaccard index (jaccard).

    The smaller set's hashes are looked up in the larger's with one binary search of all of them over a key that
    orders the whole array, the text in its high bits and the hash's top bits below (the hash itself confirms a
    match): no sort, and a set is never copied once for each pair it is in. Two hashes of one text that share the
    key's bits (never seen) leave the texts without a key: then both sides' hashes are sorted per pair
    (shared_shingles_by_sort)."""

    def __init__(self, owner: np.ndarray, hashes: np.ndarray, texts: int):
        self.owner, self.hashes = owner, hashes
        self.counts = np.bincount(owner, minlength=texts)
        self.starts = np.cumsum(self.counts) - self.counts
        self.bits = max(texts - 1, 1).bit_length()
        self.key = None
        if len(hashes) and self.bits < 32:
            key = (owner.astype(np.uint64) << np.uint64(64 - self.bits)) | (hashes >> np.uint64(self.bits))
            self.key = None if (key[1:] == key[:-1]).any() else key

    def shared(self, a: np.ndarray, b: np.ndarray, group: int = GROUP_CHARS) -> np.ndarray:
        """The hashes texts a[i] and b[i] share, for each i (the pairs taken in groups of about `group` hashes looked
        up, as shingle_sets groups its texts)."""
        counts = self.counts
        if len(self.hashes) == 0 or len(a) == 0:
            return np.zeros(len(a), dtype=np.int64)
        if self.key is None:
            return shared_shingles_by_sort(a, b, self.owner, self.hashes, counts)
        smaller = counts[a] <= counts[b]
        query, target = np.where(smaller, a, b), np.where(smaller, b, a)
        return np.concatenate([np.zeros(0, np.int64)] + [
            self._shared_of(query[lo:hi], target[lo:hi]) for lo, hi in _groups(counts[query], group)])

    def _shared_of(self, query: np.ndarray, target: np.ndarray) -> np.ndarray:
        """shared of the pairs (query[i], target[i]): query's hashes binary-searched among target's."""
        sizes = self.counts[query]
        pair = np.repeat(np.arange(len(query)), sizes)
        at = np.repeat(self.starts[query] - (np.cumsum(sizes) - sizes), sizes) + np.arange(len(pair))
        wanted = self.hashes[at]
        where = (target[pair].astype(np.uint64) << np.uint64(64 - self.bits)) | (wanted >> np.uint64(self.bits))
        pos = np.minimum(np.searchsorted(self.key, where), len(self.key) - 1)
        found = (self.hashes[pos] == wanted) & (self.owner[pos] == target[pair])
        return np.bincount(pair[found], minlength=len(query))

    def jaccard(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """[jaccard(set of a[i], set of b[i])], the same floats (0.0 when either set is empty)."""
        shared = self.shared(a, b)
        size_a, size_b = self.counts[a], self.counts[b]
        union = np.maximum(size_a + size_b - shared, 1)
        return np.where((size_a == 0) | (size_b == 0), 0.0, shared / union)


def shared_shingles_by_sort(a: np.ndarray, b: np.ndarray, owner: np.ndarray, hashes: np.ndarray,
                            counts: np.ndarray) -> np.ndarray:
    """ShingleSets.shared by one sort of both sides' hashes tagged by their pair: a hash a pair holds twice is in both
    sets."""
    k = len(a)
    starts = np.cumsum(counts) - counts
    sides = np.r_[a, b]
    sizes = counts[sides]
    ends = np.cumsum(sizes)
    at = np.repeat(starts[sides] - (ends - sizes), sizes) + np.arange(int(ends[-1]) if len(ends) else 0)
    pair = np.repeat(np.arange(2 * k), sizes) % max(k, 1)
    h = hashes[at]
    order = _order_by(pair, h)
    pair, h = pair[order], h[order]
    both = (pair[1:] == pair[:-1]) & (h[1:] == h[:-1])
    return np.bincount(pair[1:][both], minlength=k)


def _order_by(group: np.ndarray, h: np.ndarray) -> np.ndarray:
    """An order of the rows by (group, h), group small non-negative ints: one argsort of the group in the high bits
    and h's top bits below it (np.lexsort of the two keys takes ~8x longer); when two rows share that key but not
    h (a pair of a group's hashes equal in their top bits), np.lexsort."""
    if len(h) == 0:
        return np.zeros(0, dtype=np.int64)
    bits = max(int(group.max()).bit_length(), 1)
    if bits < 32:
        key = (group.astype(np.uint64) << np.uint64(64 - bits)) | (h >> np.uint64(bits))
        order = np.argsort(key)
        ranked = key[order]
        tied = ranked[1:] == ranked[:-1]
        if not (tied & (h[order][1:] != h[order][:-1])).any():
            return order
    return np.lexsort((h, group))
