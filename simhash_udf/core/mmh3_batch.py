"""The features' hash (fingerprint.mmh3_64: the first 64 bits of MurmurHash3 x64-128, seed 0) of many byte
strings at once in numpy (pure numpy, no Spark).

A batch's features arrive as one UTF-8 buffer with their start and end offsets; each is hashed by whole-array
integer passes (one per 16-byte block, a tail and the finaliser) instead of one Python call and one Python int
per feature: the Python per-feature cost of the fingerprint pass was a dictionary look-up of every feature's
hash and the conversion of the hashes to numpy. The arithmetic is MurmurHash3's own, modulo 2^64, so every value
equals mmh3's (tests/test_mmh3_batch.py). Features of more than MAX_BLOCKS blocks (rare: a URL, a long run of
ASCII without spaces) are hashed one by one with mmh3.
"""
from __future__ import annotations

import mmh3
import numpy as np

_C1, _C2 = np.uint64(0x87C37B91114253D5), np.uint64(0x4CF5AD432745937F)
_F1, _F2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_N1, _N2 = np.uint64(0x52DCE729), np.uint64(0x38495AB5)
_FIVE = np.uint64(5)
MAX_BLOCKS = 8  # features of up to 8 x 16 bytes in numpy; longer ones by mmh3
PAD = 16  # bytes of zeros the buffer needs after its end (reads of a last tail look past it)
# LOW_BYTES[n]: the mask of the low n bytes of a 64-bit word
LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _fmix(k: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, in place (k is owned by the caller and returned): one temporary array a
    step, not two (allocating and first touching the temporaries of a batch's arrays is much of their cost)."""
    for multiplier in (_F1, _F2, None):
        k ^= k >> np.uint64(33)
        if multiplier is not None:
            k *= multiplier
    return k


def _mix_in_place(k: np.ndarray, first: np.uint64, r: int, second: np.uint64) -> np.ndarray:
    """k = rotl(k * first, r) * second, in place (k owned by the caller)."""
    k *= first
    high = k >> np.uint64(64 - r)
    k <<= np.uint64(r)
    k |= high
    k *= second
    return k


def words_at(buf: np.ndarray) -> np.ndarray:
    """The little-endian 64-bit word at every byte offset of buf but its last 7 (a strided view, no copy)."""
    return np.ndarray(shape=(len(buf) - 7,), dtype="<u8", buffer=buf.data, offset=0, strides=(1,))


def mmh3_64_batch(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, seed: int = 0,
                  max_blocks: int = MAX_BLOCKS) -> np.ndarray:
    """uint64: mmh3_64 of the bytes buf[starts[i]:ends[i]] for every i (with `seed`, a 32-bit seed of mmh3: the
    first 64 bits of MurmurHash3 x64-128). buf: uint8, with at least PAD zero bytes after the last end
    (padded_buffer makes one). Pieces of more than max_blocks 16-byte blocks are hashed one by one by mmh3."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(ends, dtype=np.int64) - starts
    n = len(starts)
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    words = words_at(buf)
    blocks = lengths >> 4
    long = blocks > max_blocks
    h1 = np.zeros(n, dtype=np.uint64)
    h2 = np.zeros(n, dtype=np.uint64)
    if seed:
        h1 += np.uint64(seed)
        h2 += np.uint64(seed)
    with np.errstate(over="ignore"):
        for j in range(int(min(blocks.max(), max_blocks))):
            at = np.flatnonzero((blocks > j) & ~long)
            pos = starts[at] + 16 * j
            k1, k2, a, b = words[pos], words[pos + 8], h1[at], h2[at]
            a ^= _rotl(k1 * _C1, 31) * _C2
            a = (_rotl(a, 27) + b) * _FIVE + _N1
            b ^= _rotl(k2 * _C2, 33) * _C1
            b = (_rotl(b, 31) + a) * _FIVE + _N2
            h1[at], h2[at] = a, b
        tail = starts + (blocks << 4)
        rest = lengths & 15
        k1 = words[tail]  # (a new array: indexing copies)
        k1 &= LOW_BYTES[np.minimum(rest, 8)]
        tail += 8
        k2 = words[tail]
        k2 &= LOW_BYTES[np.maximum(rest - 8, 0)]
        h2 ^= _mix_in_place(k2, _C2, 33, _C1)  # a zero word changes nothing: no test of the tail's length needed
        h1 ^= _mix_in_place(k1, _C1, 31, _C2)
        size = lengths.astype(np.uint64)
        h1 ^= size
        h2 ^= size
        h1 += h2
        h2 += h1
        np.add(_fmix(h1), _fmix(h2), out=out)
    for i in np.flatnonzero(long):
        out[i] = mmh3.hash64(buf[starts[i]:starts[i] + lengths[i]].tobytes(), seed=seed, x64arch=True, signed=False)[0]
    return out


def padded_buffer(data: bytes) -> np.ndarray:
    """data as a uint8 array followed by PAD zero bytes."""
    out = np.zeros(len(data) + PAD, dtype=np.uint8)
    out[:len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def hash_joined(joined: str, separator: int = 0x0A) -> np.ndarray:
    """mmh3_64 of each piece of `joined` between separators (a character no piece holds), in order: the pieces of
    one str, encoded once."""
    buf = padded_buffer(joined.encode("utf-8"))
    size = len(buf) - PAD
    cuts = np.flatnonzero(buf[:size] == separator)
    starts = np.r_[0, cuts + 1]
    ends = np.r_[cuts, size]
    return mmh3_64_batch(buf, starts, ends)
