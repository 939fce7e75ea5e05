"""Verification signatures: one-permutation MinHash with densification, stored b bits a bin (pure numpy).

The 64-bit SimHash finds candidates; it cannot tell how similar two pages are (a pair within k bits can be
two copies or two unrelated pages that agree by chance, and a chain of near pairs can join pages that share
little). The signature estimates the Jaccard index of two pages' *feature sets* (the same distinct features
the fingerprint sums), so a candidate pair can be checked before it becomes an edge, and a page can be
checked against the page kept for it.

Definition (version "oph{bins}x{bits}", computed from the features' 64-bit hashes):
  g = mix(h xor SALT) for every distinct feature hash h of the page;
  bin(g) = the top log2(bins) bits of g, value(g) = the other bits;
  M[b] = min value(g) over the features in bin b;
  an empty bin b takes M of the nearest non-empty bin on b's side (right or left, fixed per b by a hash of
  b, the same for every page), going round the end of the row ("improved densification", Shrivastava and
  Li, UAI 2014);
  the signature is the low `bits` bits of each M[b], one unsigned integer per bin.
Two pages agree on a bin with probability J + (1 - J) / 2^bits, so
  estimated similarity = (agreeing bins / bins - 2^-bits) / (1 - 2^-bits), clipped to [0, 1]
(b-bit minwise hashing, Li and König 2010). With 128 bins of 8 bits (128 bytes a page) the standard error
is about 0.044 at J = 0.5 and 0.027 at J = 0.9.

Why this and not 192 more SimHash bits or 32-bit k-mins: compared in docs/quality.md and
docs/design.md ("Verification signature") on the man-page and generated corpora.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SALT = np.uint64(0x5BD1E9955BD1E995)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of uint64 that spreads every input bit over the output."""
    return _mix64_in_place(np.array(x, dtype=np.uint64))


def _mix64_in_place(x: np.ndarray) -> np.ndarray:
    """mix64 of a uint64 array the caller owns, in place (one temporary array a step)."""
    with np.errstate(over="ignore"):
        for shift, multiplier in ((30, _M1), (27, _M2), (31, None)):
            x ^= x >> np.uint64(shift)
            if multiplier is not None:
                x *= multiplier
    return x


@dataclass(frozen=True)
class SignatureSpec:
    bins: int = 128  # a power of two
    bits: int = 8  # 8 or 16 bits a bin

    def check(self) -> None:
        if self.bins < 2 or self.bins & (self.bins - 1) or self.bins > 1024:
            raise ValueError(f"signature bins must be a power of two from 2 to 1024 (got {self.bins})")
        if self.bits not in (8, 16):
            raise ValueError(f"signature bits must be 8 or 16 (got {self.bits})")

    @property
    def dtype(self):
        return np.dtype("<u1") if self.bits == 8 else np.dtype("<u2")

    @property
    def nbytes(self) -> int:
        return self.bins * self.bits // 8

    def version(self) -> str:
        return f"oph{self.bins}x{self.bits}"


def directions(bins: int) -> np.ndarray:
    """The fixed side (True: the right) from which each empty bin borrows, the same for every page."""
    return (mix64(np.arange(bins, dtype=np.uint64) + np.uint64(0x632BE59BD9B4E019)) >> np.uint64(63)).astype(bool)


def densify(mins: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Each empty bin of a valid page takes the value of the nearest non-empty bin on its fixed side,
    going round the end of the row (Shrivastava and Li, UAI 2014). mins: (pages x bins)."""
    return densify_by_bin(np.ascontiguousarray(mins.T), valid).T


def densify_by_bin(by_bin: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """densify of the (bins x pages) transpose of the minimums, in place; the rows of invalid pages made empty.

    Two scans over the bins, each a vector step over all pages a bin: from the last bin to the first, twice
    round (going round the end is going on), carrying each page's value of the last non-empty bin seen (the
    right-hand bins take it), and the same from the first bin to the last (the left-hand bins). A few hundred
    numpy calls a batch whatever its size; a search of each empty bin among the non-empty ones cost several
    times as much on a batch of short pages, whose bins are mostly empty."""
    bins, n = by_bin.shape
    full = by_bin != _EMPTY
    if n and not full[:, valid].all():
        values = by_bin.copy()
        right = directions(bins).tolist()
        carry = np.full(n, _EMPTY, dtype=np.uint64)
        for j in range(2 * bins - 1, -1, -1):
            b = j % bins
            np.copyto(carry, values[b], where=full[b])
            if j < bins and right[b]:
                by_bin[b] = carry
        for j in range(2 * bins):
            b = j % bins
            np.copyto(carry, values[b], where=full[b])
            if j >= bins and not right[b]:
                by_bin[b] = carry
    by_bin[:, ~valid] = _EMPTY
    return by_bin


def oph_signatures(hashes: np.ndarray, offsets: np.ndarray,
                   spec: SignatureSpec = SignatureSpec()) -> tuple[np.ndarray, np.ndarray]:
    """Signatures of many pages at once: (signatures (pages x bins) of spec.dtype, valid mask).

    hashes: uint64 feature hashes of all pages one after another (repeats allowed: a minimum ignores them);
    offsets: int64, page d owns hashes[offsets[d]:offsets[d+1]]. A page without features is not valid (its
    row is zeros)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    page = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    valid = lengths > 0
    return page_signatures(hashes, page, valid, spec), valid


def page_signatures(hashes: np.ndarray, page: np.ndarray, valid: np.ndarray,
                    spec: SignatureSpec = SignatureSpec()) -> np.ndarray:
    """oph_signatures' signatures of features in any order: page[i] is the page of hashes[i]; valid: bool per
    page, whether it has a feature. The minimums are kept bin by bin (bins x pages), as densify_by_bin scans them."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    n, bins = len(valid), spec.bins
    shift = np.uint64(64 - (bins.bit_length() - 1))
    g = _mix64_in_place(hashes ^ SALT)
    mins = np.full(bins * n, _EMPTY, dtype=np.uint64)
    cell = (g >> shift).view(np.int64)  # bin b of page p: cell b * n + p (made in place)
    cell *= n
    cell += page
    g &= (np.uint64(1) << shift) - np.uint64(1)
    np.minimum.at(mins, cell, g)
    by_bin = densify_by_bin(mins.reshape(bins, n), valid)
    out = np.ascontiguousarray((by_bin & np.uint64((1 << spec.bits) - 1)).astype(spec.dtype).T)
    out[~valid] = 0
    return out


def similarity(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    """Estimated Jaccard index of the feature sets behind signatures a and b ((n x bins) each, or one row)."""
    agree = (np.asarray(a) == np.asarray(b)).mean(axis=-1)
    chance = 2.0**-bits
    return np.clip((agree - chance) / (1 - chance), 0.0, 1.0)


def agreement_similarity(agree: np.ndarray, spec: SignatureSpec) -> np.ndarray:
    """similarity of pairs whose agreeing bins (agreeing_bins) are known: the same values."""
    chance = 2.0**-spec.bits
    return np.clip((np.asarray(agree) / spec.bins - chance) / (1 - chance), 0.0, 1.0)


def min_agreeing_bins(min_similarity: float, spec: SignatureSpec) -> int:
    """The number of agreeing bins at which the estimated similarity reaches min_similarity: the check is an
    integer comparison, so no rounding decides a pair."""
    if min_similarity <= 0:
        return 0
    chance = 2.0**-spec.bits
    need = (min_similarity * (1 - chance) + chance) * spec.bins
    return int(np.ceil(need - 1e-9))


def agreeing_bins(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (np.asarray(a) == np.asarray(b)).sum(axis=-1)


def to_arrow(signatures: np.ndarray, valid: np.ndarray) -> pa.Array:
    """(pages x bins) signatures as an Arrow binary array (null where not valid), without a Python object per page."""
    n = len(signatures)
    width = signatures.shape[1] * signatures.dtype.itemsize if signatures.ndim == 2 else 0
    data = pa.py_buffer(np.ascontiguousarray(signatures).tobytes())
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * width).tobytes())
    mask = pa.array(~np.asarray(valid, dtype=bool))
    arr = pa.Array.from_buffers(pa.binary(), n, [None, offsets, data])
    return pc.if_else(mask, pa.scalar(None, pa.binary()), arr) if (~valid).any() else arr


def from_arrow(arr: pa.Array, spec: SignatureSpec) -> np.ndarray:
    """A binary Arrow array of signatures (no nulls) as a (rows x bins) matrix of spec.dtype."""
    arr = arr.cast(pa.binary()) if arr.type != pa.binary() else arr
    if arr.null_count:
        raise ValueError("signature column has nulls")
    n = len(arr)
    if not n:
        return np.zeros((0, spec.bins), dtype=spec.dtype)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)
    if (np.diff(offsets) != spec.nbytes).any():
        raise ValueError(f"signatures must be {spec.nbytes} bytes ({spec.version()})")
    flat = data[offsets[0] : offsets[-1]]
    return flat.view(spec.dtype).reshape(n, spec.bins)
