"""Chaining control: the `star` cluster mode (pure numpy, no Spark).

Transitive closure joins A and C through B even when A and C are far apart. In star mode a page is a
duplicate only of a kept page within k of it: inside each connected component, the best-ranked fingerprint
is a centre and takes every fingerprint within k of it; the best-ranked of the rest is the next centre, and so
on. Deterministic (the order is the keep policy's, ties by id) and every duplicate is within k of its kept page.
"""
from __future__ import annotations

import numpy as np


def star_centres(fps: np.ndarray, k: int) -> np.ndarray:
    """fps: the distinct fingerprints of one component, best-ranked first (int64 or uint64).
    Returns, for each, the index of its centre (a centre is its own)."""
    u = np.asarray(fps).view(np.uint64) if np.asarray(fps).dtype == np.int64 else np.asarray(fps, dtype=np.uint64)
    centre = np.full(len(u), -1, dtype=np.int64)
    open_ = np.arange(len(u))
    while len(open_):
        c = open_[0]
        near = np.bitwise_count(u[open_] ^ u[c]) <= k
        centre[open_[near]] = c
        open_ = open_[~near]
    return centre
