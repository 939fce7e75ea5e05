"""Character n-gram shingle sets and their Jaccard index (pure numpy).

One definition serves two users: the job's short-text mode verifies candidate pairs with it, and the
evaluation oracle (quality.py) measures copies with it. Shingles are the character n-grams of the job's
normalize_text (NFKC, lower case, digits to 0, Chinese punctuation as ASCII, white space folded); a non-empty
text shorter than n is one shingle; each shingle is hashed to 64 bits (a collision among a page's few thousand
shingles has odds of about 1e-13)."""
from __future__ import annotations

import numpy as np

from .text import normalize_text

SHINGLE = 5

_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                  0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9], dtype=np.uint64)


def _mix(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint64(31))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    return x ^ (x >> np.uint64(29))


def shingle_set(text: str | None, n: int = SHINGLE) -> np.ndarray:
    """Sorted unique uint64 hashes of the character n-grams of normalize_text(text)."""
    normal = normalize_text(text or "")
    if not normal:
        return np.zeros(0, np.uint64)
    codes = np.frombuffer(normal.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if len(codes) < n:
        codes = np.r_[codes, np.zeros(n - len(codes), np.uint64)]  # the whole text is one shingle
    m = len(codes) - n + 1
    with np.errstate(over="ignore"):
        h = np.full(m, len(normal) < n, dtype=np.uint64)
        for j in range(n):
            h = _mix(h + codes[j : j + m] * _MULT[j % len(_MULT)])
    return np.unique(h)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) == 0 or len(b) == 0:
        return 0.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)
