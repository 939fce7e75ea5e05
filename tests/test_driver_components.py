"""Connected components in numpy (core.components, the components stage's way for a graph that fits the driver)
against union-find; no Spark."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import roots_of as roots_by_union_find

from simhash_udf.core.components import component_roots

INT64 = st.integers(-(2**63), 2**63 - 1)


def found_roots(edges):
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    node, root, rounds = component_roots(src, dst)
    assert list(node) == sorted(node) and len(set(node.tolist())) == len(node)  # each node once, in order
    return dict(zip(node.tolist(), root.tolist())), rounds


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-40, 40), st.integers(-40, 40)), max_size=120))
def test_small_ids_match_union_find(edges):
    assert found_roots(edges)[0] == roots_by_union_find(edges)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(INT64, INT64), max_size=60), st.data())
def test_any_int64_ids_match_union_find(edges, data):
    # fingerprints span the whole signed range; join some of the edges' ends so that components grow
    if edges:
        extra = data.draw(st.lists(st.tuples(st.sampled_from([n for e in edges for n in e]),
                                             st.sampled_from([n for e in edges for n in e])), max_size=40))
        edges = edges + extra
    assert found_roots(edges)[0] == roots_by_union_find(edges)


def test_no_edges():
    node, root, _ = component_roots(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    assert len(node) == len(root) == 0


@pytest.mark.parametrize("shape", ["path", "star", "many_small", "comb"])
def test_bad_shapes_converge_in_few_rounds(shape):
    n = 200_000
    labels = np.random.default_rng(3).permutation(n).astype(np.int64) * 7 - 10_000
    i = np.arange(n - 1)
    if shape == "path":
        src, dst = labels[:-1], labels[1:]
    elif shape == "star":
        src, dst = np.full(n - 1, labels[0]), labels[1:]
    elif shape == "many_small":
        keep = i % 5 != 4
        src, dst = labels[:-1][keep], labels[1:][keep]
    else:  # a path in id order with a tooth of larger ids on every node
        order = np.sort(labels)
        src, dst = np.r_[order[: n // 2 - 1], order[: n // 2]], np.r_[order[1: n // 2], order[n // 2:]]
    got, rounds = found_roots(list(zip(src.tolist(), dst.tolist())))
    assert got == roots_by_union_find(zip(src.tolist(), dst.tolist()))
    assert rounds <= 2 * int(np.ceil(np.log2(n)))
