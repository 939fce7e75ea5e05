"""Connected components of a small edge list in memory (pure numpy, no Spark).

The job finds components with large-star / small-star rounds in Spark (spark/components.py), and each
round costs several Spark jobs and a checkpoint whatever the graph's size. Most daily graphs are small
(forest edges, one per page that is a near copy), so up to a configured number of edges they are collected
and solved here instead: the same answer, each node's smallest component member as its root.
"""
from __future__ import annotations

import numpy as np

# The job's default for --driver-components-max-edges: 10^6 edges are ~16 MB collected and solved in ~1 s.
DRIVER_MAX_EDGES = 1_000_000


def smallest_roots(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, roots) for the graph of the edges src[i] - dst[i] (int64 node ids, self-loops allowed):
    every node that is not the smallest of its component, and that smallest node (signed order), sorted by
    node. Roots and isolated nodes are not listed, as in the Spark version.

    Min-label hooking with full path compression on indices of the sorted unique nodes: each round, every
    root that has an edge to a smaller root is hooked onto the smallest such root, so the number of roots
    falls every round until each edge has one root at both ends; the smallest node of a component is never
    hooked, so it is the root its component ends with."""
    nodes, inverse = np.unique(np.concatenate([np.asarray(src, np.int64), np.asarray(dst, np.int64)]),
                               return_inverse=True)
    u, v = inverse[: len(src)], inverse[len(src):]
    parent = np.arange(len(nodes))
    while True:
        pu, pv = parent[u], parent[v]
        apart = pu != pv
        if not apart.any():
            break
        pu, pv = pu[apart], pv[apart]
        low = np.minimum(pu, pv)
        np.minimum.at(parent, pu, low)
        np.minimum.at(parent, pv, low)
        while True:  # full compression: every node points at its root
            up = parent[parent]
            if np.array_equal(up, parent):
                break
            parent = up
    linked = parent != np.arange(len(nodes))
    return nodes[linked], nodes[parent[linked]]
