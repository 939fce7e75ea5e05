"""Spark's xxhash64 in numpy, for many rows at once (pure numpy, no Spark).

The signature-band keys are Spark's `xxhash64(band, bytes)` values: the history's band index stores them, so
every run must compute the same ones. They are computed in numpy inside the Arrow function that packs the
band rows rather than as ten SQL expressions of substrings a row: the band search's map side is then cheaper,
in a warm JVM and more so in a new one, which must first compile the expressions' generated code.

Spark's XXH64 (org.apache.spark.sql.catalyst.expressions.XXH64, seed 42 for the first column, each column's
hash the seed of the next): an int is hashed as 4 bytes, a binary value as its bytes, little-endian words.
Only inputs shorter than 32 bytes are implemented (a band is at most 7 bytes); longer ones raise.
"""
from __future__ import annotations

import numpy as np

SPARK_SEED = 42
_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _fmix(h: np.ndarray) -> np.ndarray:
    h = (h ^ (h >> np.uint64(33))) * _P2
    h = (h ^ (h >> np.uint64(29))) * _P3
    return h ^ (h >> np.uint64(32))


def xxhash64_int(value: int, seed: int = SPARK_SEED) -> int:
    """Spark's xxhash64 of one int (a 32-bit integer column or literal) with this seed, as a signed long."""
    with np.errstate(over="ignore"):
        h = np.array([seed], np.int64).view(np.uint64) + _P5 + np.uint64(4)
        h ^= np.uint64(value & 0xFFFFFFFF) * _P1
        return int(_fmix(_rotl(h, 23) * _P2 + _P3).view(np.int64)[0])


def xxhash64_bytes(raw: np.ndarray, seed: int = SPARK_SEED) -> np.ndarray:
    """Spark's xxhash64 of each row of raw (rows x L uint8: one binary value of L < 32 bytes a row) with this
    seed, as signed longs."""
    n, length = raw.shape
    if length >= 32:
        raise ValueError(f"xxhash64_bytes takes values shorter than 32 bytes (got {length})")
    with np.errstate(over="ignore"):
        h = np.full(n, np.array(seed, np.int64).view(np.uint64), np.uint64) + (_P5 + np.uint64(length))
        at = 0
        while at + 8 <= length:
            word = np.ascontiguousarray(raw[:, at:at + 8]).view("<u8").ravel().astype(np.uint64)
            h ^= _rotl(word * _P2, 31) * _P1
            h = _rotl(h, 27) * _P1 + _P4
            at += 8
        if at + 4 <= length:
            word = np.ascontiguousarray(raw[:, at:at + 4]).view("<u4").ravel().astype(np.uint64)
            h ^= word * _P1
            h = _rotl(h, 23) * _P2 + _P3
            at += 4
        for i in range(at, length):
            h ^= raw[:, i].astype(np.uint64) * _P5
            h = _rotl(h, 11) * _P1
        return _fmix(h).view(np.int64)
