"""Connected components of an edge list in numpy: the components stage's way for a graph that fits the driver.

Large-star / small-star (spark/components.py) takes a few rounds of Spark joins, each checkpointed: at a few
hundred thousand edges those rounds cost seconds of planning and files each, for work that numpy does in
milliseconds. The answer is the same: each node that is not the smallest of its component, with that smallest
node (components are unique, so how they are found cannot change the output).
"""
from __future__ import annotations

import numpy as np


def component_roots(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(node, root, rounds) for the undirected edges (src[i], dst[i]) of int64 nodes: every node that is not the
    smallest of its component, ordered, with that smallest node, and the hooking rounds it took.

    Min-label hooking with pointer jumping (Shiloach-Vishkin without the unconditional hook): each node's label is
    a node of its component no larger than itself; a round hooks the label of each edge's end to the smaller label
    of the two ends, then lets every label point straight at its label's label until none moves. A round in
    which no label moves leaves every edge with one label at both ends: each component's smallest node."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    nodes, index = np.unique(np.concatenate([src, dst]), return_inverse=True)
    a, b = index[: len(src)], index[len(src):]
    label = np.arange(len(nodes))
    rounds = 0
    while True:
        rounds += 1
        la, lb = label[a], label[b]
        low = np.minimum(la, lb)
        hooked = label.copy()
        np.minimum.at(hooked, la, low)  # la, lb are labels, so their own label is themselves: roots are hooked
        np.minimum.at(hooked, lb, low)
        while True:
            jumped = hooked[hooked]
            if np.array_equal(jumped, hooked):
                break
            hooked = jumped
        if np.array_equal(hooked, label):
            break
        label = hooked
    moved = np.flatnonzero(label != np.arange(len(nodes)))
    return nodes[moved], nodes[label[moved]], rounds
